"""Tool and prompt arguments from the command line: ``key=value`` words or one JSON object."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from trimcp.cli.errors import UsageError


def parse_value(text: str) -> Any:
    """``text`` as JSON when it parses (``3``, ``true``, ``[1, 2]``, ``"quoted"``), else the
    string itself, so ``city=Paris`` needs no quotes and ``days=3`` is a number."""
    try:
        return json.loads(text)
    except ValueError:
        return text


def parse_pairs(words: Sequence[str], *, raw: bool = False) -> dict[str, Any]:
    """``["a=1", "b=x"]`` -> ``{"a": 1, "b": "x"}``; ``raw`` keeps every value a string
    (prompt arguments are strings on the wire). A repeated key keeps the last value."""
    arguments: dict[str, Any] = {}
    for word in words:
        key, sep, value = word.partition("=")
        if not sep or not key:
            raise UsageError(
                f"expected key=value, got {word!r}",
                hint="pass arguments as key=value (values are JSON when they parse)",
            )
        arguments[key] = value if raw else parse_value(value)
    return arguments


def parse_json_object(text: str, *, option: str) -> dict[str, Any]:
    """One JSON object given to ``option``; anything else is a usage error."""
    try:
        value = json.loads(text)
    except ValueError as exc:
        raise UsageError(f"{option} needs a JSON object: {exc}") from None
    if not isinstance(value, dict):
        raise UsageError(f"{option} needs a JSON object, got {type(value).__name__}")
    return value


def merge_arguments(
    words: Sequence[str], json_text: str | None, *, option: str = "--args", raw: bool = False
) -> dict[str, Any]:
    """The arguments of one call: the JSON object (if any), then ``key=value`` words on top.

    A single word that starts with ``{`` is read as the JSON object too."""
    arguments: dict[str, Any] = {}
    rest = list(words)
    if json_text is not None:
        arguments.update(parse_json_object(json_text, option=option))
    if rest and rest[0].lstrip().startswith("{"):
        arguments.update(parse_json_object(rest.pop(0), option="the JSON argument"))
    arguments.update(parse_pairs(rest, raw=raw))
    if raw:
        bad = [key for key, value in arguments.items() if not isinstance(value, str)]
        if bad:
            raise UsageError(f"prompt arguments are strings; {', '.join(bad)} is not")
    return arguments
