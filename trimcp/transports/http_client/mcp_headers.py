"""The request headers 2026-07-28 asks of a Streamable HTTP client, computed without I/O.

Every POST names its method (``Mcp-Method``), the tool, prompt or resource it is about
(``Mcp-Name``), and mirrors the tool arguments whose input-schema property carries an
``x-mcp-header`` annotation (``Mcp-Param-{name}``), so intermediaries can route without
reading the body. Values a header cannot carry as plain visible ASCII travel as
``=?base64?{base64 of the UTF-8}?=``. A tool whose annotations break the rules is
excluded from ``tools/list`` (the spec requires it: "a single malformed tool definition
does not prevent other valid tools from being used").
"""

from __future__ import annotations

import base64
import re
from collections.abc import Mapping
from typing import Any, Final

#: The methods whose ``Mcp-Name`` header mirrors ``params.name`` or ``params.uri``.
NAMED_METHODS: Final = {"tools/call": "name", "prompts/get": "name", "resources/read": "uri"}
ANNOTATION: Final = "x-mcp-header"
_TOKEN = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
_SAFE_INT = 2**53 - 1
_HEADER_TYPES = ("string", "integer", "boolean")

#: One annotated parameter: the header name part and the property path to its value.
HeaderParam = tuple[str, tuple[str, ...]]


class InvalidHeaderAnnotation(ValueError):
    """A tool's ``x-mcp-header`` annotations break the rules; the reason says which."""


def encode_value(value: str) -> str:
    """``value`` as a header value: itself when it is plain visible ASCII (inner spaces
    allowed), else the Base64 sentinel form. A value that looks like the sentinel is
    encoded too, so it cannot be mistaken for one."""
    plain = (
        value == value.strip(" \t")
        and all(0x20 <= ord(c) <= 0x7E for c in value)
        and not (value.startswith("=?base64?") and value.endswith("?="))
    )
    if plain:
        return value
    return "=?base64?" + base64.b64encode(value.encode("utf-8")).decode("ascii") + "?="


def header_params(input_schema: Mapping[str, Any]) -> list[HeaderParam]:
    """The annotated parameters of a tool's ``inputSchema``, in schema order.

    Raises :class:`InvalidHeaderAnnotation` when an annotation is empty, not an HTTP
    token, repeated (case-insensitively), on a property that is not a string, integer or
    boolean, or anywhere but a chain of ``properties`` from the root.
    """
    found: list[HeaderParam] = []
    _walk(input_schema, (), True, found)
    seen: set[str] = set()
    for name, _path in found:
        if name.lower() in seen:
            raise InvalidHeaderAnnotation(f"x-mcp-header {name!r} is used twice")
        seen.add(name.lower())
    return found


def _walk(node: Any, path: tuple[str, ...], reachable: bool, found: list[HeaderParam]) -> None:
    if isinstance(node, list):
        for item in node:
            _walk(item, path, False, found)
        return
    if not isinstance(node, Mapping):
        return
    if ANNOTATION in node:
        name = node[ANNOTATION]
        where = ".".join(path) or "(root)"
        if not reachable or not path:
            raise InvalidHeaderAnnotation(
                f"x-mcp-header at {where} is not reachable through properties alone"
            )
        if not isinstance(name, str) or not name:
            raise InvalidHeaderAnnotation(f"x-mcp-header at {where} is empty or not a string")
        if not _TOKEN.fullmatch(name):
            raise InvalidHeaderAnnotation(
                f"x-mcp-header {name!r} at {where} is not an HTTP header token"
            )
        if node.get("type") not in _HEADER_TYPES:
            raise InvalidHeaderAnnotation(
                f"x-mcp-header {name!r} at {where} is on a {node.get('type')!r} property; "
                "only string, integer and boolean may be mirrored"
            )
        found.append((name, path))
    for key, value in node.items():
        if key == "properties" and isinstance(value, Mapping):
            for prop, sub in value.items():
                _walk(sub, (*path, str(prop)), reachable, found)
        elif key != ANNOTATION:
            _walk(value, path, False, found)


def param_headers(params: list[HeaderParam], arguments: Any) -> dict[str, str]:
    """``Mcp-Param-*`` headers for ``arguments`` (absent and null values are omitted)."""
    headers: dict[str, str] = {}
    for name, path in params:
        value: Any = arguments
        for key in path:
            value = value.get(key) if isinstance(value, Mapping) else None
        text = _as_text(value)
        if text is not None:
            headers[f"mcp-param-{name.lower()}"] = encode_value(text)
    return headers


def _as_text(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value) if -_SAFE_INT <= value <= _SAFE_INT else None
    if isinstance(value, float) and value.is_integer() and abs(value) <= _SAFE_INT:
        return str(int(value))
    if isinstance(value, str):
        return value
    return None


def standard_headers(version: str, method: str, params: Any) -> dict[str, str]:
    """``MCP-Protocol-Version``, ``Mcp-Method`` and (when it applies) ``Mcp-Name``."""
    headers = {"mcp-protocol-version": version, "mcp-method": encode_value(method)}
    field = NAMED_METHODS.get(method)
    if field is not None and isinstance(params, Mapping):
        name = params.get(field)
        if isinstance(name, str):
            headers["mcp-name"] = encode_value(name)
    return headers
