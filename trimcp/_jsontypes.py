"""The JSON Schema type name of a decoded JSON value (ground floor: no trimcp imports)."""

from __future__ import annotations

from typing import Any


def json_type(value: Any) -> str:
    """``"null"``, ``"boolean"``, ``"integer"``, ``"number"``, ``"string"``, ``"array"``
    (a list) or ``"object"`` (anything else: a dict as JSON decodes it)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    return "array" if isinstance(value, list) else "object"
