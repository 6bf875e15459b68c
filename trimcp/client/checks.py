"""Checks of what a caller passes to the client, and the messages of its timeouts.

Each error names the call, the argument and what it should be, and is raised before
anything is sent.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from trimcp.errors import RequestTimeout


def timed_out(
    exc: RequestTimeout, method: str, target: str | None, *, default: bool
) -> RequestTimeout:
    """The engine's timeout, told with what timed out and how to wait longer."""
    what = f"{method} {target!r}" if target else method
    message = exc.message.replace(method, what, 1) if target else exc.message
    how = (
        "the default request timeout; pass timeout=SECONDS to this call, or connect with "
        "options=SessionOptions(request_timeout=SECONDS)"
        if default
        else "the timeout given to this call"
    )
    return RequestTimeout(f"{message} ({how}); the server was told to cancel it", exc.data)


def check_str(call: str, name: str, value: object) -> None:
    if not isinstance(value, str):
        raise TypeError(f"{call}: {name} must be a str, not {type(value).__name__} {value!r:.80}")


def json_object(call: str, name: str, value: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """A JSON object from ``value`` (a mapping with str keys), or a TypeError naming it."""
    if value is None:
        return None
    if not isinstance(value, Mapping):
        raise TypeError(
            f"{call}: {name} must be a mapping of names to values, e.g. {{'a': 1}}; "
            f"got {type(value).__name__} {value!r:.80}"
        )
    for key in value:
        if not isinstance(key, str):
            raise TypeError(f"{call}: the keys of {name} must be str, got {key!r:.80}")
    return dict(value)


def string_map(call: str, name: str, value: Mapping[str, str] | None) -> dict[str, str] | None:
    """Like :func:`json_object`, and every value must be a str (prompt/completion arguments)."""
    checked = json_object(call, name, value)
    for key, item in (checked or {}).items():
        if not isinstance(item, str):
            raise TypeError(
                f"{call}: {name}[{key!r}] must be a str (these arguments are strings), "
                f"got {type(item).__name__} {item!r:.80}"
            )
    return checked
