"""What a client application answers and hears: server requests and server notifications.

:class:`ClientHandlers` holds the callbacks an application registers, declares the client
capabilities that follow from them, and dispatches what the server sends:

- requests: ``sampling/createMessage``, ``elicitation/create``, ``roots/list`` (``ping`` is
  answered by the engine); anything else gets ``-32601``. Each runs in its own task inside
  the request's cancel scope, so a ``notifications/cancelled`` from the server cancels the
  handler (it sees ``trio.Cancelled``) and nothing is sent back.
- notifications: log messages, list changes, resource updates, URL-elicitation completion,
  and a catch-all. They run one at a time in the session's notifier task, in arrival
  order; a slow callback delays the ones after it and, once the bounded backlog is full,
  the session stops reading (backpressure), so keep them short or hand work to a task.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Awaitable, Callable, Collection, Sequence
from typing import Any, Literal, TypeAlias, TypedDict, TypeVar

import attrs

from trimcp._record import Record
from trimcp.errors import INVALID_PARAMS, METHOD_NOT_FOUND, McpError
from trimcp.session import RequestContext, Session
from trimcp.types import (
    ClientCapabilities,
    CreateMessageRequestParams,
    CreateMessageResult,
    ElicitationCapability,
    ElicitationCompleteNotificationParams,
    ElicitRequestParams,
    ElicitRequestURLParams,
    ElicitResult,
    ListRootsResult,
    LoggingMessageNotificationParams,
    ResourceUpdatedNotificationParams,
    Root,
    RootsCapability,
    SamplingCapability,
)

logger = logging.getLogger("trimcp.client")
#: Where server log messages go when the application registered no ``on_log_message``.
server_logger = logging.getLogger("trimcp.client.server_log")

T = TypeVar("T")

#: ``async (ctx, params) -> CreateMessageResult``: ask the application's LLM for a message.
SamplingHandler: TypeAlias = Callable[
    [RequestContext, CreateMessageRequestParams], Awaitable[CreateMessageResult]
]
#: ``async (ctx, params) -> ElicitResult``; params are form or URL mode (see ``mode``).
ElicitationHandler: TypeAlias = Callable[
    [RequestContext, ElicitRequestParams], Awaitable[ElicitResult]
]
#: ``async () -> roots``: called for every ``roots/list``.
RootsProvider: TypeAlias = Callable[[], Awaitable[Sequence[Root]]]
#: A callback with one argument; plain or async.
Callback: TypeAlias = Callable[[T], Awaitable[None] | None]
#: A callback with no arguments (``list_changed``); plain or async.
ListChangedCallback: TypeAlias = Callable[[], Awaitable[None] | None]
#: ``(method, params)`` for notifications nothing else handles; plain or async.
NotificationCallback: TypeAlias = Callable[[str, Any], Awaitable[None] | None]
ElicitationMode: TypeAlias = Literal["form", "url"]
_FORM_ONLY: tuple[ElicitationMode, ...] = ("form",)

_LOG_LEVELS = {
    "debug": logging.DEBUG,
    "info": logging.INFO,
    "notice": logging.INFO,
    "warning": logging.WARNING,
    "error": logging.ERROR,
    "critical": logging.CRITICAL,
    "alert": logging.CRITICAL,
    "emergency": logging.CRITICAL,
}


@attrs.frozen(kw_only=True, repr=False, eq=False)
class Progress(Record):
    """One progress notification for one of the client's requests (global ``on_progress``).

    ``method`` is the request's method and ``target`` what it is about: the tool name for
    ``tools/call``, the URI for ``resources/read``, the prompt name for ``prompts/get``
    (None otherwise).
    """

    method: str
    target: str | None
    progress: float
    total: float | None
    message: str | None


async def call_maybe_async(callback: Callable[..., Awaitable[None] | None], *args: Any) -> None:
    """Call a plain or async callback and await it if it returned an awaitable."""
    outcome = callback(*args)
    if inspect.isawaitable(outcome):
        await outcome


class HandlerKwargs(TypedDict, total=False):
    """The keyword arguments of :class:`ClientHandlers` (and of the client and openers)."""

    sampling_handler: SamplingHandler
    sampling_capability: SamplingCapability
    elicitation_handler: ElicitationHandler
    elicitation_modes: Collection[ElicitationMode]
    roots: Sequence[Root] | RootsProvider
    on_log_message: Callback[LoggingMessageNotificationParams]
    on_progress: Callback[Progress]
    on_tools_list_changed: ListChangedCallback
    on_resources_list_changed: ListChangedCallback
    on_prompts_list_changed: ListChangedCallback
    on_resource_updated: Callback[str]
    on_elicitation_complete: Callback[str]
    on_notification: NotificationCallback


class ClientHandlers:
    """The application's callbacks, and the capabilities they imply.

    ``sampling_handler`` declares ``sampling`` (``sampling_capability`` overrides the
    declared object, e.g. to announce ``tools``/``context`` support). ``elicitation_handler``
    declares ``elicitation`` with the modes in ``elicitation_modes`` (``("form",)`` by
    default; add ``"url"`` when the handler can open URLs). ``roots`` (a list or an async
    provider) declares ``roots`` with ``listChanged``. Notification callbacks declare
    nothing. Callbacks may be plain or async functions; an exception from a notification
    callback is logged and the session goes on.
    """

    def __init__(
        self,
        *,
        sampling_handler: SamplingHandler | None = None,
        sampling_capability: SamplingCapability | None = None,
        elicitation_handler: ElicitationHandler | None = None,
        elicitation_modes: Collection[ElicitationMode] = _FORM_ONLY,
        roots: Sequence[Root] | RootsProvider | None = None,
        on_log_message: Callback[LoggingMessageNotificationParams] | None = None,
        on_progress: Callback[Progress] | None = None,
        on_tools_list_changed: ListChangedCallback | None = None,
        on_resources_list_changed: ListChangedCallback | None = None,
        on_prompts_list_changed: ListChangedCallback | None = None,
        on_resource_updated: Callback[str] | None = None,
        on_elicitation_complete: Callback[str] | None = None,
        on_notification: NotificationCallback | None = None,
    ) -> None:
        modes = frozenset(elicitation_modes)
        if not modes or not modes <= {"form", "url"}:
            raise ValueError(f"elicitation_modes must be 'form' and/or 'url', not {modes!r}")
        self.sampling_handler = sampling_handler
        self.sampling_capability = sampling_capability
        self.elicitation_handler = elicitation_handler
        self.elicitation_modes = modes
        self.roots = roots
        self.on_log_message = on_log_message
        self.on_progress = on_progress
        self.on_tools_list_changed = on_tools_list_changed
        self.on_resources_list_changed = on_resources_list_changed
        self.on_prompts_list_changed = on_prompts_list_changed
        self.on_resource_updated = on_resource_updated
        self.on_elicitation_complete = on_elicitation_complete
        self.on_notification = on_notification

    def capabilities(self) -> ClientCapabilities:
        """The capabilities to declare in ``initialize``: exactly what is registered."""
        sampling = None
        if self.sampling_handler is not None:
            sampling = self.sampling_capability or SamplingCapability()
        elicitation = None
        if self.elicitation_handler is not None:
            elicitation = ElicitationCapability(
                form={} if "form" in self.elicitation_modes else None,
                url={} if "url" in self.elicitation_modes else None,
            )
        roots = RootsCapability(list_changed=True) if self.roots is not None else None
        return ClientCapabilities(sampling=sampling, elicitation=elicitation, roots=roots)

    # --- the SessionHandler contract ----------------------------------------------------------

    async def handle_request(self, ctx: RequestContext) -> Any:
        """Answer one server request; see the module docstring for cancellation."""
        method = ctx.method
        if method == "sampling/createMessage" and self.sampling_handler is not None:
            return await self.sampling_handler(ctx, ctx.params)
        if method == "elicitation/create" and self.elicitation_handler is not None:
            mode: ElicitationMode = (
                "url" if isinstance(ctx.params, ElicitRequestURLParams) else "form"
            )
            if mode not in self.elicitation_modes:
                raise McpError(
                    INVALID_PARAMS, f"This client does not support {mode}-mode elicitation"
                )
            return await self.elicitation_handler(ctx, ctx.params)
        if method == "roots/list" and self.roots is not None:
            roots = self.roots
            listed = await roots() if callable(roots) else roots
            return ListRootsResult(roots=list(listed))
        raise McpError(METHOD_NOT_FOUND, f"Method not found: {method}")

    async def handle_notification(self, session: Session, method: str, params: Any) -> None:
        """Run the callback registered for ``method`` (one at a time, in arrival order)."""
        if method == "notifications/message":
            assert isinstance(params, LoggingMessageNotificationParams)
            if self.on_log_message is not None:
                await call_maybe_async(self.on_log_message, params)
            else:
                server_logger.log(
                    _LOG_LEVELS.get(params.level, logging.INFO),
                    "%s%r",
                    f"[{params.logger}] " if params.logger else "",
                    params.data,
                )
            return
        list_changed = {
            "notifications/tools/list_changed": self.on_tools_list_changed,
            "notifications/resources/list_changed": self.on_resources_list_changed,
            "notifications/prompts/list_changed": self.on_prompts_list_changed,
        }
        if method in list_changed:
            callback = list_changed[method]
            if callback is not None:
                await call_maybe_async(callback)
            return
        if method == "notifications/resources/updated":
            assert isinstance(params, ResourceUpdatedNotificationParams)
            if self.on_resource_updated is not None:
                await call_maybe_async(self.on_resource_updated, params.uri)
            return
        if method == "notifications/elicitation/complete":
            assert isinstance(params, ElicitationCompleteNotificationParams)
            if self.on_elicitation_complete is not None:
                await call_maybe_async(self.on_elicitation_complete, params.elicitation_id)
            return
        if self.on_notification is not None:
            await call_maybe_async(self.on_notification, method, params)
        else:
            logger.debug("no handler for the server's %s notification", method)
