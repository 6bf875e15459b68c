"""What a request handler gets: the request, its cancel scope, and ways to talk back."""

from __future__ import annotations

import logging
from collections.abc import Callable, Hashable
from typing import TYPE_CHECKING, Any, Protocol

import trio

from trimcp._validators import DEFAULT
from trimcp.errors import LocalProtocolError
from trimcp.protocol.events import ProgressToken
from trimcp.protocol.jsonrpc import RequestId
from trimcp.protocol.negotiated import Negotiated
from trimcp.session.outbound import ProgressCallback

if TYPE_CHECKING:
    from trimcp.protocol.modern import TraceContext
    from trimcp.session.engine import Session

logger = logging.getLogger("trimcp.session")


class Outlet(Protocol):
    """Where the notifications tied to a request go: its session, or (a stateless
    2026-07-28 request) that request's own response stream."""

    async def send_notification(
        self, method: str, params: Any = None, *, related_request_id: RequestId | None = None
    ) -> None: ...


class RequestContext:
    """One inbound request being handled.

    The handler runs inside ``cancel_scope``: a ``notifications/cancelled`` from the peer,
    the optional handler timeout, or the session closing cancels it, and the handler sees
    ``trio.Cancelled`` at its next checkpoint. Whatever it returns after that is not sent.
    Messages sent through the context are tied to this request (Streamable HTTP puts them on
    the request's own stream).

    A stateless (2026-07-28) request has no session (``session`` is None): it brings its
    own ``negotiated`` value, its notifications go to ``outlet``, and it cannot send
    requests to the client (see :mod:`trimcp.session.stateless`).
    """

    __slots__ = (
        "_last_progress",
        "_negotiated",
        "_unanswered",
        "cancel_scope",
        "cancelled_by_peer",
        "end_requested",
        "end_wakeup",
        "method",
        "outlet",
        "params",
        "principal",
        "progress_token",
        "request_id",
        "session",
        "trace",
    )

    def __init__(
        self,
        session: Session | None,
        request_id: RequestId,
        method: str,
        params: Any,
        progress_token: ProgressToken | None,
        cancel_scope: trio.CancelScope,
        negotiated: Negotiated | None = None,
        outlet: Outlet | None = None,
        principal: Hashable | None = None,
        trace: TraceContext | None = None,
    ) -> None:
        self.session = session
        self.request_id = request_id
        self.method = method
        self.params = params
        self.progress_token = progress_token
        self.cancel_scope = cancel_scope
        #: True once the peer sent ``notifications/cancelled`` for this request.
        self.cancelled_by_peer = False
        self._last_progress: float | None = None
        self._negotiated = negotiated
        if outlet is None:
            if session is None:
                raise TypeError("a request without a session needs an outlet")
            outlet = session
        #: Where notifications tied to this request go.
        self.outlet: Outlet = outlet
        #: Who the request acts for, as the transport authenticated it (None: anonymous).
        self.principal = principal
        #: W3C trace context from the request's ``_meta`` (2026-07-28), if any.
        self.trace = trace
        #: The transport asked this (long-lived) request to end gracefully, with a result
        #: (a listen stream whose connection is winding down); see :meth:`request_end`.
        self.end_requested = False
        #: Set by :meth:`request_end`: what a long-lived handler waits on to notice it.
        self.end_wakeup: trio.Event | None = None
        self._unanswered: list[Callable[[], None]] | None = None

    def on_unanswered(self, release: Callable[[], None]) -> None:
        """Call ``release()`` if this request ends without its result handed over to the
        transport: the peer cancelled it or left, or it failed. For work the result
        names that only the result could let the peer reach (a task a 2026 server made
        of the call: nobody could ever cancel it). ``release`` is synchronous; its
        exceptions are logged."""
        if self._unanswered is None:
            self._unanswered = []
        self._unanswered.append(release)

    def unanswered(self) -> None:
        """This request ends without its result handed over: run what
        :meth:`on_unanswered` registered (once). Called by whoever drops the answer (the
        outcome mapping, a transport whose client left)."""
        releases, self._unanswered = self._unanswered, None
        for release in releases or ():
            try:
                release()
            except Exception:
                logger.exception(
                    "releasing the work of unanswered request %r failed", self.request_id
                )

    def request_end(self) -> None:
        """Ask a long-lived request to finish with its result (unlike a cancel, which ends
        it without one). Handlers that run until told (``subscriptions/listen``) check
        ``end_requested`` whenever ``end_wakeup`` fires."""
        self.end_requested = True
        if self.end_wakeup is not None:
            self.end_wakeup.set()

    @property
    def negotiated(self) -> Negotiated | None:
        """The version and capabilities in force for this request."""
        if self._negotiated is not None:
            return self._negotiated
        return self.session.negotiated if self.session is not None else None

    @property
    def stateless(self) -> bool:
        """Whether this is a stateless (2026-07-28) request, served without a session."""
        return self.session is None

    @property
    def cancel_requested(self) -> bool:
        """Whether this request has been cancelled (by the peer, a timeout or shutdown)."""
        return self.cancel_scope.cancel_called

    async def report_progress(
        self, progress: float, total: float | None = None, message: str | None = None
    ) -> None:
        """Send ``notifications/progress`` for this request; a no-op if the peer asked for none.

        ``progress`` must increase from one call to the next (the spec requires it); a value
        that does not raises :class:`LocalProtocolError`. Cancellation: atomic; the
        notification is either queued whole or not at all.
        """
        if self.progress_token is None:
            return
        if self._last_progress is not None and not progress > self._last_progress:
            raise LocalProtocolError(
                f"progress must increase: {progress!r} after {self._last_progress!r}"
            )
        self._last_progress = progress
        params: dict[str, Any] = {"progressToken": self.progress_token, "progress": progress}
        if total is not None:
            params["total"] = total
        if message is not None:
            params["message"] = message
        await self.outlet.send_notification(
            "notifications/progress", params, related_request_id=self.request_id
        )

    async def send_notification(self, method: str, params: Any = None) -> None:
        """Send a notification tied to this request. Cancellation: atomic, as above."""
        await self.outlet.send_notification(method, params, related_request_id=self.request_id)

    async def send_request(
        self,
        method: str,
        params: Any = None,
        *,
        timeout: float | None = DEFAULT,
        on_progress: ProgressCallback | None = None,
        reset_timeout_on_progress: bool = False,
    ) -> Any:
        """Send a request to the peer, tied to this request; see :meth:`Session.send_request`.

        Raises :class:`LocalProtocolError` for a stateless request: 2026-07-28 servers send
        no requests (the server framework asks through ``input_required`` instead).
        """
        if self.session is None:
            raise LocalProtocolError(
                f"Cannot send {method} to the client: a 2026-07-28 request has no session, "
                "so a server asks for input by answering input_required (ctx.elicit, "
                "ctx.sample and ctx.list_roots do this)"
            )
        kwargs: dict[str, Any] = {}
        if timeout is not DEFAULT:
            kwargs["timeout"] = timeout
        return await self.session.send_request(
            method,
            params,
            on_progress=on_progress,
            reset_timeout_on_progress=reset_timeout_on_progress,
            related_request_id=self.request_id,
            **kwargs,
        )


#: What :meth:`ContextOutlet.context` makes a context with (then sets every slot).
_new_context = object.__new__


class ContextOutlet:
    """The base of an outlet that makes its own request's context (stdio makes one outlet
    and one context per request): :meth:`context` is what
    :func:`~trimcp.protocol.stateless.prepare` makes it with, one frame per request (a
    function making the context besides would be a second). The context is kept in
    ``ctx`` once made; ``timeout`` (set by whoever makes the outlet) is the handler's
    deadline from then, None for none (a listen stream has none: it ends when the client
    or the server ends it). A subclass sends the notifications."""

    __slots__ = ("ctx", "timeout")

    ctx: RequestContext | None
    timeout: float | None

    async def send_notification(
        self, method: str, params: Any = None, *, related_request_id: RequestId | None = None
    ) -> None:
        raise NotImplementedError

    def context(
        self,
        request_id: RequestId,
        method: str,
        params: Any,
        progress_token: ProgressToken | None,
        negotiated: Negotiated,
        trace: TraceContext | None,
    ) -> RequestContext:
        """``RequestContext(None, request_id, method, params, progress_token, scope,
        negotiated, self, None, trace)``, a stateless request's anonymous context, in a
        cancel scope of its own (``timeout`` its deadline, given at creation: see
        :func:`~trimcp.session.stateless.request_context`), kept in ``ctx``: made
        without the class call (the ``__init__``'s frame and the call's argument tuple),
        every slot set as ``__init__`` sets it."""
        timeout = None if method == "subscriptions/listen" else self.timeout
        scope = (
            trio.CancelScope()
            if timeout is None
            else trio.CancelScope(deadline=trio.current_time() + timeout)
        )
        ctx: RequestContext = _new_context(RequestContext)
        ctx.session = None
        ctx.request_id = request_id
        ctx.method = method
        ctx.params = params
        ctx.progress_token = progress_token
        ctx.cancel_scope = scope
        ctx.cancelled_by_peer = False
        ctx._last_progress = None
        ctx._negotiated = negotiated
        ctx.outlet = self
        ctx.principal = None
        ctx.trace = trace
        ctx.end_requested = False
        ctx.end_wakeup = None
        ctx._unanswered = None
        self.ctx = ctx
        return ctx
