"""Every MCP method as data: who sends it, its params and result types, where it exists.

Each method is a typed constant, a :class:`Method` ``[Params, Result]`` (``CALL_TOOL`` is
``Method[CallToolRequestParams, CallToolResult]``), so code that sends or serves a method
through its constant is type-checked on both sides: ``await session.request(CALL_TOOL,
params)`` is a ``CallToolResult``, and a server handler registered for ``CALL_TOOL`` takes
``CallToolRequestParams``. The per-method facts are columns of the same row (removed in
2026-07-28, may answer ``input_required``, carries cache hints, the params field that
travels as ``Mcp-Name``, the component it uses and the param naming it, the catalog a list
pages through, the notifications that make a result stale). :data:`METHODS` indexes them
by name, built from the ``ClientRequest``/``ServerRequest``/``ClientNotification``/
``ServerNotification`` unions of each revision's schema (a test checks it against them,
and that each constant's annotation names the types its row loads). Look methods up with
:func:`lookup`; nothing here does I/O, and the wire types load on first use.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType, UnionType
from typing import TYPE_CHECKING, Any, Final, Generic, Literal, TypeVar, cast

import attrs

import trimcp.types
from trimcp._record import Record
from trimcp.errors import UnexpectedResult

if TYPE_CHECKING:
    from trimcp.types import (
        CallToolRequestParams,
        CallToolResult,
        CancelledNotificationParams,
        CancelTaskRequestParams,
        CancelTaskResult,
        CompleteRequestParams,
        CompleteResult,
        CreateMessageRequestParams,
        CreateMessageResult,
        CreateTaskResult,
        DiscoverResult,
        ElicitationCompleteNotificationParams,
        ElicitRequestParams,
        ElicitResult,
        EmptyResult,
        GetPromptRequestParams,
        GetPromptResult,
        GetTaskPayloadRequestParams,
        GetTaskRequestParams,
        GetTaskResult,
        InitializeRequestParams,
        InitializeResult,
        ListPromptsResult,
        ListResourcesResult,
        ListResourceTemplatesResult,
        ListRootsResult,
        ListTasksResult,
        ListToolsResult,
        LoggingMessageNotificationParams,
        NotificationParams,
        PaginatedRequestParams,
        ProgressNotificationParams,
        ReadResourceRequestParams,
        ReadResourceResult,
        RequestParams,
        ResourceUpdatedNotificationParams,
        SetLevelRequestParams,
        SubscribeRequestParams,
        SubscriptionsAcknowledgedNotificationParams,
        SubscriptionsListenRequestParams,
        SubscriptionsListenResult,
        TaskStatusNotificationParams,
        UnsubscribeRequestParams,
    )

REVISIONS: Final[tuple[str, ...]] = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
"""The protocol revisions trimcp speaks, oldest first."""

DRAFT_REVISION: Final = "2026-07-28"
"""The next (stateless) revision; methods that exist in it list it in ``revisions``."""

Kind = Literal["request", "notification"]
Sender = Literal["client", "server", "both"]
#: The kind of component a request uses (per-component scopes apply to it).
Target = Literal["tool", "prompt", "resource"]
#: The catalog a list request pages through (a server's component registries).
Catalog = Literal["tools", "prompts", "resources", "templates"]

P = TypeVar("P")
R = TypeVar("R")


@attrs.frozen(repr=False, eq=False)
class Method(Record, Generic[P, R]):
    """What the protocol says about one method; ``P`` its params, ``R`` its result.

    - ``sender``: who may send it, over :data:`REVISIONS` (for methods that exist only in
      :data:`DRAFT_REVISION`, over that one).
    - ``params_type``: the type to structure ``params`` as (a class or a union such as
      ``ElicitRequestParams``); structure ``{}`` when ``params`` is absent. ``None``: the
      params are free-form.
    - ``result_type``: for requests, the type of the result; ``None`` when it is free-form
      (``tasks/result`` answers with the original request's result type). A task-augmented
      request (params with ``task``) is answered with ``CreateTaskResult`` instead.
    - ``revisions``: every revision, :data:`DRAFT_REVISION` included, that has it.
    - ``capability``: for requests, the path (wire names) in the *receiver's* capabilities
      that must be present; for notifications, the path in the *sender's* capabilities.
      ``None`` when no capability is needed.
    - ``removed_in_stateless``: a session-era method that 2026-07-28 removed (a 2026
      request for it is answered ``-32601``); the 2025 ``tasks/*`` moved to an extension
      and are not marked.
    - ``input_capable``: in 2026-07-28, the request may be answered ``input_required``.
    - ``cacheable``: in 2026-07-28, a complete result carries ``ttlMs``/``cacheScope``.
    - ``name_field``: the params field whose value travels as the ``Mcp-Name`` header.
    - ``target``: the kind of component the request uses (a ``ProtectedResource``'s
      per-component scopes apply to it, telemetry names it); ``target_field``: the params
      field naming it (None for ``subscriptions/listen``, whose params list resources).
    - ``lists``: the catalog a list request pages through; ``page_field``: the result's
      attribute holding the page.
    - ``stale_after``: the notifications after which a client's cached result of the
      request is stale (one naming a URI: the results for that ``target_field`` only).
    """

    name: str
    kind: Kind
    sender: Sender
    #: The names in :mod:`trimcp.types` of ``params_type`` and ``result_type``: the table
    #: names its types, and each is loaded on first use (a stdio server's start loads
    #: only the wire types it meets). A test checks them against each constant's
    #: annotation, so the names cannot drift from the types mypy sees.
    params_name: str | None
    result_name: str | None
    revisions: frozenset[str]
    capability: tuple[str, ...] | None
    removed_in_stateless: bool = False
    input_capable: bool = False
    cacheable: bool = False
    name_field: str | None = None
    target: Target | None = None
    target_field: str | None = None
    lists: Catalog | None = None
    page_field: str | None = None
    stale_after: tuple[str, ...] = ()
    #: An extension method's own types (its row is made by
    #: :func:`trimcp.protocol.extensions.extension_method`, not listed in :data:`METHODS`):
    #: they are not wire types of :mod:`trimcp.types`, so the row holds them directly.
    own_params: type | UnionType | None = None
    own_result: type | None = None

    @property
    def params_type(self) -> type | UnionType | None:
        name = self.params_name  # every request asks: one dict lookup once resolved
        if name is None:
            return self.own_params
        found: type | UnionType = _WIRE_TYPES.get(name) or _wire_type(name)
        return found

    @property
    def result_type(self) -> type | None:
        name = self.result_name
        if name is None:
            return self.own_result
        result: type = _WIRE_TYPES.get(name) or _wire_type(name)
        return result

    def as_task(self) -> Method[P, CreateTaskResult]:
        """This request, task-augmented (2025-11-25 params with ``task``): answered with
        a ``CreateTaskResult`` instead of its own result."""
        task: Method[Any, Any] = attrs.evolve(self, result_name="CreateTaskResult")
        return task


_WIRE_TYPES: dict[str, Any] = {}


def _wire_type(name: str) -> Any:
    found = _WIRE_TYPES.get(name)
    if found is None:
        found = _WIRE_TYPES[name] = getattr(trimcp.types, name)
    return found


def _since(first: str, *, draft: bool = True) -> frozenset[str]:
    revisions = REVISIONS[REVISIONS.index(first) :]
    return frozenset((*revisions, DRAFT_REVISION) if draft else revisions)


_ALL = _since("2024-11-05")
_SESSION_ONLY = _since("2024-11-05", draft=False)  # gone in the stateless revision
_V2025_11_25 = frozenset({"2025-11-25"})
_DRAFT_ONLY = frozenset({DRAFT_REVISION})


def _request(
    name: str,
    sender: Sender,
    params: str,
    result: str | None,
    revisions: frozenset[str],
    capability: tuple[str, ...] | None = None,
    **columns: Any,
) -> Method[Any, Any]:
    return Method(name, "request", sender, params, result, revisions, capability, **columns)


def _notification(
    name: str,
    sender: Sender,
    params: str,
    revisions: frozenset[str],
    capability: tuple[str, ...] | None = None,
    **columns: Any,
) -> Method[Any, None]:
    return Method(name, "notification", sender, params, None, revisions, capability, **columns)


# --- lifecycle and utilities ----------------------------------------------------------------

INITIALIZE: Final[Method[InitializeRequestParams, InitializeResult]] = _request(
    "initialize",
    "client",
    "InitializeRequestParams",
    "InitializeResult",
    _SESSION_ONLY,
    removed_in_stateless=True,
)
PING: Final[Method[RequestParams | None, EmptyResult]] = _request(
    "ping", "both", "RequestParams", "EmptyResult", _SESSION_ONLY, removed_in_stateless=True
)
INITIALIZED: Final[Method[NotificationParams | None, None]] = _notification(
    "notifications/initialized",
    "client",
    "NotificationParams",
    _SESSION_ONLY,
    removed_in_stateless=True,
)
CANCELLED: Final[Method[CancelledNotificationParams, None]] = _notification(
    "notifications/cancelled", "both", "CancelledNotificationParams", _ALL
)
PROGRESS: Final[Method[ProgressNotificationParams, None]] = _notification(
    "notifications/progress",
    "both",
    "ProgressNotificationParams",
    _ALL,  # server-only in the draft revision
)

# --- server features (requests the client sends) --------------------------------------------

LIST_RESOURCES: Final[Method[PaginatedRequestParams | None, ListResourcesResult]] = _request(
    "resources/list",
    "client",
    "PaginatedRequestParams",
    "ListResourcesResult",
    _ALL,
    ("resources",),
    cacheable=True,
    lists="resources",
    page_field="resources",
    stale_after=("notifications/resources/list_changed",),
)
LIST_RESOURCE_TEMPLATES: Final[
    Method[PaginatedRequestParams | None, ListResourceTemplatesResult]
] = _request(
    "resources/templates/list",
    "client",
    "PaginatedRequestParams",
    "ListResourceTemplatesResult",
    _ALL,
    ("resources",),
    cacheable=True,
    lists="templates",
    page_field="resource_templates",
    stale_after=("notifications/resources/list_changed",),
)
READ_RESOURCE: Final[Method[ReadResourceRequestParams, ReadResourceResult]] = _request(
    "resources/read",
    "client",
    "ReadResourceRequestParams",
    "ReadResourceResult",
    _ALL,
    ("resources",),
    input_capable=True,
    cacheable=True,
    name_field="uri",
    target="resource",
    target_field="uri",
    stale_after=("notifications/resources/updated",),
)
SUBSCRIBE: Final[Method[SubscribeRequestParams, EmptyResult]] = _request(
    "resources/subscribe",
    "client",
    "SubscribeRequestParams",
    "EmptyResult",
    _SESSION_ONLY,
    ("resources", "subscribe"),
    removed_in_stateless=True,
    target="resource",
    target_field="uri",
)
UNSUBSCRIBE: Final[Method[UnsubscribeRequestParams, EmptyResult]] = _request(
    "resources/unsubscribe",
    "client",
    "UnsubscribeRequestParams",
    "EmptyResult",
    _SESSION_ONLY,
    ("resources", "subscribe"),
    removed_in_stateless=True,
)
LIST_PROMPTS: Final[Method[PaginatedRequestParams | None, ListPromptsResult]] = _request(
    "prompts/list",
    "client",
    "PaginatedRequestParams",
    "ListPromptsResult",
    _ALL,
    ("prompts",),
    cacheable=True,
    lists="prompts",
    page_field="prompts",
    stale_after=("notifications/prompts/list_changed",),
)
GET_PROMPT: Final[Method[GetPromptRequestParams, GetPromptResult]] = _request(
    "prompts/get",
    "client",
    "GetPromptRequestParams",
    "GetPromptResult",
    _ALL,
    ("prompts",),
    input_capable=True,
    name_field="name",
    target="prompt",
    target_field="name",
)
LIST_TOOLS: Final[Method[PaginatedRequestParams | None, ListToolsResult]] = _request(
    "tools/list",
    "client",
    "PaginatedRequestParams",
    "ListToolsResult",
    _ALL,
    ("tools",),
    cacheable=True,
    lists="tools",
    page_field="tools",
    stale_after=("notifications/tools/list_changed",),
)
CALL_TOOL: Final[Method[CallToolRequestParams, CallToolResult]] = _request(
    "tools/call",
    "client",
    "CallToolRequestParams",
    "CallToolResult",
    _ALL,
    ("tools",),
    input_capable=True,
    name_field="name",
    target="tool",
    target_field="name",
)
COMPLETE: Final[Method[CompleteRequestParams, CompleteResult]] = _request(
    "completion/complete",
    "client",
    "CompleteRequestParams",
    "CompleteResult",
    _ALL,
    ("completions",),
)
SET_LOG_LEVEL: Final[Method[SetLevelRequestParams, EmptyResult]] = _request(
    "logging/setLevel",
    "client",
    "SetLevelRequestParams",
    "EmptyResult",
    _SESSION_ONLY,
    ("logging",),
    removed_in_stateless=True,
)
RESOURCE_LIST_CHANGED: Final[Method[NotificationParams | None, None]] = _notification(
    "notifications/resources/list_changed",
    "server",
    "NotificationParams",
    _ALL,
    ("resources", "listChanged"),
)
RESOURCE_UPDATED: Final[Method[ResourceUpdatedNotificationParams, None]] = _notification(
    "notifications/resources/updated",
    "server",
    "ResourceUpdatedNotificationParams",
    _ALL,
    ("resources", "subscribe"),
)
PROMPT_LIST_CHANGED: Final[Method[NotificationParams | None, None]] = _notification(
    "notifications/prompts/list_changed",
    "server",
    "NotificationParams",
    _ALL,
    ("prompts", "listChanged"),
)
TOOL_LIST_CHANGED: Final[Method[NotificationParams | None, None]] = _notification(
    "notifications/tools/list_changed",
    "server",
    "NotificationParams",
    _ALL,
    ("tools", "listChanged"),
)
LOG_MESSAGE: Final[Method[LoggingMessageNotificationParams, None]] = _notification(
    "notifications/message",
    "server",
    "LoggingMessageNotificationParams",
    _ALL,
    ("logging",),
)

# --- client features (requests the server sends) --------------------------------------------

CREATE_MESSAGE: Final[Method[CreateMessageRequestParams, CreateMessageResult]] = _request(
    "sampling/createMessage",
    "server",
    "CreateMessageRequestParams",
    "CreateMessageResult",
    _SESSION_ONLY,  # 2026: an input request inside input_required, not a request
    ("sampling",),
)
LIST_ROOTS: Final[Method[RequestParams | None, ListRootsResult]] = _request(
    "roots/list", "server", "RequestParams", "ListRootsResult", _SESSION_ONLY, ("roots",)
)
ROOTS_LIST_CHANGED: Final[Method[NotificationParams | None, None]] = _notification(
    "notifications/roots/list_changed",
    "client",
    "NotificationParams",
    _SESSION_ONLY,
    ("roots", "listChanged"),
    removed_in_stateless=True,
)
ELICIT: Final[Method[ElicitRequestParams, ElicitResult]] = _request(
    "elicitation/create",
    "server",
    "ElicitRequestParams",
    "ElicitResult",
    _since("2025-06-18", draft=False),
    ("elicitation",),
)
ELICITATION_COMPLETE: Final[Method[ElicitationCompleteNotificationParams, None]] = _notification(
    "notifications/elicitation/complete",
    "server",
    "ElicitationCompleteNotificationParams",
    _V2025_11_25,
    removed_in_stateless=True,
)

# --- tasks (2025-11-25): either side may be the receiver of a task-augmented request --------

GET_TASK: Final[Method[GetTaskRequestParams, GetTaskResult]] = _request(
    "tasks/get", "both", "GetTaskRequestParams", "GetTaskResult", _V2025_11_25, ("tasks",)
)
GET_TASK_RESULT: Final[Method[GetTaskPayloadRequestParams, dict[str, Any]]] = _request(
    "tasks/result", "both", "GetTaskPayloadRequestParams", None, _V2025_11_25, ("tasks",)
)
LIST_TASKS: Final[Method[PaginatedRequestParams | None, ListTasksResult]] = _request(
    "tasks/list",
    "both",
    "PaginatedRequestParams",
    "ListTasksResult",
    _V2025_11_25,
    ("tasks", "list"),
)
CANCEL_TASK: Final[Method[CancelTaskRequestParams, CancelTaskResult]] = _request(
    "tasks/cancel",
    "both",
    "CancelTaskRequestParams",
    "CancelTaskResult",
    _V2025_11_25,
    ("tasks", "cancel"),
)
TASK_STATUS: Final[Method[TaskStatusNotificationParams, None]] = _notification(
    "notifications/tasks/status", "both", "TaskStatusNotificationParams", _V2025_11_25, ("tasks",)
)

# --- the stateless revision ------------------------------------------------------------------

DISCOVER: Final[Method[RequestParams | None, DiscoverResult]] = _request(
    "server/discover", "client", "RequestParams", "DiscoverResult", _DRAFT_ONLY, cacheable=True
)
LISTEN: Final[Method[SubscriptionsListenRequestParams, SubscriptionsListenResult]] = _request(
    "subscriptions/listen",
    "client",
    "SubscriptionsListenRequestParams",
    "SubscriptionsListenResult",
    _DRAFT_ONLY,
    target="resource",  # the resources its params list
)
LISTEN_ACKNOWLEDGED: Final[Method[SubscriptionsAcknowledgedNotificationParams, None]] = (
    _notification(
        "notifications/subscriptions/acknowledged",
        "server",
        "SubscriptionsAcknowledgedNotificationParams",
        _DRAFT_ONLY,
    )
)

#: Every method constant above, in the order of the spec's sections.
_SPECS: Final[tuple[Method[Any, Any], ...]] = tuple(
    value for value in list(globals().values()) if isinstance(value, Method)
)

METHODS: Final[Mapping[str, Method[Any, Any]]] = MappingProxyType({s.name: s for s in _SPECS})
"""Every known method by name."""


def lookup(method: str) -> Method[Any, Any] | None:
    """The spec of ``method``, or ``None`` if MCP has no such method (answer ``-32601``)."""
    return METHODS.get(method)


def expect_result(method: Method[Any, R], result: object) -> R:
    """``result`` as ``method``'s result type, which the core structured it as; raises
    :class:`~trimcp.errors.UnexpectedResult` for an answer of another kind (a task
    handle, a 2026 ``InputRequiredResult``). The one run-time check behind every typed
    request, so callers need no ``isinstance`` of their own."""
    expected = method.result_type
    if expected is not None and not isinstance(result, expected):
        raise UnexpectedResult(
            f"{method.name} was answered with {type(result).__name__}, not "
            f"{expected.__name__}; send it with send_request() to handle other answers"
        )
    return cast("R", result)


def task_capability(method: str) -> tuple[str, ...]:
    """The path (wire names) in the receiver's capabilities that allows a task-augmented
    ``method`` (params with ``task``, 2025-11-25): ``tasks.requests`` then the method's
    own segments (``tools/call`` -> ``tasks.requests.tools.call``,
    ``sampling/createMessage`` -> ``tasks.requests.sampling.createMessage``)."""
    return ("tasks", "requests", *method.split("/"))
