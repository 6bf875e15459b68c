"""Content blocks (text, image, audio, resource links, embedded resources, tool use/result).

Unions of content blocks are told apart by their ``type`` field; an unknown ``type`` is a
structure error at ``<path>.type``.
"""

from typing import Any, Literal, TypeAlias

import attrs

from trimcp.types.base import WireType
from trimcp.types.common import Annotations, Icon


@attrs.frozen(kw_only=True, repr=False, eq=False)
class TextResourceContents(WireType):
    """The text contents of a resource."""

    uri: str
    text: str
    mime_type: str | None = None
    meta: dict[str, Any] | None = None


@attrs.frozen(kw_only=True, repr=False, eq=False)
class BlobResourceContents(WireType):
    """The binary contents of a resource, base64-encoded."""

    uri: str
    blob: str
    mime_type: str | None = None
    meta: dict[str, Any] | None = None


ResourceContents: TypeAlias = TextResourceContents | BlobResourceContents
"""Resource contents; told apart on the wire by a ``text`` or a ``blob`` member."""


@attrs.frozen(kw_only=True, repr=False, eq=False)
class TextContent(WireType):
    """Text provided to or from an LLM."""

    type: Literal["text"] = "text"
    text: str
    annotations: Annotations | None = None
    meta: dict[str, Any] | None = None


@attrs.frozen(kw_only=True, repr=False, eq=False)
class ImageContent(WireType):
    """A base64-encoded image provided to or from an LLM."""

    type: Literal["image"] = "image"
    data: str
    mime_type: str
    annotations: Annotations | None = None
    meta: dict[str, Any] | None = None


@attrs.frozen(kw_only=True, repr=False, eq=False)
class AudioContent(WireType):
    """Base64-encoded audio provided to or from an LLM."""

    type: Literal["audio"] = "audio"
    data: str
    mime_type: str
    annotations: Annotations | None = None
    meta: dict[str, Any] | None = None


@attrs.frozen(kw_only=True, repr=False, eq=False)
class ResourceLink(WireType):
    """A link to a resource the server can read; it need not appear in resources/list."""

    type: Literal["resource_link"] = "resource_link"
    uri: str
    name: str
    title: str | None = None
    description: str | None = None
    mime_type: str | None = None
    size: int | None = None
    icons: list[Icon] | None = None
    annotations: Annotations | None = None
    meta: dict[str, Any] | None = None


@attrs.frozen(kw_only=True, repr=False, eq=False)
class EmbeddedResource(WireType):
    """The contents of a resource, embedded in a prompt or tool result."""

    type: Literal["resource"] = "resource"
    resource: ResourceContents
    annotations: Annotations | None = None
    meta: dict[str, Any] | None = None


ContentBlock: TypeAlias = (
    TextContent | ImageContent | AudioContent | ResourceLink | EmbeddedResource
)
"""A content block of a tool result or prompt message."""


@attrs.frozen(kw_only=True, repr=False, eq=False)
class ToolUseContent(WireType):
    """A request from the model (in sampling) to call a tool."""

    type: Literal["tool_use"] = "tool_use"
    id: str
    name: str
    input: dict[str, Any]
    meta: dict[str, Any] | None = None


@attrs.frozen(kw_only=True, repr=False, eq=False)
class ToolResultContent(WireType):
    """The result of a tool call, given back to the model in sampling.

    ``structured_content`` is a JSON object in 2025-11-25 and any JSON value in 2026-07-28.
    """

    type: Literal["tool_result"] = "tool_result"
    tool_use_id: str
    content: list[ContentBlock]
    structured_content: Any = None
    is_error: bool | None = None
    meta: dict[str, Any] | None = None


SamplingContent: TypeAlias = (
    TextContent | ImageContent | AudioContent | ToolUseContent | ToolResultContent
)
"""A content block of a sampling message (``SamplingMessageContentBlock`` in the schema)."""
