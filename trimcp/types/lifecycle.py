"""Lifecycle: implementation info, capabilities, ``initialize``, ``server/discover`` (2026).

A capability is declared by being present: an empty object (``{}``) means "supported, no
options". Capability objects the schema leaves open are ``dict[str, Any]``. Capabilities
this revision does not know are dropped on input; declare custom ones under
``experimental`` (or ``extensions`` from 2026-07-28).
"""

from typing import Any, Literal

import attrs

from trimcp.types.base import WireType
from trimcp.types.common import Icon, RequestParams, Result


@attrs.frozen(kw_only=True, repr=False, eq=False)
class Implementation(WireType):
    """The name and version of an MCP client or server, with optional display details."""

    name: str
    version: str
    title: str | None = None
    description: str | None = None
    icons: list[Icon] | None = None
    website_url: str | None = None


@attrs.frozen(kw_only=True, repr=False, eq=False)
class RootsCapability(WireType):
    """The client can list roots (and, if ``list_changed``, tell when they change)."""

    list_changed: bool | None = None


@attrs.frozen(kw_only=True, repr=False, eq=False)
class SamplingCapability(WireType):
    """The client can sample an LLM; ``context``/``tools`` say it honours those params."""

    context: dict[str, Any] | None = None
    tools: dict[str, Any] | None = None


@attrs.frozen(kw_only=True, repr=False, eq=False)
class ElicitationCapability(WireType):
    """The client can elicit input: form mode, URL mode (an empty object means form only)."""

    form: dict[str, Any] | None = None
    url: dict[str, Any] | None = None


@attrs.frozen(kw_only=True, repr=False, eq=False)
class SamplingTaskRequests(WireType):
    """Which sampling requests the client can run as tasks."""

    create_message: dict[str, Any] | None = None


@attrs.frozen(kw_only=True, repr=False, eq=False)
class ElicitationTaskRequests(WireType):
    """Which elicitation requests the client can run as tasks."""

    create: dict[str, Any] | None = None


@attrs.frozen(kw_only=True, repr=False, eq=False)
class ClientTaskRequests(WireType):
    """Which server-to-client requests the client can run as tasks."""

    sampling: SamplingTaskRequests | None = None
    elicitation: ElicitationTaskRequests | None = None


@attrs.frozen(kw_only=True, repr=False, eq=False)
class ClientTasksCapability(WireType):
    """The client supports task-augmented requests (``list_`` is the wire's ``list``)."""

    list_: dict[str, Any] | None = None
    cancel: dict[str, Any] | None = None
    requests: ClientTaskRequests | None = None


@attrs.frozen(kw_only=True, repr=False, eq=False)
class ClientCapabilities(WireType):
    """What a client supports. ``extensions`` exists only from 2026-07-28."""

    experimental: dict[str, dict[str, Any]] | None = None
    roots: RootsCapability | None = None
    sampling: SamplingCapability | None = None
    elicitation: ElicitationCapability | None = None
    tasks: ClientTasksCapability | None = None
    extensions: dict[str, dict[str, Any]] | None = None


@attrs.frozen(kw_only=True, repr=False, eq=False)
class PromptsCapability(WireType):
    """The server offers prompts (and, if ``list_changed``, tells when they change)."""

    list_changed: bool | None = None


@attrs.frozen(kw_only=True, repr=False, eq=False)
class ResourcesCapability(WireType):
    """The server offers resources; ``subscribe`` and ``list_changed`` are options."""

    subscribe: bool | None = None
    list_changed: bool | None = None


@attrs.frozen(kw_only=True, repr=False, eq=False)
class ToolsCapability(WireType):
    """The server offers tools (and, if ``list_changed``, tells when they change)."""

    list_changed: bool | None = None


@attrs.frozen(kw_only=True, repr=False, eq=False)
class ToolsTaskRequests(WireType):
    """Which tool requests the server can run as tasks."""

    call: dict[str, Any] | None = None


@attrs.frozen(kw_only=True, repr=False, eq=False)
class ServerTaskRequests(WireType):
    """Which client-to-server requests the server can run as tasks."""

    tools: ToolsTaskRequests | None = None


@attrs.frozen(kw_only=True, repr=False, eq=False)
class ServerTasksCapability(WireType):
    """The server supports task-augmented requests (``list_`` is the wire's ``list``)."""

    list_: dict[str, Any] | None = None
    cancel: dict[str, Any] | None = None
    requests: ServerTaskRequests | None = None


@attrs.frozen(kw_only=True, repr=False, eq=False)
class ServerCapabilities(WireType):
    """What a server supports. ``extensions`` exists only from 2026-07-28."""

    experimental: dict[str, dict[str, Any]] | None = None
    logging: dict[str, Any] | None = None
    completions: dict[str, Any] | None = None
    prompts: PromptsCapability | None = None
    resources: ResourcesCapability | None = None
    tools: ToolsCapability | None = None
    tasks: ServerTasksCapability | None = None
    extensions: dict[str, dict[str, Any]] | None = None


@attrs.frozen(kw_only=True, repr=False, eq=False)
class InitializeRequestParams(RequestParams):
    """Params of ``initialize``: the client's version, capabilities and identity."""

    protocol_version: str
    capabilities: ClientCapabilities
    client_info: Implementation


@attrs.frozen(kw_only=True, repr=False, eq=False)
class InitializeResult(Result):
    """The result of ``initialize``: the negotiated version and the server's capabilities."""

    protocol_version: str
    capabilities: ServerCapabilities
    server_info: Implementation
    instructions: str | None = None


@attrs.frozen(kw_only=True, repr=False, eq=False)
class DiscoverResult(Result):
    """2026-07-28: the result of ``server/discover`` (versions, capabilities, cache hints)."""

    supported_versions: list[str]
    capabilities: ServerCapabilities
    instructions: str | None = None
    ttl_ms: int | None = None
    cache_scope: Literal["public", "private"] | None = None
