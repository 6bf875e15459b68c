"""Every MCP method as data: who sends it, its params and result types, where it exists.

One table, :data:`METHODS`, built from the ``ClientRequest``/``ServerRequest``/
``ClientNotification``/``ServerNotification`` unions of each revision's schema (a test
checks it against them). Look methods up with :func:`lookup`; nothing here does I/O.
"""

from collections.abc import Mapping
from types import MappingProxyType, UnionType
from typing import Any, Final, Literal

import attrs

import trimcp.types
from trimcp._record import Record

REVISIONS: Final[tuple[str, ...]] = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
"""The protocol revisions trimcp speaks, oldest first."""

DRAFT_REVISION: Final = "2026-07-28"
"""The next (stateless) revision; methods that exist in it list it in ``revisions``."""

Kind = Literal["request", "notification"]
Sender = Literal["client", "server", "both"]


@attrs.frozen(repr=False, eq=False)
class MethodSpec(Record):
    """What the protocol says about one method.

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
    """

    name: str
    kind: Kind
    sender: Sender
    #: The names in :mod:`trimcp.types` of ``params_type`` and ``result_type``: the table
    #: names its types, and each is loaded on first use (a stdio server's start loads
    #: only the wire types it meets).
    params_name: str | None
    result_name: str | None
    revisions: frozenset[str]
    capability: tuple[str, ...] | None

    @property
    def params_type(self) -> type | UnionType | None:
        name = self.params_name  # every request asks: one dict lookup once resolved
        return None if name is None else _WIRE_TYPES.get(name) or _wire_type(name)

    @property
    def result_type(self) -> type | None:
        name = self.result_name
        if name is None:
            return None
        result: type = _WIRE_TYPES.get(name) or _wire_type(name)
        return result


_WIRE_TYPES: dict[str, Any] = {}


def _wire_type(name: str) -> Any:
    found = _WIRE_TYPES.get(name)
    if found is None:
        found = _WIRE_TYPES[name] = getattr(trimcp.types, name)
    return found


class _TypeNames:
    """``t.InitializeResult`` is the string ``"InitializeResult"``: the table below reads
    as if it held the types, and holds their names."""

    def __getattr__(self, name: str) -> str:
        return name


t: Final = _TypeNames()


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
) -> MethodSpec:
    return MethodSpec(name, "request", sender, params, result, revisions, capability)


def _notification(
    name: str,
    sender: Sender,
    params: str,
    revisions: frozenset[str],
    capability: tuple[str, ...] | None = None,
) -> MethodSpec:
    return MethodSpec(name, "notification", sender, params, None, revisions, capability)


_SPECS: Final = (
    # Lifecycle and utilities.
    _request("initialize", "client", t.InitializeRequestParams, t.InitializeResult, _SESSION_ONLY),
    _request("ping", "both", t.RequestParams, t.EmptyResult, _SESSION_ONLY),
    _notification("notifications/initialized", "client", t.NotificationParams, _SESSION_ONLY),
    _notification("notifications/cancelled", "both", t.CancelledNotificationParams, _ALL),
    _notification(
        "notifications/progress",
        "both",
        t.ProgressNotificationParams,
        _ALL,  # server-only in the draft revision
    ),
    # Server features (requests the client sends).
    _request(
        "resources/list",
        "client",
        t.PaginatedRequestParams,
        t.ListResourcesResult,
        _ALL,
        ("resources",),
    ),
    _request(
        "resources/templates/list",
        "client",
        t.PaginatedRequestParams,
        t.ListResourceTemplatesResult,
        _ALL,
        ("resources",),
    ),
    _request(
        "resources/read",
        "client",
        t.ReadResourceRequestParams,
        t.ReadResourceResult,
        _ALL,
        ("resources",),
    ),
    _request(
        "resources/subscribe",
        "client",
        t.SubscribeRequestParams,
        t.EmptyResult,
        _SESSION_ONLY,
        ("resources", "subscribe"),
    ),
    _request(
        "resources/unsubscribe",
        "client",
        t.UnsubscribeRequestParams,
        t.EmptyResult,
        _SESSION_ONLY,
        ("resources", "subscribe"),
    ),
    _request(
        "prompts/list", "client", t.PaginatedRequestParams, t.ListPromptsResult, _ALL, ("prompts",)
    ),
    _request(
        "prompts/get", "client", t.GetPromptRequestParams, t.GetPromptResult, _ALL, ("prompts",)
    ),
    _request("tools/list", "client", t.PaginatedRequestParams, t.ListToolsResult, _ALL, ("tools",)),
    _request("tools/call", "client", t.CallToolRequestParams, t.CallToolResult, _ALL, ("tools",)),
    # 2024-11-05 has completion/complete but no ``completions`` capability yet.
    _request(
        "completion/complete",
        "client",
        t.CompleteRequestParams,
        t.CompleteResult,
        _ALL,
        ("completions",),
    ),
    _request(
        "logging/setLevel",
        "client",
        t.SetLevelRequestParams,
        t.EmptyResult,
        _SESSION_ONLY,
        ("logging",),
    ),
    # Server notifications.
    _notification(
        "notifications/resources/list_changed",
        "server",
        t.NotificationParams,
        _ALL,
        ("resources", "listChanged"),
    ),
    _notification(
        "notifications/resources/updated",
        "server",
        t.ResourceUpdatedNotificationParams,
        _ALL,
        ("resources", "subscribe"),
    ),
    _notification(
        "notifications/prompts/list_changed",
        "server",
        t.NotificationParams,
        _ALL,
        ("prompts", "listChanged"),
    ),
    _notification(
        "notifications/tools/list_changed",
        "server",
        t.NotificationParams,
        _ALL,
        ("tools", "listChanged"),
    ),
    _notification(
        "notifications/message",
        "server",
        t.LoggingMessageNotificationParams,
        _ALL,
        ("logging",),
    ),
    # Client features (requests the server sends).
    _request(
        "sampling/createMessage",
        "server",
        t.CreateMessageRequestParams,
        t.CreateMessageResult,
        _SESSION_ONLY,
        ("sampling",),
    ),
    _request("roots/list", "server", t.RequestParams, t.ListRootsResult, _SESSION_ONLY, ("roots",)),
    _notification(
        "notifications/roots/list_changed",
        "client",
        t.NotificationParams,
        _SESSION_ONLY,
        ("roots", "listChanged"),
    ),
    _request(
        "elicitation/create",
        "server",
        t.ElicitRequestParams,
        t.ElicitResult,
        frozenset({"2025-06-18", "2025-11-25"}),
        ("elicitation",),
    ),
    # Sent only for URL-mode elicitations, which the *client* declares
    # (elicitation.url); the server has no capability of its own for it.
    _notification(
        "notifications/elicitation/complete",
        "server",
        t.ElicitationCompleteNotificationParams,
        _V2025_11_25,
    ),
    # Tasks (2025-11-25): either side may be the receiver of a task-augmented request.
    _request(
        "tasks/get", "both", t.GetTaskRequestParams, t.GetTaskResult, _V2025_11_25, ("tasks",)
    ),
    _request("tasks/result", "both", t.GetTaskPayloadRequestParams, None, _V2025_11_25, ("tasks",)),
    _request(
        "tasks/list",
        "both",
        t.PaginatedRequestParams,
        t.ListTasksResult,
        _V2025_11_25,
        ("tasks", "list"),
    ),
    _request(
        "tasks/cancel",
        "both",
        t.CancelTaskRequestParams,
        t.CancelTaskResult,
        _V2025_11_25,
        ("tasks", "cancel"),
    ),
    _notification(
        "notifications/tasks/status",
        "both",
        t.TaskStatusNotificationParams,
        _V2025_11_25,
        ("tasks",),
    ),
    # The stateless draft revision.
    _request("server/discover", "client", t.RequestParams, t.DiscoverResult, _DRAFT_ONLY),
    _request(
        "subscriptions/listen",
        "client",
        t.SubscriptionsListenRequestParams,
        t.SubscriptionsListenResult,
        _DRAFT_ONLY,
    ),
    _notification(
        "notifications/subscriptions/acknowledged",
        "server",
        t.SubscriptionsAcknowledgedNotificationParams,
        _DRAFT_ONLY,
    ),
)

METHODS: Final[Mapping[str, MethodSpec]] = MappingProxyType({s.name: s for s in _SPECS})
"""Every known method by name."""


def lookup(method: str) -> MethodSpec | None:
    """The spec of ``method``, or ``None`` if MCP has no such method (answer ``-32601``)."""
    return METHODS.get(method)


def task_capability(method: str) -> tuple[str, ...]:
    """The path (wire names) in the receiver's capabilities that allows a task-augmented
    ``method`` (params with ``task``, 2025-11-25): ``tasks.requests`` then the method's
    own segments (``tools/call`` -> ``tasks.requests.tools.call``,
    ``sampling/createMessage`` -> ``tasks.requests.sampling.createMessage``)."""
    return ("tasks", "requests", *method.split("/"))
