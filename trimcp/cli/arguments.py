"""Tool and prompt arguments from the command line: ``key=value`` words or one JSON object.

The words are read (and refused when malformed) before any server is started; their values
are typed later, against the tool's input schema once it is listed (:meth:`Arguments.typed`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

import attrs

from trimcp._jsontypes import json_type
from trimcp._record import Record
from trimcp.cli.errors import UsageError

#: How deep ``$ref``/``anyOf`` chains are followed to find a property's types.
_SCHEMA_DEPTH = 8


def parse_value(text: str) -> Any:
    """``text`` as JSON when it parses (``3``, ``true``, ``[1, 2]``, ``"quoted"``), else the
    string itself, so ``city=Paris`` needs no quotes and ``days=3`` is a number."""
    try:
        return json.loads(text)
    except ValueError:
        return text


def split_pairs(words: Sequence[str]) -> dict[str, str]:
    """``["a=1", "b=x"]`` -> ``{"a": "1", "b": "x"}``; a repeated key keeps the last value."""
    pairs: dict[str, str] = {}
    for word in words:
        key, sep, value = word.partition("=")
        if not sep or not key:
            raise UsageError(
                f"expected key=value, got {word!r}",
                hint="pass arguments as key=value (values are JSON when they parse)",
            )
        pairs[key] = value
    return pairs


def parse_pairs(words: Sequence[str], *, raw: bool = False) -> dict[str, Any]:
    """``["a=1", "b=x"]`` -> ``{"a": 1, "b": "x"}``; ``raw`` keeps every value a string
    (prompt arguments are strings on the wire). A repeated key keeps the last value."""
    pairs = split_pairs(words)
    return dict(pairs) if raw else {key: parse_value(text) for key, text in pairs.items()}


def parse_json_object(text: str, *, option: str) -> dict[str, Any]:
    """One JSON object given to ``option``; anything else is a usage error."""
    try:
        value = json.loads(text)
    except ValueError as exc:
        raise UsageError(f"{option} needs a JSON object: {exc}") from None
    if not isinstance(value, dict):
        raise UsageError(f"{option} needs a JSON object, got {json_type(value)}")
    return value


@attrs.frozen(kw_only=True, repr=False, eq=False)
class Arguments(Record):
    """The arguments of one call as the command line gave them: ``given`` is the JSON
    object (``--args``), ``words`` the ``key=value`` texts, not yet typed."""

    given: dict[str, Any]
    words: dict[str, str]

    def names(self) -> list[str]:
        """Every argument name given, the JSON object's first (each once)."""
        return list(dict.fromkeys([*self.given, *self.words]))

    def typed(self, schema: Mapping[str, Any] | None = None, *, tool: str = "") -> dict[str, Any]:
        """The JSON object with the words on top, each word typed by the property of
        ``schema`` (a tool's ``inputSchema``) it names: a string property keeps the text
        (``name=123`` is ``"123"``), numbers, integers and booleans must read as such, and
        objects and arrays are JSON. A word whose property is unknown or untyped is JSON
        when it parses, else a string. A value that fits none of the property's types is
        a :class:`UsageError` naming the argument and what it takes."""
        properties = schema.get("properties") if schema is not None else None
        if not isinstance(properties, Mapping):
            properties = {}
        arguments = dict(self.given)
        for key, text in self.words.items():
            types = _types(properties.get(key), schema or {}, 0)
            arguments[key] = _typed_value(text, types, key=key, tool=tool)
        return arguments

    def strings(self) -> dict[str, str]:
        """The arguments of a prompt: strings on the wire, so a JSON value of another type
        is a :class:`UsageError`."""
        bad = [key for key, value in self.given.items() if not isinstance(value, str)]
        if bad:
            raise UsageError(f"prompt arguments are strings; {', '.join(bad)} is not")
        return {**self.given, **self.words}


def read_arguments(
    words: Sequence[str], json_text: str | None, *, option: str = "--args"
) -> Arguments:
    """The arguments of one call, checked for shape (no server needed): the JSON object
    given to ``option`` (if any), then ``key=value`` words on top.

    One word (anywhere among them) that starts with ``{`` is read as the JSON object too."""
    given: dict[str, Any] = {}
    objects = [word for word in words if word.lstrip().startswith("{")]
    if len(objects) + (json_text is not None) > 1:
        raise UsageError(f"give the arguments as one JSON object (one {{...}} word or {option})")
    if json_text is not None:
        given.update(parse_json_object(json_text, option=option))
    for text in objects:
        given.update(parse_json_object(text, option="the JSON argument"))
    rest = [word for word in words if not word.lstrip().startswith("{")]
    return Arguments(given=given, words=split_pairs(rest))


def merge_arguments(
    words: Sequence[str], json_text: str | None, *, option: str = "--args", raw: bool = False
) -> dict[str, Any]:
    """:func:`read_arguments`, typed without a schema (``raw``: all strings, for prompts)."""
    arguments = read_arguments(words, json_text, option=option)
    return dict(arguments.strings()) if raw else arguments.typed()


# --- typing a word by its JSON Schema -------------------------------------------------------


def _resolve(ref: str, root: Mapping[str, Any]) -> Any:
    """A local ``#/...`` reference inside ``root``; ``None`` when it does not resolve."""
    if not ref.startswith("#/"):
        return None
    node: Any = root
    for part in ref[2:].split("/"):
        if not isinstance(node, Mapping):
            return None
        node = node.get(part.replace("~1", "/").replace("~0", "~"))
    return node


def _types(schema: Any, root: Mapping[str, Any], depth: int) -> frozenset[str] | None:
    """The JSON types ``schema`` admits, or ``None`` when it says nothing usable (then the
    word is inferred as before: JSON when it parses, else a string)."""
    if not isinstance(schema, Mapping) or depth > _SCHEMA_DEPTH:
        return None
    found: set[str] = set()
    declared = schema.get("type")
    if isinstance(declared, str):
        found.add(declared)
    elif isinstance(declared, list):
        found.update(name for name in declared if isinstance(name, str))
    for keyword in ("anyOf", "oneOf"):
        branches = schema.get(keyword)
        if isinstance(branches, list):
            for branch in branches:
                more = _types(branch, root, depth + 1)
                if more is None:  # one branch admits anything: so does the whole
                    return None
                found.update(more)
    ref = schema.get("$ref")
    if isinstance(ref, str):
        more = _types(_resolve(ref, root), root, depth + 1)
        if more is None:
            return None
        found.update(more)
    if not found:
        choices = schema.get("enum")
        if "const" in schema:
            choices = [schema["const"]]
        if isinstance(choices, list) and choices:
            found.update(json_type(choice) for choice in choices)
    if "number" in found:
        found.add("integer")  # every integer is a number
    return frozenset(found) or None


def _typed_value(text: str, types: frozenset[str] | None, *, key: str, tool: str) -> Any:
    if types is None:
        return parse_value(text)
    if "boolean" in types and text.lower() in ("true", "false"):
        return text.lower() == "true"
    try:
        value = json.loads(text)
    except ValueError:
        pass
    else:
        if json_type(value) in types:
            return value
    if "string" in types:
        return text
    shown = types - {"integer"} if "number" in types else types
    wanted = " or ".join(
        _TYPE_WORDS.get(name, name) for name in sorted(shown, key=lambda n: (n == "null", n))
    )
    owner = f" of tool {tool!r}" if tool else ""
    structured = "array" in types or "object" in types
    raise UsageError(
        f"argument {key!r}{owner} takes {wanted}, got {text!r}",
        hint='give objects and arrays as JSON, e.g. tags=\'["a", "b"]\'' if structured else None,
    )


_TYPE_WORDS = {
    "array": "a JSON array",
    "boolean": "true or false",
    "integer": "an integer",
    "null": "null",
    "number": "a number",
    "object": "a JSON object",
}
