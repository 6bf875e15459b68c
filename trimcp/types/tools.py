"""Tools: definitions, ``tools/list`` and ``tools/call``."""

from typing import Any, Literal

import attrs

from trimcp.types.base import WireType
from trimcp.types.common import Icon, PaginatedResult, Result
from trimcp.types.content import ContentBlock
from trimcp.types.tasks import TaskAugmentedRequestParams


@attrs.frozen(kw_only=True, repr=False, eq=False)
class ToolAnnotations(WireType):
    """Hints about a tool's behaviour; never trust them from an untrusted server."""

    title: str | None = None
    read_only_hint: bool | None = None
    destructive_hint: bool | None = None
    idempotent_hint: bool | None = None
    open_world_hint: bool | None = None


@attrs.frozen(kw_only=True, repr=False, eq=False)
class ToolExecution(WireType):
    """How a tool runs: whether it may, must or must not be called as a task."""

    task_support: Literal["forbidden", "optional", "required"] | None = None


@attrs.frozen(kw_only=True, repr=False, eq=False)
class Tool(WireType):
    """A tool the client can call.

    ``input_schema`` and ``output_schema`` are JSON Schema objects, kept as plain JSON.
    """

    name: str
    input_schema: dict[str, Any]
    title: str | None = None
    description: str | None = None
    output_schema: dict[str, Any] | None = None
    annotations: ToolAnnotations | None = None
    execution: ToolExecution | None = None
    icons: list[Icon] | None = None
    meta: dict[str, Any] | None = None


@attrs.frozen(kw_only=True, repr=False, eq=False)
class ListToolsResult(PaginatedResult):
    """The result of ``tools/list``. ``ttl_ms``/``cache_scope`` exist only from 2026-07-28."""

    tools: list[Tool]
    ttl_ms: int | None = None
    cache_scope: Literal["public", "private"] | None = None


@attrs.frozen(kw_only=True, repr=False, eq=False)
class CallToolRequestParams(TaskAugmentedRequestParams):
    """Params of ``tools/call``.

    ``input_responses`` and ``request_state`` exist only from 2026-07-28 (kept as JSON).
    """

    name: str
    arguments: dict[str, Any] | None = None
    input_responses: dict[str, Any] | None = None
    request_state: str | None = None


@attrs.frozen(kw_only=True, repr=False, eq=False)
class CallToolResult(Result):
    """The result of ``tools/call``.

    A tool's own failure is ``is_error=True`` with content that explains it (so the model
    can see it), not a JSON-RPC error. ``structured_content`` is a JSON object (any JSON
    value from 2026-07-28) that matches the tool's output schema.
    """

    content: list[ContentBlock]
    structured_content: Any = None
    is_error: bool | None = None
