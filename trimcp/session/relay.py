"""Relayed requests: an inbound request of one session sent on by another, untouched.

A handler implementing :class:`trimcp.session.hooks.RequestRelay` names, per method, the
requests it relays and, per session, where to. The session then holds a :class:`Relay`,
which takes those requests off the engine: no handler task and no typed classes; the
request's params (decoded JSON) go to the target session under a new id, and the answer
comes back as decoded JSON under the peer's id. One :class:`Relayed` record ties the two
halves and owns their state: the origin session holds it in its inbound table under the
peer's id (an :class:`~trimcp.session.work.InboundWork`), the target session in its
outbound table under its own (an :class:`~trimcp.session.work.OutboundWork`), and each
engine passes it the events for its half.

A record reaches the two sessions through :class:`RelayOrigin` and :class:`RelayTarget`,
public members of the engine's ``Session``; it never touches their tables itself.
"""

from __future__ import annotations

import logging
from contextlib import suppress
from typing import TYPE_CHECKING, Any, Protocol

from trimcp.errors import (
    INTERNAL_ERROR,
    LocalProtocolError,
    McpError,
    RemoteProtocolError,
    SessionClosed,
)
from trimcp.protocol.events import NotificationReceived, ProgressToken, RequestReceived
from trimcp.protocol.jsonrpc import RequestId
from trimcp.session.hooks import RequestRelay
from trimcp.session.outbound import ProgressCallback

if TYPE_CHECKING:
    from trimcp.session.engine import Session
    from trimcp.session.work import InboundWork, OutboundWork

logger = logging.getLogger("trimcp.session")


class _Notifies(Protocol):
    async def send_notification(
        self, method: str, params: Any = None, *, related_request_id: RequestId | None = None
    ) -> None: ...


class RelayOrigin(_Notifies, Protocol):
    """What a relayed request needs of the session whose peer asked it (the origin)."""

    @property
    def closing(self) -> bool: ...

    def adopt_inbound(self, request_id: RequestId, work: InboundWork) -> None:
        """Hold ``work`` as the peer's request ``request_id`` under way."""
        ...

    def end_inbound(self, request_id: RequestId, *, forget: bool) -> None:
        """The peer's request is over (``forget``: it gets no answer)."""
        ...

    async def answer(self, request_id: RequestId, result: Any, error: McpError | None) -> None:
        """Answer the peer's request; LocalProtocolError when the core refuses."""
        ...


class RelayTarget(_Notifies, Protocol):
    """What a relayed request needs of the session it is sent through (the target)."""

    async def send_forwarded(
        self, method: str, params: Any, work: OutboundWork, *, with_progress: bool
    ) -> RequestId:
        """Send it as our own request; its answer goes to ``work``."""
        ...

    async def withdraw(self, request_id: RequestId, work: OutboundWork, reason: str) -> None:
        """Forget our request if ``work`` still awaits it, and tell the peer."""
        ...


class Relay:
    """A relaying session's router: which of its peer's requests and notifications go on
    to another session (its handler says), taken off the engine here."""

    __slots__ = ("handler",)

    def __init__(self, handler: RequestRelay) -> None:
        self.handler = handler

    def _target(self, origin: Session, method: str) -> Session | None:
        handler = self.handler
        return handler.relay_target(origin) if handler.relays(method) else None

    async def took_request(self, origin: Session, event: RequestReceived) -> bool:
        """Relay the peer's request if it goes on now (True); in ``origin``'s reader.
        (Never ``initialize``, and never a request of a batch: the engine asks neither.)"""
        target = self._target(origin, event.method)
        if target is None:
            return False
        token = event.progress_token
        relayed = Relayed(origin, event.id, event.method, token, target)
        params = event.params if token is None else without_progress_token(event.params)
        await relayed.start(params)
        return True

    async def took_notification(self, origin: Session, event: NotificationReceived) -> bool:
        """Relay the peer's notification if it goes on now (True): from ``origin``'s reader,
        in order with the relayed requests."""
        target = self._target(origin, event.method)
        if target is None:
            return False
        try:
            await target.send_notification(event.method, event.params)
        except (SessionClosed, LocalProtocolError) as exc:
            logger.debug("%s not relayed: %s", event.method, exc)
        return True


class Relayed:
    """One relayed request: who asked (``origin``, ``origin_id``, the peer's progress
    ``token``) and where it went (``target``, ``target_id`` once it is sent). ``live``
    until it ends at the origin (answered, cancelled, refused)."""

    __slots__ = (
        "last_progress",
        "live",
        "method",
        "origin",
        "origin_id",
        "target",
        "target_id",
        "token",
    )

    def __init__(
        self,
        origin: RelayOrigin,
        origin_id: RequestId,
        method: str,
        token: ProgressToken | None,
        target: RelayTarget,
    ) -> None:
        self.origin = origin
        self.origin_id = origin_id
        self.method = method
        self.token = token
        self.target = target
        self.target_id: RequestId | None = None
        #: The last progress value passed on (progress must increase; a backend going
        #: backwards is not passed on).
        self.last_progress: float | None = None
        self.live = True

    # --- at the origin: the peer's request (an InboundWork) ------------------------------

    async def start(self, params: Any) -> None:
        """Send the peer's request on through the target (in the origin's reader)."""
        origin, request_id = self.origin, self.origin_id
        origin.adopt_inbound(request_id, self)
        try:
            await self.target.send_forwarded(
                self.method, params, self, with_progress=self.token is not None
            )
        except McpError as exc:  # not allowed there (LocalProtocolError), or SessionClosed
            self._end(forget=False)
            error = (
                exc
                if isinstance(exc, LocalProtocolError)
                else McpError(INTERNAL_ERROR, f"Cannot relay {self.method}: {exc.message}")
            )
            with suppress(LocalProtocolError):
                await origin.answer(request_id, None, error)
        except BaseException:  # cancelled while the target's outbox was full: not sent
            self._end(forget=True)
            raise

    def _end(self, *, forget: bool) -> bool:
        """Over at the origin (False: it already was)."""
        if not self.live:
            return False
        self.live = False
        self.origin.end_inbound(self.origin_id, forget=forget)
        return True

    async def cancel(self, reason: str) -> None:
        """The peer cancelled (or the origin closes): forget it, cancel it at the target
        (shielded, bounded by the target's ``cancel_notify_timeout``)."""
        if not self._end(forget=True):
            return
        if self.target_id is not None:
            await self.target.withdraw(self.target_id, self, reason)

    async def _settle(self, result: Any, error: McpError | None) -> None:
        """Answer the peer's request (from the target's reader)."""
        if not self._end(forget=False):
            return  # cancelled, or the origin closed, meanwhile
        try:
            await self.origin.answer(self.origin_id, result, error)
        except LocalProtocolError as exc:
            logger.debug("relayed answer to %r dropped: %s", self.origin_id, exc)

    # --- at the target: our request (an OutboundWork) ------------------------------------

    def sent_as(self, request_id: RequestId) -> None:
        self.target_id = request_id

    @property
    def follow(self) -> ProgressCallback | None:
        """A task's progress goes on after the answer, to the origin (the peer's token
        lives until the task ends; the target's connection tracks it)."""
        return None if self.token is None else self.task_progress

    async def answered(self, result: Any) -> None:
        await self._settle(result, None)

    async def failed(self, error: McpError) -> None:
        if type(error) is RemoteProtocolError:  # found by our core, not sent by the peer
            error = McpError(error.code, f"The upstream answer is unusable: {error.message}")
        await self._settle(None, error)

    async def abandoned(self, reason: str) -> None:
        """The target closed before answering: the origin gets an error."""
        error = McpError(
            INTERNAL_ERROR,
            f"The upstream session closed before answering {self.method} ({reason})",
        )
        await self._settle(None, error)

    async def progressed(self, progress: float, total: float | None, message: str | None) -> None:
        """Pass on the target's progress under the peer's token (while it is under way)."""
        if self.live:
            await self._pass_progress(progress, total, message, self.origin_id)

    async def task_progress(
        self, progress: float, total: float | None, message: str | None
    ) -> None:
        """Progress of the task it created, after its answer."""
        if not self.origin.closing:
            await self._pass_progress(progress, total, message, None)

    async def _pass_progress(
        self,
        value: float,
        total: float | None,
        message: str | None,
        related: RequestId | None,
    ) -> None:
        """Send the peer a relayed progress update under its own token, if it goes forward
        (progress must increase); a closed session or a refused notification drops it."""
        last = self.last_progress
        if self.token is None or (last is not None and not value > last):
            return
        self.last_progress = value
        params: dict[str, Any] = {"progressToken": self.token, "progress": value}
        if total is not None:
            params["total"] = total
        if message is not None:
            params["message"] = message
        with suppress(SessionClosed, LocalProtocolError):
            await self.origin.send_notification(
                "notifications/progress", params, related_request_id=related
            )


def without_progress_token(params: Any) -> Any:
    """``params`` without the peer's ``_meta.progressToken`` (the target session allocates
    its own token; the peer's means nothing there). Copies; never changes ``params``."""
    if type(params) is not dict:
        return params
    meta = params.get("_meta")
    if type(meta) is not dict or "progressToken" not in meta:
        return params
    rest = {key: value for key, value in meta.items() if key != "progressToken"}
    copy = dict(params)
    if rest:
        copy["_meta"] = rest
    else:
        del copy["_meta"]
    return copy
