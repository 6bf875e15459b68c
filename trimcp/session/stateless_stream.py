"""One message stream (stdio), either era: the first request decides.

:func:`serve_either_era` reads the first message of a connection. A request carrying the
2026-07-28 ``_meta`` envelope makes the whole connection stateless
(:func:`serve_stateless_stream`); anything else (``initialize``, as every session-era client
starts) hands the connection, that first message included, to the session engine. One
server process therefore serves clients of both eras, each connection in its own.

A stateless stream has no session: each request runs in its own task and cancel scope
(:mod:`trimcp.session.stateless`), ``notifications/cancelled`` cancels the request it
names (nothing more is sent for it), and one writer task writes answers and notifications
in order (a session's :class:`~trimcp.session.writer.Outbox`). Bounded: at most
``max_in_flight`` requests run at once (past it the reader waits), the outbox holds
``outbox_size`` messages (writers wait), and at end of input the requests still running
get ``shutdown_grace`` seconds (listen streams end gracefully at once), then are
cancelled; what was answered is flushed within ``flush_timeout``.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any

import trio

from trimcp import serde
from trimcp.errors import INVALID_REQUEST, McpError
from trimcp.protocol import modern
from trimcp.protocol.jsonrpc import (
    InvalidMessage,
    Notification,
    Request,
    RequestId,
    classify,
    dump_json,
    encode_error,
    holds_long_digit_run,
    loads_screened,
    notification_object,
    parse_json,
)
from trimcp.protocol.stateless import RequestRefused, prepare
from trimcp.session.context import ContextOutlet, RequestContext
from trimcp.session.engine import Session, serve_session
from trimcp.session.hooks import ManyTransport
from trimcp.session.options import SessionOptions
from trimcp.session.outcome import handler_ended, handler_failed
from trimcp.session.stateless import StatelessHandler, encode_answer
from trimcp.session.transport import Decoded, MessageTooLarge, Outgoing, Transport
from trimcp.session.writer import Outbox

logger = logging.getLogger("trimcp.session")

_PEER_GONE = (trio.BrokenResourceError, trio.ClosedResourceError)

#: The name of every request's task (trio would make one per task from the method's
#: module and qualified name: an f-string per request).
_TASK_NAME = "trimcp 2026-07-28 request"

#: ``async def (ctx) -> result``: what answers one request.
RequestHandler = Callable[[RequestContext], Awaitable[Any]]

#: ``Outgoing(data, related)`` without its Python ``__new__`` (a NamedTuple's makes the
#: same tuple by this call): every answer makes one, and the class call costs about
#: 3,000 instructions against 500 (callgrind).
_outgoing = tuple.__new__

#: What :meth:`_Stream.take` makes each request's outlet with (then sets its slots).
_new_outlet = object.__new__


def _peer_gone(unwritten: int) -> None:
    # No session to close: the reader sees the peer leave and ends the stream.
    logger.debug("the peer is gone; %d messages not written", unwritten)


def _decode(raw: bytes | Decoded) -> Any:
    return raw.value if isinstance(raw, Decoded) else parse_json(raw)


def starts_stateless(raw: bytes | Decoded) -> bool:
    """Whether a connection's first message is a 2026-07-28 request."""
    try:
        value = _decode(raw)
    except InvalidMessage:
        return False
    return (
        type(value) is dict
        and "id" in value
        and "method" in value
        and modern.is_modern(value.get("params"))
    )


class _Replay:
    """A transport whose first ``receive`` returns a message already read."""

    def __init__(self, transport: Transport, first: bytes | Decoded) -> None:
        self._transport = transport
        self._first: bytes | Decoded | None = first

    async def receive(self) -> bytes | Decoded:
        first = self._first
        if first is not None:
            self._first = None
            return first
        return await self._transport.receive()

    async def send(self, messages: list[Outgoing]) -> None:
        await self._transport.send(messages)

    async def aclose(self) -> None:
        await self._transport.aclose()


#: Asked when a connection's first message is a 2026-07-28 request: whether to serve the
#: connection in that era. False serves it as a session instead, which refuses the request
#: as a session-era server does (a client in auto mode then falls back to ``initialize``
#: on the same connection): a proxy whose backend speaks only the session era says so.
ServesStateless = Callable[[], Awaitable[bool]]


async def serve_either_era(
    transport: Transport,
    handler: StatelessHandler,
    *,
    options: SessionOptions | None = None,
    task_status: trio.TaskStatus[Session | None] = trio.TASK_STATUS_IGNORED,
    serves_stateless: ServesStateless | None = None,
) -> None:
    """Serve ``transport`` in the era its first message asks for (see the module docstring).

    The one place a connection's era is chosen: every server shell serves a stream through
    it. Each message past the transport's size limit before the first is answered
    ``-32600`` and skipped (the next one decides). ``serves_stateless``: asked before a
    2026 first request is served as such (see :data:`ServesStateless`).

    Reports readiness at once (with None: which era is not known yet). Returns when the
    peer ends its input (or the session closes). Cancellation: a session closes with the
    engine's bounded close sequence; a stateless stream cancels its requests.
    """
    task_status.started(None)
    while True:
        try:
            first = await transport.receive()
        except trio.EndOfChannel:
            return
        except MessageTooLarge as exc:
            # Say so and read on: the era is the next message's.
            await transport.send([Outgoing(encode_error(None, exc))])
            continue
        break
    if starts_stateless(first) and (serves_stateless is None or await serves_stateless()):
        await serve_stateless_stream(transport, handler, first, options=options)
    else:
        await serve_session(_Replay(transport, first), handler, options=options)


class _StreamOutlet(ContextOutlet):
    """One request on the stream: where its notifications go (through the stream's
    outbox), its context while its handler runs (made by :meth:`context`, then kept:
    None before and after, since the context holds the outlet and a cycle per request
    would be left to the cyclic GC), and whether the client cancelled it. Its handler's
    deadline is the stream's handler timeout."""

    __slots__ = ("_stream", "cancelled")

    def __init__(self, stream: _Stream) -> None:
        self._stream = stream
        self.ctx = None
        self.timeout = stream.handler_timeout
        #: The client cancelled the request: nothing more is sent for it (work that
        #: outlives the request, a task made of it, still holds this outlet).
        self.cancelled = False

    async def send_notification(
        self, method: str, params: Any = None, *, related_request_id: RequestId | None = None
    ) -> None:
        if self.cancelled:
            return  # the client cancelled it: nothing more is sent for it
        raw = params if params is None or type(params) is dict else serde.unstructure(params)
        await self._stream.write(dump_json(notification_object(method, raw)), related_request_id)


class _Stream:
    def __init__(
        self, transport: Transport, handler: StatelessHandler, options: SessionOptions
    ) -> None:
        self.transport = transport
        self.handler = handler
        self.options = options
        self._max_in_flight = options.max_in_flight
        self.handler_timeout = options.handler_timeout
        #: The handler's method table, when it runs requests from it
        #: (:meth:`~trimcp.server.shell.ServerShell.stateless_table`; its handle_request
        #: runs the rest, server/discover always).
        table = getattr(handler, "stateless_table", None)
        self._table_get: Callable[[str], RequestHandler | None] | None = (
            None if table is None else table()
        )
        self.server_info = serde.unstructure(getattr(handler, "info", None))
        self.outbox = Outbox(transport, options.outbox_size, on_peer_gone=_peer_gone)
        #: The requests under way (from the reader's taking them to their end), by id.
        self.requests: dict[RequestId, _StreamOutlet] = {}
        # Made only while someone waits: the reader for room (at max_in_flight), the
        # wind-down for the last request to end. Most requests end with nobody waiting.
        self._room: trio.Event | None = None
        self._drained: trio.Event | None = None

    async def write(self, data: bytes, related: RequestId | None = None) -> None:
        message = Outgoing(data, related)
        if not self.outbox.queue_nowait(message):
            await self.outbox.queue(message)

    def take(
        self, raw: bytes | Decoded, nursery: trio.Nursery, screened: bool = False
    ) -> Awaitable[None] | None:
        """Act on one message read from the peer, without waiting in the common case: a
        request gets its task, a notification its effect. Returns what is left to await
        (an error to write, a request that waits for room or is refused), else None: the
        reader awaits nothing per request (no coroutine is made for it). ``screened``: as
        :func:`~trimcp.protocol.jsonrpc.parse_json`'s (such bytes go to
        :data:`~trimcp.protocol.jsonrpc.loads_screened` first)."""
        try:
            if screened and type(raw) is bytes and loads_screened is not None:
                # (parse_json of a screened text, inline: every pipelined message asks)
                try:
                    value = loads_screened(raw)
                except ValueError:
                    value = parse_json(raw, True)
            else:
                value = raw.value if isinstance(raw, Decoded) else parse_json(raw, screened)
            if type(value) is list:
                raise InvalidMessage(INVALID_REQUEST, "Invalid request: 2026-07-28 has no batches")
            message = classify(value)
        except InvalidMessage as exc:
            return self.write(encode_error(exc.request_id, exc)) if exc.replyable else None
        if type(message) is Request:
            requests = self.requests
            if (
                message.id in requests
                or len(requests) >= self._max_in_flight
                or message.method == "initialize"
            ):
                return self._on_request(message, nursery)  # refused, or waits for room
            # _StreamOutlet(self) without the class call (its __init__'s frame and the
            # call's argument tuple): every request makes one.
            outlet = requests[message.id] = _new_outlet(_StreamOutlet)
            outlet._stream = self
            outlet.ctx = None
            outlet.timeout = self.handler_timeout
            outlet.cancelled = False
            nursery.start_soon(self._run, message, outlet, name=_TASK_NAME)
        elif type(message) is Notification:
            self._on_notification(message)
        else:
            logger.debug("ignored a response from the client (2026 servers send no requests)")
        return None

    def _on_notification(self, note: Notification) -> None:
        if note.method != "notifications/cancelled":
            return
        request_id = (note.params or {}).get("requestId")
        if not (type(request_id) is int or type(request_id) is str):
            return
        outlet = self.requests.get(request_id)
        if outlet is None:
            return
        ctx = outlet.ctx
        if ctx is not None:
            outlet.cancelled = ctx.cancelled_by_peer = True
            ctx.cancel_scope.cancel()

    async def _on_request(self, request: Request, nursery: trio.Nursery) -> None:
        request_id = request.id
        requests = self.requests
        if request_id in requests:
            await self.write(
                encode_error(
                    request_id,
                    McpError(
                        INVALID_REQUEST, f"Invalid request: id {request_id!r} is already in use"
                    ),
                )
            )
            return
        if request.method == "initialize" and not modern.is_modern(request.params):
            await self.write(
                encode_error(
                    request_id,
                    McpError(
                        INVALID_REQUEST,
                        "Invalid request: this connection began with a 2026-07-28 request, so it "
                        "serves 2026-07-28 only; start a new connection to use initialize",
                    ),
                )
            )
            return
        while len(requests) >= self._max_in_flight:
            room = self._room = trio.Event()
            await room.wait()
        outlet = requests[request_id] = _StreamOutlet(self)
        nursery.start_soon(self._run, request, outlet, name=_TASK_NAME)

    @trio.lowlevel.enable_ki_protection  # as run_handler: a Ctrl-C goes to the main task
    async def _run(self, request: Request, outlet: _StreamOutlet) -> None:
        request_id = request.id
        try:
            # run_request(), one frame fewer: the context (made and kept by the outlet
            # once the request passed its checks), the handler in the request's scope,
            # the answer (none when the client cancelled it).
            try:
                ctx = prepare(self.handler, request, outlet.context)
            except RequestRefused as refused:
                await self.write(refused.encode(), request_id)
                return
            table_get = self._table_get
            method = request.method
            handle = None if table_get is None or method == "server/discover" else table_get(method)
            if handle is None:
                handle = self.handler.handle_request
            # run_handler(), inline (its coroutine and Outcome per request), with its
            # mapping (handler_failed, handler_ended). The context was made just now: the
            # peer cannot have cancelled it yet (nothing was awaited since).
            scope = ctx.cancel_scope
            result: Any = None
            error: McpError | None = None
            try:
                with scope:
                    result = await handle(ctx)
            except BaseException as exc:
                error = handler_failed(ctx, exc)
                if error is None:
                    raise
            if error is not None or ctx.cancelled_by_peer or scope.cancelled_caught:
                outcome = handler_ended(ctx, result, error)
                if outcome.silent:
                    return
                result, error = outcome.result, outcome.error
            message = _outgoing(
                Outgoing,
                (encode_answer(request_id, result, error, self.server_info), request_id, ()),
            )
            if not self.outbox.queue_nowait(message):
                await self.outbox.queue(message)
        finally:
            # The request ended: its outlet lets go of its context (which holds the
            # outlet: no cycle is left), it leaves the table, the reader waiting for
            # room and the wind-down waiting for the last one are woken.
            outlet.ctx = None
            requests = self.requests
            del requests[request_id]
            room = self._room
            if room is not None:
                self._room = None
                room.set()
            if not requests and self._drained is not None:
                self._drained.set()

    async def _all_ended(self) -> None:
        if self.requests:
            drained = self._drained = trio.Event()
            await drained.wait()

    def _contexts(self) -> list[RequestContext]:
        return [outlet.ctx for outlet in self.requests.values() if outlet.ctx is not None]

    async def wind_down(self) -> None:
        """End of input: listen streams end, the rest get the grace period, then cancel."""
        for ctx in self._contexts():
            ctx.request_end()
        with trio.move_on_after(self.options.shutdown_grace):
            await self._all_ended()
        for ctx in self._contexts():
            ctx.cancel_scope.cancel()
        with trio.move_on_after(self.options.shutdown_grace):
            await self._all_ended()


async def serve_stateless_stream(
    transport: Transport,
    handler: StatelessHandler,
    first: bytes | Decoded | None = None,
    *,
    options: SessionOptions | None = None,
) -> None:
    """Serve 2026-07-28 requests from ``transport`` until the peer ends its input.

    ``first``: a message already read from it. Bounds and shutdown: see the module
    docstring. Cancellation: every running request is cancelled; nothing more is written.
    """
    stream = _Stream(transport, handler, options or SessionOptions())
    try:
        async with trio.open_nursery() as writers:
            writers.start_soon(stream.outbox.write_loop)
            async with trio.open_nursery() as requests:
                if first is not None:
                    pending = stream.take(first, requests)
                    if pending is not None:
                        await pending
                # Every message a read brought at once, where the transport can (a pipe
                # read holds many pipelined requests): one await per read.
                receive_many = (
                    transport.receive_many if isinstance(transport, ManyTransport) else None
                )
                while True:
                    try:
                        raws: list[bytes] | list[bytes | Decoded]
                        if receive_many is None:
                            raws = [await transport.receive()]
                            screened = False
                        else:
                            raws = await receive_many()
                            # The big-integer check of parse_json, once for every line of
                            # the read (a run of digits cannot cross the line break).
                            screened = len(raws) > 1 and not holds_long_digit_run(b"\n".join(raws))
                    except trio.EndOfChannel:
                        break
                    except _PEER_GONE:
                        break
                    except MessageTooLarge as exc:
                        await stream.write(encode_error(None, exc))
                        continue
                    for raw in raws:
                        pending = stream.take(raw, requests, screened)
                        if pending is not None:
                            await pending
                await stream.wind_down()
            # The writer drains what was answered, then ends (bounded).
            stream.outbox.send_end.close()
            writers.cancel_scope.deadline = trio.current_time() + stream.options.flush_timeout
    finally:
        with trio.CancelScope(shield=True), trio.move_on_after(stream.options.close_timeout):
            await transport.aclose()
