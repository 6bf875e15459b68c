"""Turning what a tool returns into a ``CallToolResult``.

Without an output schema (the return annotation is missing, ``str``, ``None``, bytes,
content blocks, ``Any``, or ``output_schema=None`` was passed):

- ``str`` -> one text block; ``None`` -> no content;
- a content block (``TextContent``, ``ImageContent``, ``AudioContent``, ``ResourceLink``,
  ``EmbeddedResource``), :class:`Image` or :class:`Audio` -> that block;
- ``bytes`` -> one ``EmbeddedResource`` holding a ``BlobResourceContents`` (base64,
  ``application/octet-stream``) whose URI is ``tool://<tool name>/result``: binary data
  stays binary instead of being guessed at; return :class:`Image`/:class:`Audio` for media;
- a list or tuple of the above -> those blocks, in order;
- anything else JSON-able (dict, list, number, attrs class, dataclass) -> one text block
  holding its JSON.

With an output schema (derived from a structured return annotation: attrs class,
dataclass, TypedDict, ``dict``, ``list``, ``int``... or given explicitly), the value goes
into ``structuredContent`` and its JSON into a text block too, for clients older than
2025-06-18 (which get only the text block). A value that is not a JSON object at the top
(``-> int``, ``-> list[str]``) is wrapped as ``{"result": value}``, and the schema says
so. The value is checked against the return type; a mismatch is the tool's error.

A ``CallToolResult`` is passed through untouched.
"""

from __future__ import annotations

import base64
import json
import types
import typing
from collections.abc import Sequence
from typing import Any, Final, get_args, get_origin

import attrs

from trimcp._record import Record
from trimcp.protocol.versions import V2025_06_18
from trimcp.server.convert import Convert, ValidationError, converter_for, to_json
from trimcp.server.schema import json_schema, root_object_schema
from trimcp.server.typeforms import MISSING, unwrap
from trimcp.types import (
    AudioContent,
    BlobResourceContents,
    CallToolResult,
    ContentBlock,
    EmbeddedResource,
    ImageContent,
    ResourceLink,
    TextContent,
)

_BLOCKS: Final = (TextContent, ImageContent, AudioContent, ResourceLink, EmbeddedResource)


@attrs.frozen(repr=False, eq=False)
class Image(Record):
    """Image bytes a tool returns; sent as an ``ImageContent`` block (base64)."""

    data: bytes
    mime_type: str = "image/png"

    def to_content(self) -> ImageContent:
        return ImageContent(data=_b64(self.data), mime_type=self.mime_type)


@attrs.frozen(repr=False, eq=False)
class Audio(Record):
    """Audio bytes a tool returns; sent as an ``AudioContent`` block (base64)."""

    data: bytes
    mime_type: str = "audio/wav"

    def to_content(self) -> AudioContent:
        return AudioContent(data=_b64(self.data), mime_type=self.mime_type)


_MEDIA: Final = (Image, Audio)
_UNSTRUCTURED: Final = frozenset(
    {str, bytes, bytearray, type(None), None, Any, object, CallToolResult, *_BLOCKS, *_MEDIA}
)


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


class ResultError(Exception):
    """The tool's return value cannot be sent as declared (logged; an ``isError`` result)."""


def text_result(text: str, *, is_error: bool = False) -> CallToolResult:
    return CallToolResult(content=[TextContent(text=text)], is_error=True if is_error else None)


def _is_unstructured(annotation: Any) -> bool:
    base, _ = unwrap(annotation)
    if base in _UNSTRUCTURED:
        return True
    origin = get_origin(base)
    if origin in (typing.Union, types.UnionType):
        return any(_is_unstructured(member) for member in get_args(base))
    if origin in (list, tuple, Sequence, typing.Sequence):
        # A list of content blocks is content; a list of strings is data.
        args = [a for a in get_args(base) if a is not Ellipsis]
        return bool(args) and all(_is_content(a) for a in args)
    return False


def _is_content(annotation: Any) -> bool:
    base, _ = unwrap(annotation)
    if get_origin(base) in (typing.Union, types.UnionType):
        return all(_is_content(member) for member in get_args(base))
    return base in (Any, object, *_BLOCKS, *_MEDIA) or base == ContentBlock


@attrs.frozen(repr=False, eq=False)
class OutputSpec(Record):
    """How a tool's results are shaped: its output schema, and whether values are wrapped."""

    schema: dict[str, Any] | None
    wrap: bool = False
    check: Convert | None = None


def output_spec(annotation: Any, explicit: Any, *, auto: bool) -> OutputSpec:
    """Decide the output schema from the return annotation (``auto``) or ``explicit``.

    Raises ``TypeError`` when ``auto`` and the annotation is structured but has no schema
    (pass ``output_schema=None`` to send such values as JSON text instead).
    """
    if not auto:
        return OutputSpec(dict(explicit) if explicit is not None else None)
    if annotation is MISSING or _is_unstructured(annotation):
        return OutputSpec(None)
    check = converter_for(annotation)
    schema = root_object_schema(annotation)
    if schema is not None:
        return OutputSpec(schema, False, check)
    inner = json_schema(annotation)
    defs = inner.pop("$defs", None)
    wrapped: dict[str, Any] = {
        "type": "object",
        "properties": {"result": inner},
        "required": ["result"],
    }
    if defs:
        wrapped["$defs"] = defs
    return OutputSpec(wrapped, True, check)


def to_call_result(value: Any, spec: OutputSpec, tool: str, version: str | None) -> CallToolResult:
    """The ``CallToolResult`` for a tool's return value. Raises :class:`ResultError`."""
    if isinstance(value, CallToolResult):
        return value
    if spec.schema is None:
        if type(value) is str:  # the commonest value: one text block
            return CallToolResult(content=[TextContent(text=value)])
        return CallToolResult(content=to_content(value, tool))
    try:
        data = to_json(value)
    except TypeError as exc:
        raise ResultError(f"the value it returned is not JSON: {exc}") from None
    if spec.check is not None:
        try:
            spec.check(data)
        except ValidationError as exc:
            raise ResultError(
                f"the value it returned does not match its return type: {exc}"
            ) from None
    structured = {"result": data} if spec.wrap else data
    text = TextContent(text=json.dumps(data, ensure_ascii=False))
    if version is not None and version < V2025_06_18:
        return CallToolResult(content=[text])
    return CallToolResult(content=[text], structured_content=structured)


def to_content(value: Any, tool: str) -> list[ContentBlock]:
    """Content blocks for an unstructured return value. Raises :class:`ResultError`."""
    if value is None:
        return []
    single = _block(value, tool)
    if single is not None:
        return [single]
    if isinstance(value, list | tuple):
        blocks = [_block(item, tool) for item in value]
        if all(block is not None for block in blocks):
            return [block for block in blocks if block is not None]
    try:
        data = to_json(value)
    except TypeError as exc:
        raise ResultError(f"the value it returned cannot be sent: {exc}") from None
    return [TextContent(text=json.dumps(data, ensure_ascii=False))]


def _block(value: Any, tool: str) -> ContentBlock | None:
    if isinstance(value, str):
        return TextContent(text=value)
    if isinstance(value, _BLOCKS):
        return value
    if isinstance(value, _MEDIA):
        return value.to_content()
    if isinstance(value, bytes | bytearray):
        return EmbeddedResource(
            resource=BlobResourceContents(
                uri=f"tool://{tool}/result",
                blob=_b64(bytes(value)),
                mime_type="application/octet-stream",
            )
        )
    return None
