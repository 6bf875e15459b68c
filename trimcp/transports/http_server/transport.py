"""The transport of one Streamable HTTP session: POST bodies in, messages routed to streams.

The session engine sees an ordinary :class:`~trimcp.session.transport.Transport`. Inbound,
each POST body is one message (or batch) put on a bounded channel. Outbound, :meth:`send`
routes every message to exactly one stream and never waits for a client:

- the answer to request X (the engine marks it: :attr:`Outgoing.answers`), and anything
  sent with ``related_request_id`` X, goes on the stream of the POST that carried X (in
  JSON-response mode only the answer does; the rest goes to the standalone stream);
- everything else goes on the standalone GET stream; while none is open the newest
  ``backlog_size`` such messages are kept for the next GET and older ones are dropped
  (logged).

A POST stream ends once every request on it is answered (or cancelled by the client).
Routing reads only the engine's :class:`~trimcp.session.transport.Outgoing` record, never the
bytes, so any id (non-ASCII, escaped) routes alike.
"""

from __future__ import annotations

import logging
import math
from collections import deque
from collections.abc import Awaitable, Callable, Sequence
from contextvars import ContextVar
from functools import partial
from typing import Any, cast

import trio

from trimcp._sealed import SEALED
from trimcp.protocol.jsonrpc import RequestId
from trimcp.session import RequestContext
from trimcp.session.transport import Decoded, Outgoing
from trimcp.stores.base import StoreUnavailable
from trimcp.stores.events import (
    STANDALONE_STREAM,
    EventStore,
    FollowsStreams,
    NamesPostStreams,
    RecordsStreams,
)
from trimcp.transports.http_server.asgi import feed_bounded
from trimcp.transports.http_server.streams import (
    OutStream,
    Sink,
    sse_message,
    sse_priming,
    sse_retry,
)

logger = logging.getLogger("trimcp.http")


#: The transport of the session whose tasks are running (set by the task that runs the
#: session, inherited by every task the engine starts for it).
current_transport: ContextVar[HttpSessionTransport | None] = ContextVar(
    "trimcp_http_transport", default=None
)

_CLOSED = (trio.ClosedResourceError, trio.BrokenResourceError)

#: One POSTed message as the engine reads it: raw bytes, or the value the app already parsed.
Inbound = bytes | Decoded
InboundSend = trio.MemorySendChannel[Inbound]
InboundReceive = trio.MemoryReceiveChannel[Inbound]


class HttpSessionTransport:
    """One MCP session's side of the HTTP server (see the module docstring).

    ``store`` is the session's event store (None: streams are not resumable).
    """

    __slots__ = (
        "_backlog",
        "_backlog_size",
        "_closed_event",
        "_in_recv",
        "_in_send",
        "_inbound_queue",
        "_live",
        "_lock_",
        "_name_post",
        "_next_stream",
        "_reading",
        "_routes",
        "_store",
        "_unread",
        "claimed",
        "closed",
        "dropped",
        "forward",
        "retry_ms",
        "session_id",
        "shared_session_id",
        "standalone",
    )

    def __init__(
        self,
        *,
        store: EventStore | None,
        inbound_queue: int,
        backlog_size: int,
        retry_ms: int,
    ) -> None:
        self._store = store
        # A store shared by replicas names POST streams after their requests (one bound
        # method per such session; None, a pointer, for the in-memory default).
        self._name_post = store.post_stream_id if isinstance(store, NamesPostStreams) else None
        self.retry_ms = retry_ms
        # The inbound queue, the lock, the backlog and the closed event are made when
        # first needed and dropped while the session rests (most sessions are idle).
        self._inbound_queue = inbound_queue
        self._in_send: trio.MemorySendChannel[Inbound] | None = None
        self._in_recv: trio.MemoryReceiveChannel[Inbound] | None = None
        # Messages fed and not yet returned by receive(), and whether the reader is in
        # receive(): what reader_waiting() asks, without a statistics object per POST.
        self._unread = 0
        self._reading = False
        self._routes: dict[RequestId, OutStream] = {}
        self._live: dict[str, OutStream] = {}
        self._next_stream = 1
        self.standalone = OutStream(STANDALONE_STREAM if store is not None else None)
        self._backlog_size = backlog_size
        self._backlog: deque[bytes] | None = None
        self.dropped = 0
        # Storing + writing an event, and replaying + attaching a resumed stream, must not
        # interleave, or a resumed client could miss an event or get one twice.
        self._lock_: trio.StrictFIFOLock | None = None
        self.closed = False
        self._closed_event: trio.Event | None = None
        #: The session's ``Mcp-Session-Id`` (None: a stateless request's transport), for
        #: logs (see :attr:`trimcp.server.middleware.Call.session_id`).
        self.session_id: str | None = None
        #: The session's id when replicas share it (see :mod:`trimcp.server.replicas`).
        self.shared_session_id: str | None = None
        #: With replicas: hands a message for the GET stream to the replica holding it,
        #: when none is open here (True: handed over; see .relay in this package).
        self.forward: Callable[[bytes], Awaitable[bool]] | None = None
        #: With replicas: the client's GET stream last attached here (it may be between
        #: reconnects); cleared when it attaches to another replica.
        self.claimed = False

    @property
    def resumable(self) -> bool:
        return self._store is not None

    def has_standalone_stream(self) -> bool:
        """Whether the client's GET stream is here: attached now, or (with replicas) last
        attached here and not since to another replica (what is sent meanwhile is stored,
        and the client's resume replays it)."""
        return self.standalone.sink is not None or self.claimed

    # --- the engine's side (Transport protocol) -------------------------------------------

    def _inbound(self) -> tuple[InboundSend, InboundReceive]:
        if self._in_send is None or self._in_recv is None:
            channels = trio.open_memory_channel[Inbound](self._inbound_queue)
            self._in_send, self._in_recv = channels
            if self.closed:
                self._in_send.close()
                self._in_recv.close()
        return self._in_send, self._in_recv

    @property
    def _lock(self) -> trio.StrictFIFOLock:
        lock = self._lock_
        if lock is None:
            lock = self._lock_ = trio.StrictFIFOLock()
        return lock

    async def receive(self) -> Inbound:
        """The next POSTed message; ``EndOfChannel`` once closed. Cancellation: safe."""
        self._reading = True
        try:
            message = await self._inbound()[1].receive()
        except trio.ClosedResourceError:
            raise trio.EndOfChannel from None
        finally:
            self._reading = False
        self._unread -= 1
        return message

    def reader_waiting(self) -> bool:
        """Whether the engine's reader waits in :meth:`receive` with nothing queued for it
        or handed to it: all that was fed before is handled (see
        :meth:`~trimcp.session.engine.Session.receive_now`)."""
        return self._reading and not self._unread

    def can_rest(self) -> bool:
        """Whether no POSTed message waits for the engine (the session may rest).

        A POST whose stream is registered but whose body is not fed yet counts: between
        the two the app may await the event store (a remote one takes a round trip), and
        a session that rested then would never read the body.
        """
        if self._routes:
            return False
        return self._in_send is None or not self._in_send.statistics().current_buffer_used

    def rest(self) -> None:
        """The session rests: drop what only an awake session needs."""
        if self.can_rest() and (self._lock_ is None or not self._lock_.locked()):
            self._in_send = self._in_recv = None
            self._lock_ = None
        # An emptied dict keeps its table, and a fresh one costs 64 bytes: the shared sealed
        # one until a POST opens a stream (open_post_stream makes fresh ones).
        if not self._routes:
            self._routes = SEALED
        if not self._live:
            self._live = SEALED
        if not self._backlog:
            self._backlog = None

    def send_now(self, message: Outgoing) -> bool:
        """Deliver the answer to a JSON-mode POST now (True); anything else: False, and
        :meth:`send` takes it (see ``ImmediateTransport``). Such an answer is stored
        nowhere and written by the POST itself, so it takes neither the lock (which keeps
        stored events and resumes in order) nor a wait; the engine hands it over without
        a coroutine (nearly every call in JSON mode)."""
        answers = message.answers
        if not answers:
            return False
        routes = self._routes
        stream = routes.get(answers[0])
        if stream is None or not stream.json_mode:
            return False
        stream.json_body = message.data
        for request_id in answers:
            if stream.settle(request_id) and routes.get(request_id) is stream:
                del routes[request_id]
        if not stream.waiting:
            stream.finish()  # (a JSON-mode stream is never live)
        return True

    async def send(self, messages: Sequence[Outgoing]) -> None:
        """Route each message to its stream. Never waits for a client (see module doc)."""
        if len(messages) == 1 and self.send_now(messages[0]):
            return
        lock = self._lock
        try:
            lock.acquire_nowait()
        except trio.WouldBlock:
            await lock.acquire()
        try:
            for message in messages:
                await self._route(message)
        finally:
            lock.release()

    async def aclose(self) -> None:
        """End every stream and refuse further POSTs. Idempotent."""
        if self.closed:
            return
        self.closed = True
        if self._in_send is not None and self._in_recv is not None:
            self._in_send.close()
            self._in_recv.close()
        for stream in list(self._live.values()):
            stream.finish()
        # Streams the store does not name (JSON mode, no store) are only routed: their
        # POSTs wait for them to end too.
        for stream in list(self._routes.values()):
            stream.finish()
        self.standalone.finish()
        self._live.clear()
        self._routes.clear()
        if self._closed_event is not None:
            self._closed_event.set()

    async def wait_closed(self) -> None:
        if self.closed:
            return
        if self._closed_event is None:
            self._closed_event = trio.Event()
        await self._closed_event.wait()

    # --- the HTTP side ----------------------------------------------------------------------

    def in_flight(self, request_id: RequestId) -> bool:
        """Whether a request with this id is still waiting for its answer."""
        return request_id in self._routes

    async def open_post_stream(
        self,
        request_ids: Sequence[RequestId],
        *,
        json_mode: bool,
        sink: Sink | None,
        prime: bool,
        auth: object = None,
    ) -> OutStream:
        """Register a stream for the answers to ``request_ids`` (before the body is fed).

        With ``prime`` (and a store) the sink first gets the priming event. ``auth`` is the
        principal of the POST (handlers see it through :meth:`auth_for`).
        """
        stream = self.open_stream(request_ids, json_mode=json_mode, auth=auth)
        if sink is not None:
            stream_id = stream.stream_id
            if prime and stream_id is not None:
                await self._prime(stream_id, sink)
            stream.attach(sink)
        return stream

    def open_stream(
        self, request_ids: Sequence[RequestId], *, json_mode: bool, auth: object = None
    ) -> OutStream:
        """:meth:`open_post_stream` without a sink: it never waits. (A JSON-mode POST's
        stream, whose answer is kept in its ``json_body``, needs nothing more.)"""
        stream_id: str | None = None
        if self._store is not None and not json_mode:  # resumable
            number = self._next_stream
            self._next_stream += 1
            name = self._name_post
            stream_id = str(number) if name is None else name(number, request_ids)
        stream = OutStream(stream_id, json_mode=json_mode, requests=request_ids)
        stream.auth = auth
        routes = self._routes
        if routes is SEALED:  # it rested
            routes = self._routes = {}
        for request_id in request_ids:
            routes[request_id] = stream
        if stream_id is not None:
            if self._live is SEALED:
                self._live = {}
            self._live[stream_id] = stream
        return stream

    async def make_known(self, stream: OutStream) -> None:
        """``stream``'s response is about to be written (its client may resume it with any
        id it gets, maybe on another replica): with a store shared by replicas, make sure
        the store knows the stream exists before the client can learn an id of it (an
        event of it stored, or else a record, see :class:`RecordsStreams`: one round trip,
        only for a stream with nothing stored yet). Nothing for other stores; never raises
        for a store outage. Cancellation: safe."""
        store = self._store
        if stream.stream_id is None or not _implements(store, RecordsStreams):
            return
        await stream.wait_stored()  # (a quick answer on its way to the store)
        if not stream.in_store:
            await cast("RecordsStreams", store).record_stream(stream.stream_id)
            stream.in_store = True

    def auth_for(self, request_id: RequestId) -> Any:
        """The principal of the POST that carried ``request_id``."""
        stream = self._routes.get(request_id)
        return stream.auth if stream is not None else None

    def abandon(self, stream: OutStream) -> None:
        """Forget a stream whose body never reached the engine."""
        for request_id in stream.requests:
            stream.settle(request_id)
            if self._routes.get(request_id) is stream:
                del self._routes[request_id]
        self._end(stream)

    async def feed(self, body: Inbound, timeout: float) -> None:
        """Hand a POST body (as bytes, or already parsed) to the engine, waiting at most
        ``timeout`` for room.

        Raises :class:`HttpRejection`: 404 when the session is closed, 503 when the engine
        did not take the message in time. Cancellation: atomic, fed whole or not at all.
        """
        self._unread += 1
        try:
            await feed_bounded(self._inbound()[0], body, timeout)
        except BaseException:
            self._unread -= 1  # not fed
            raise

    def detach(self, sink: Sink) -> None:
        """A response ended (its client went away): stop writing into ``sink``."""
        self.standalone.detach(sink)
        for stream in self._live.values():
            stream.detach(sink)

    def forget_request(self, request_id: RequestId) -> None:
        """The client cancelled ``request_id``: no answer will come, so stop waiting for one."""
        stream = self._routes.pop(request_id, None)
        if stream is not None:
            stream.settle(request_id)
            if not stream.waiting:
                self._end(stream)

    async def open_standalone(self, sink: Sink, *, prime: bool) -> None:
        """Attach a GET response as the standalone stream (replacing any earlier one).

        It gets the priming event (if asked and resumable), then the backlog, then live
        messages.
        """
        async with self._lock:
            if self.closed:
                sink.finish()
                return
            if prime and self.standalone.stream_id is not None:
                await self._prime(self.standalone.stream_id, sink)
            backlog = self._backlog
            while backlog and sink.put(backlog.popleft()):
                pass
            self._backlog = None
            self.standalone.attach(sink)

    async def resume(
        self, last_event_id: str, sink: Sink, *, follow_timeout: float = math.inf
    ) -> Callable[[], Awaitable[None]] | bool:
        """Replay the events after ``last_event_id`` into ``sink``, then attach it to the
        stream if that stream is still live (else the sink ends after the replay).

        False when there is no store or the id is unknown. A stream another process is
        writing (a call running on another replica) ends after a replay that is not empty
        (with a ``retry`` field: the client resumes from there), and is followed when the
        client has all of it so far: returns the function that follows it into ``sink``
        (its events as they are stored, then the answer; see :class:`FollowsStreams`), for
        the caller to run while it pumps the sink; it ends the sink when done.
        """
        store = self._store
        if store is None:
            return False
        async with self._lock:
            found = await store.replay_after(last_event_id)
            if found is None:
                return False
            stream_id, events = found
            if events:
                # One chunk: the store already bounds what a replay can hold.
                replay = b"".join([sse_message(data, _checked(eid)) for eid, data in events])
                if not sink.put(replay):
                    return True  # the client resumes again from the last event it got
            if stream_id == STANDALONE_STREAM:
                self._backlog = None
                stream: OutStream | None = self.standalone
            else:
                stream = self._live.get(stream_id)
            if stream is None and not self.closed and _implements(store, FollowsStreams):
                if not events:
                    follows = cast("FollowsStreams", store)
                    return partial(self._follow, follows, last_event_id, sink, follow_timeout)
                # Behind another replica's stream: end after the replay, so the client's
                # next resume starts from the last event it got. Following on would risk a
                # duplicate: clients (the official SDK among them) that lose a resumed
                # stream midway resume again from the id they resumed that stream with.
                sink.put(sse_retry(self.retry_ms))
            if stream is None or stream.finished or self.closed:
                sink.finish()
            else:
                stream.attach(sink)
            return True

    async def _follow(self, store: FollowsStreams, after: str, sink: Sink, timeout: float) -> None:
        """Follow another process's stream into ``sink``, then end it (with a ``retry``
        field when the stream is not complete, so the client resumes again)."""

        def deliver(events: list[tuple[str, bytes]]) -> bool:
            if self.closed or sink.gone:
                return False
            return sink.put(b"".join([sse_message(data, _checked(eid)) for eid, data in events]))

        complete = False
        try:
            complete = await store.follow(after, deliver, timeout=timeout)
        except StoreUnavailable as error:
            logger.warning("a resumed stream stopped following its replica: %s", error)
        finally:
            if not complete and not sink.finished:
                sink.put(sse_retry(self.retry_ms))
            sink.finish()

    def close_stream_of(self, request_id: RequestId) -> bool:
        """End the HTTP response carrying ``request_id`` now, keeping the stream alive.

        The client reconnects (after ``retry_ms``) with ``Last-Event-ID`` and receives the
        rest. Only for resumable SSE streams; returns False otherwise.
        """
        stream = self._routes.get(request_id)
        if stream is None or stream.stream_id is None:
            return False
        sink = stream.sink
        if sink is not None:
            sink.put(sse_retry(self.retry_ms))
            sink.finish()
            stream.sink = None
        return True

    # --- routing ----------------------------------------------------------------------------

    async def _prime(self, stream_id: str, sink: Sink) -> None:
        assert self._store is not None
        event_id = _checked(await self._store.store(stream_id, b""))
        if event_id is not None:
            sink.put(sse_priming(event_id, self.retry_ms))

    def _end(self, stream: OutStream) -> None:
        stream.finish()
        if stream.stream_id is not None:
            self._live.pop(stream.stream_id, None)

    async def _route(self, message: Outgoing) -> None:
        # By meaning only (what the engine says the message answers or belongs to): the
        # bytes are never inspected, so any id the encoder may escape routes the same way.
        data = message.data
        answers = message.answers
        if answers:
            routes = self._routes
            for request_id in answers:
                stream = routes.get(request_id)
                if stream is not None:
                    await self._deliver(stream, data, answers)
                    return
            # Every request it answers was cancelled by the client: nobody waits for it.
            logger.debug("dropped the answer to %r: the client cancelled it", answers[0])
            return
        related = message.related
        if related is not None:
            stream = self._routes.get(related)
            if stream is not None and not stream.json_mode:
                await self._deliver(stream, data, ())
                return
        await self._deliver(self.standalone, data, ())

    async def deliver_relayed(self, data: bytes) -> None:
        """A message another replica relayed for the GET stream held here: stored and sent
        on it (or kept in the backlog), never relayed again."""
        async with self._lock:
            await self._deliver(self.standalone, data, (), relayed=True)

    async def _deliver(
        self, stream: OutStream, data: bytes, answered: Sequence[RequestId], relayed: bool = False
    ) -> None:
        if (
            not relayed
            and stream is self.standalone
            and stream.sink is None
            and self.forward is not None
            and await self.forward(data)
        ):
            return  # the replica holding the GET stream stores and sends it
        if stream.json_mode:
            stream.json_body = data
        else:
            event_id = None
            if stream.stream_id is not None:
                assert self._store is not None
                stream.storing()
                try:
                    event_id = _checked(await self._store.store(stream.stream_id, data))
                finally:
                    stream.stored()
            chunk = sse_message(data, event_id)
            if not stream.emit(chunk) and stream is self.standalone:
                backlog = self._backlog
                if backlog is None:
                    backlog = self._backlog = deque(maxlen=self._backlog_size)
                if len(backlog) == self._backlog_size:
                    self.dropped += 1
                    if self.dropped == 1 or self.dropped % 1000 == 0:
                        logger.warning(
                            "no GET stream is open: dropped %d server messages so far "
                            "(backlog holds %d)",
                            self.dropped,
                            self._backlog_size,
                        )
                backlog.append(chunk)
        if answered:
            self._settle(stream, answered)

    def _settle(self, stream: OutStream, answered: Sequence[RequestId]) -> None:
        """``stream`` carried the answer to ``answered``: forget their routes; end it once
        it answered all its requests."""
        routes = self._routes
        for request_id in answered:
            if stream.settle(request_id) and routes.get(request_id) is stream:
                del routes[request_id]
        if not stream.waiting:
            self._end(stream)


def _implements(store: object, protocol: type) -> bool:
    """Whether ``store`` has ``protocol``'s methods, asked once per class of store: an
    ``isinstance`` of a runtime-checkable protocol costs more than the rest of a POST's
    routing, and it is asked for every POST."""
    key = (type(store), protocol)
    found = _IMPLEMENTS.get(key)
    if found is None:
        found = _IMPLEMENTS[key] = isinstance(store, protocol)
    return found


#: What :func:`_implements` found, by (class of store, protocol).
_IMPLEMENTS: dict[tuple[type, type], bool] = {}


def _checked(event_id: str) -> str | None:
    if "\n" in event_id or "\r" in event_id or "\0" in event_id:
        logger.error("the event store returned an id an SSE stream cannot carry: %r", event_id)
        return None
    return event_id


def close_request_stream(ctx: RequestContext) -> bool:
    """From a request handler: end the SSE response carrying this request now (SSE polling).

    The client reconnects after the server's ``retry`` delay with ``GET`` and
    ``Last-Event-ID`` and receives everything sent for the request after that, including
    its answer. Returns False (and does nothing) outside the Streamable HTTP server, in
    JSON-response or stateless mode, or without an event store.
    """
    transport = current_transport.get()
    if transport is None:
        return False
    return transport.close_stream_of(ctx.request_id)
