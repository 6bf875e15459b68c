"""Relayed requests: an inbound request of one session sent on by another, untouched.

A handler implementing :class:`trimcp.session.hooks.RequestRelay` names, per method, the
requests it relays and, per session, where to. The engine then skips the handler task and
the typed classes: the request's params (decoded JSON) go to the target session under a new
id, and the answer comes back as decoded JSON under the peer's id. One :class:`Relayed`
record ties the two halves: the origin session keeps it under the peer's id, the target
session under its own, among the requests it awaits.

The functions below are the engine's relaying, in the task that calls them: the origin
side (:func:`start`, :func:`settle`, :func:`drop`, :func:`notify`) and the target side
(:func:`send_in`, then :func:`answered`, :func:`failed`, :func:`progress` from the target's
reader). They keep their state in the two sessions' tables.
"""

from __future__ import annotations

import functools
import logging
from contextlib import suppress
from typing import TYPE_CHECKING, Any

import trio

from trimcp.errors import (
    INTERNAL_ERROR,
    LocalProtocolError,
    McpError,
    RemoteProtocolError,
    RequestTimeout,
    SessionClosed,
)
from trimcp.protocol.events import ProgressToken, RequestReceived, ResponseReceived
from trimcp.protocol.jsonrpc import RequestId
from trimcp.session.transport import Outgoing

if TYPE_CHECKING:
    from trimcp.session.engine import Session

logger = logging.getLogger("trimcp.session")

_PEER_GONE = (trio.EndOfChannel, trio.BrokenResourceError, trio.ClosedResourceError)


class Relayed:
    """One relayed request: who asked (``origin``, ``origin_id``, the peer's progress
    ``token``) and where it went (``target``, ``target_id``, set once it is sent)."""

    __slots__ = ("last_progress", "method", "origin", "origin_id", "target", "target_id", "token")

    def __init__(
        self, origin: Session, origin_id: RequestId, method: str, token: ProgressToken | None
    ) -> None:
        self.origin = origin
        self.origin_id = origin_id
        self.method = method
        self.token = token
        self.target: Session | None = None
        self.target_id: RequestId | None = None
        #: The last progress value passed on (progress must increase; a backend going
        #: backwards is not passed on).
        self.last_progress: float | None = None


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


# --- the origin session: the peer's request, relayed -------------------------------------


async def start(origin: Session, event: RequestReceived, target: Session) -> None:
    """Send the peer's request on through ``target`` (in ``origin``'s reader task)."""
    request_id = event.id
    token = event.progress_token
    relayed = Relayed(origin, request_id, event.method, token)
    origin._relayed[request_id] = relayed
    run = origin._run
    if run.handlers_idle.is_set():
        run.handlers_idle = trio.Event()
    params = event.params if token is None else without_progress_token(event.params)
    try:
        await send_in(target, relayed, params)
    except McpError as exc:  # not allowed there (LocalProtocolError), or SessionClosed
        origin._relayed.pop(request_id, None)
        ended(origin)
        error = (
            exc
            if isinstance(exc, LocalProtocolError)
            else McpError(INTERNAL_ERROR, f"Cannot relay {event.method}: {exc.message}")
        )
        with suppress(LocalProtocolError):
            data = origin._connection.send_error(request_id, error)
            await origin._reply(request_id, data, None)
    except BaseException:  # cancelled while the target's outbox was full: not sent
        origin._relayed.pop(request_id, None)
        origin._connection.forget_inbound(request_id)
        ended(origin)
        raise


async def settle(relayed: Relayed, result: Any, error: McpError | None) -> None:
    """Answer the peer's relayed request (from the target's reader)."""
    origin = relayed.origin
    request_id = relayed.origin_id
    if origin._relayed.get(request_id) is not relayed:
        return  # cancelled, or the origin closed, meanwhile
    del origin._relayed[request_id]
    ended(origin)
    try:
        if error is None:
            data = origin._connection.send_result(request_id, result)
        else:
            data = origin._connection.send_error(request_id, error)
    except LocalProtocolError as exc:
        logger.debug("relayed answer to %r dropped: %s", request_id, exc)
        return
    await origin._reply(request_id, data, None)


async def drop(relayed: Relayed, reason: str) -> None:
    """The peer cancelled (or the origin closes): forget it, cancel it at the target
    (shielded, bounded by the target's ``cancel_notify_timeout``)."""
    origin = relayed.origin
    request_id = relayed.origin_id
    if origin._relayed.pop(request_id, None) is None:
        return
    origin._connection.forget_inbound(request_id)
    ended(origin)
    target, target_id = relayed.target, relayed.target_id
    if target is not None and target_id is not None and target._waiters.get(target_id) is relayed:
        del target._waiters[target_id]
        await target._cancel_outbound(target_id, None, reason)


def ended(origin: Session) -> None:
    """A relayed request of ``origin`` is over: its reader and closer may go on."""
    run = origin._run
    if not origin._contexts and not origin._relayed:
        run.handlers_idle.set()
    run.reader_wakeup.set()


async def notify(target: Session, method: str, params: Any) -> None:
    """Relay the peer's notification (from the origin's reader, in order with requests)."""
    try:
        await target.send_notification(method, params)
    except (SessionClosed, LocalProtocolError) as exc:
        logger.debug("%s not relayed: %s", method, exc)


# --- the target session: sends it as its own, passes back what comes -------------------


async def send_in(target: Session, relayed: Relayed, params: Any) -> None:
    """Send a relayed request as ``target``'s own; its answer goes to the origin.

    Raises :class:`SessionClosed` or :class:`LocalProtocolError` (not sent), and
    :class:`RequestTimeout` when the target's outbox stayed full for ``request_timeout``.
    Cancellation: atomic (queued whole, or forgotten).
    """
    if target.closing:
        raise SessionClosed(target.close_reason or "the session is closing")
    if target._phase:
        target.wake()
    target_id, data = target._connection.send_request(
        relayed.method, params, with_progress=relayed.token is not None, raw_result=True
    )
    relayed.target, relayed.target_id = target, target_id
    target._waiters[target_id] = relayed
    run = target._run
    run.reader_wakeup.set()  # a reader paused at max_in_flight must read the answer
    message = Outgoing(data)
    if run.outbox.write_now(message):
        return
    try:
        try:
            run.outbox.send_end.send_nowait(message)
            full = False
        except trio.WouldBlock:
            full = True
        if full:
            # The origin's reader waits here (backpressure), but not for ever: it must go
            # on reading to see its own peer leave.
            timeout = target.options.request_timeout
            with trio.move_on_after(timeout) as waited:
                await run.outbox.send_end.send(message)
            if waited.cancelled_caught:
                raise RequestTimeout(f"the peer read nothing for {timeout:g}s")
    except BaseException as exc:
        target._waiters.pop(target_id, None)
        target._connection.cancel_outbound(target_id)
        if isinstance(exc, _PEER_GONE):
            raise SessionClosed("the session is closed") from None
        raise


async def answered(target: Session, relayed: Relayed, event: ResponseReceived) -> None:
    """The target's peer answered (in the target's reader)."""
    del target._waiters[event.id]
    if relayed.token is not None and target._connection.follows_task(event.id):
        # A task: its progress goes on after the answer, to the origin.
        target._task_progress[event.id] = functools.partial(task_progress, relayed)
        target._forget_ended_tasks()
    await settle(relayed, event.result, None)


async def failed(target: Session, relayed: Relayed, request_id: RequestId, error: McpError) -> None:
    """The target's peer answered with an error (or an answer our core found unusable)."""
    del target._waiters[request_id]
    if type(error) is RemoteProtocolError:  # found by our core, not sent by the peer
        error = McpError(error.code, f"The upstream answer is unusable: {error.message}")
    await settle(relayed, None, error)


async def progress(
    relayed: Relayed, value: float, total: float | None, message: str | None
) -> None:
    """Pass on the target's progress under the peer's token (while it is under way)."""
    if relayed.origin._relayed.get(relayed.origin_id) is relayed:
        await _pass_progress(relayed, value, total, message, relayed.origin_id)


async def task_progress(
    relayed: Relayed, value: float, total: float | None, message: str | None
) -> None:
    """Progress of the task a relayed request created, after its answer (the peer's token
    lives until the task ends; the target's connection tracks it)."""
    if not relayed.origin.closing:
        await _pass_progress(relayed, value, total, message, None)


async def _pass_progress(
    relayed: Relayed,
    value: float,
    total: float | None,
    message: str | None,
    related: RequestId | None,
) -> None:
    """Send the peer a relayed progress update under its own token, if it goes forward
    (progress must increase); a closed session or a refused notification drops it."""
    last = relayed.last_progress
    if relayed.token is None or (last is not None and not value > last):
        return
    relayed.last_progress = value
    params: dict[str, Any] = {"progressToken": relayed.token, "progress": value}
    if total is not None:
        params["total"] = total
    if message is not None:
        params["message"] = message
    with suppress(SessionClosed, LocalProtocolError):
        await relayed.origin.send_notification(
            "notifications/progress", params, related_request_id=related
        )


async def close_target(target: Session, reason: str) -> None:
    """``target`` closes: the relayed requests it still awaits answer their origins with
    an error (each bounded by ``cancel_notify_timeout``)."""
    for request_id, waiter in list(target._waiters.items()):
        if isinstance(waiter, Relayed):
            del target._waiters[request_id]
            error = McpError(
                INTERNAL_ERROR,
                f"The upstream session closed before answering {waiter.method} ({reason})",
            )
            with trio.move_on_after(target.options.cancel_notify_timeout):
                await settle(waiter, None, error)
