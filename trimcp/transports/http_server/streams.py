"""Outgoing streams: a logical stream of messages, and the HTTP response it writes into.

A **logical stream** (:class:`OutStream`) is what the spec calls a stream: the answers to
one POST, or the standalone GET stream. It outlives any one HTTP response: when a client
reconnects with ``Last-Event-ID``, a new response (:class:`Sink`) is attached to it.

A :class:`Sink` is a bounded queue between the session's writer (which never waits on a
client) and the task answering the HTTP request (which writes at the client's pace). When a
client reads too slowly and the queue is full, the sink is *overflowed*: it is detached
and ends after what it holds, and the stream goes on into the event store only, so memory
stays bounded and the client can resume.
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Iterable
from typing import Any

import trio

from trimcp.protocol.jsonrpc import RequestId
from trimcp.protocol.sse import encode_event
from trimcp.transports.http_server.asgi import Receive, Send, wait_for_disconnect

logger = logging.getLogger("trimcp.http")


def sse_message(data: bytes, event_id: str | None) -> bytes:
    """One ``message`` event carrying one JSON-RPC message (or batch)."""
    if b"\n" in data or b"\r" in data:  # never from our encoder, but stay correct
        return encode_event(data.decode("utf-8"), event="message", id=event_id)
    if event_id is None:
        return b"event: message\ndata: " + data + b"\n\n"
    return b"event: message\nid: " + event_id.encode("utf-8") + b"\ndata: " + data + b"\n\n"


def sse_priming(event_id: str, retry_ms: int) -> bytes:
    """The event that opens a resumable stream: an id, the retry delay, no data."""
    return b"id: %s\nretry: %d\ndata: \n\n" % (event_id.encode("utf-8"), retry_ms)


def sse_retry(retry_ms: int) -> bytes:
    """A field block that only sets the client's reconnection delay (dispatches nothing)."""
    return f"retry: {retry_ms}\n\n".encode("ascii")


class Sink:
    """The unsent bytes of one HTTP response: bounded by bytes and by chunks.

    One chunk is always accepted when the queue is empty, so a single large message is
    never refused; past the bounds :meth:`put` refuses and the sink is finished.
    """

    __slots__ = (
        "_bytes",
        "_chunks",
        "_max_bytes",
        "_max_chunks",
        "_wakeup",
        "finished",
        "gone",
        "overflowed",
    )

    def __init__(self, max_bytes: int, max_chunks: int) -> None:
        self._chunks: deque[bytes] = deque()
        self._bytes = 0
        self._max_bytes = max_bytes
        self._max_chunks = max_chunks
        self._wakeup = trio.Event()
        #: No more chunks will come; the response ends once the queue is drained.
        self.finished = False
        #: The client was too slow; chunks after the overflow were refused.
        self.overflowed = False
        #: The client went away; nothing more is written.
        self.gone = False

    @property
    def buffered(self) -> int:
        return self._bytes

    def put(self, chunk: bytes) -> bool:
        """Queue a chunk; False (and the sink finishes) if that would pass the bounds."""
        if self.finished:
            return False
        if self._chunks and (
            self._bytes + len(chunk) > self._max_bytes or len(self._chunks) >= self._max_chunks
        ):
            self.overflowed = True
            self.finish()
            return False
        self._chunks.append(chunk)
        self._bytes += len(chunk)
        self._wakeup.set()
        return True

    def client_gone(self) -> None:
        """The client went away: end at once, dropping what is queued."""
        self.gone = True
        self._chunks.clear()
        self._bytes = 0
        self.finish()

    def finish(self) -> None:
        """End the response after what is queued. Idempotent."""
        self.finished = True
        self._wakeup.set()

    def take_nowait(self) -> bytes:
        """Everything queued, joined (maybe empty)."""
        chunks = self._chunks
        if not chunks:
            return b""
        data = chunks[0] if len(chunks) == 1 else b"".join(chunks)
        chunks.clear()
        self._bytes = 0
        return data

    @property
    def queued(self) -> int:
        """Chunks waiting to be written."""
        return len(self._chunks)

    async def take(self) -> bytes | None:
        """Wait for queued bytes; None once finished and drained. Cancellation: safe."""
        while True:
            if self._chunks:
                return self.take_nowait()
            if self.finished:
                return None
            self._wakeup = trio.Event()
            await self._wakeup.wait()


#: What :attr:`OutStream._waiter` holds once its waiter was released.
_RELEASED = object()


class OutStream:
    """A logical stream of one session: a POST's answers, or the standalone stream.

    ``requests`` are those still to be answered on it (:attr:`waiting`); the stream is done
    when the last one is answered.
    ``stream_id`` is its name in the event store (None: not resumable). In JSON mode the
    one final message is kept in ``json_body`` instead of being written to a sink.
    """

    __slots__ = (
        "_done",
        "_finished",
        "_pending",
        "_stored",
        "_storing",
        "_waiter",
        "auth",
        "in_store",
        "json_body",
        "json_mode",
        "sink",
        "stream_id",
    )

    def __init__(
        self,
        stream_id: str | None,
        *,
        json_mode: bool = False,
        requests: Iterable[RequestId] = (),
    ) -> None:
        self.stream_id = stream_id
        #: The principal of the POST whose requests this stream answers (``ctx.auth``).
        self.auth: Any = None
        self.json_mode = json_mode
        # None when it answers no request (the standalone stream of every idle session:
        # an empty set costs 216 bytes).
        self._pending: set[RequestId] | None = set(requests) or None
        self.sink: Sink | None = None
        self.json_body: bytes | None = None
        self._finished = False
        # Made when first waited for: most streams (every idle session's standalone one)
        # are never waited for.
        self._done: trio.Event | None = None
        #: Whether the event store has something of it (an event stored, or a record
        #: that it exists): a process resuming it knows it exists.
        self.in_store = False
        self._storing = 0  # events of it being stored now
        self._stored: trio.Event | None = None  # set when none is (made when waited for)
        #: The task in :meth:`wait_done`, or :data:`_RELEASED` after :meth:`release_waiter`.
        self._waiter: trio.lowlevel.Task | object | None = None

    @property
    def finished(self) -> bool:
        """Whether the stream has nothing more to say."""
        return self._finished

    @property
    def waiting(self) -> bool:
        """Whether a request is still to be answered on it."""
        return bool(self._pending)

    @property
    def requests(self) -> tuple[RequestId, ...]:
        """The requests still to be answered on it."""
        return tuple(self._pending or ())

    def settle(self, request_id: RequestId) -> bool:
        """``request_id`` was answered (or forgotten): True when it was waiting here."""
        pending = self._pending
        if pending is None or request_id not in pending:
            return False
        pending.discard(request_id)
        return True

    @property
    def done(self) -> trio.Event:
        """Set once the stream has nothing more to say (or :meth:`release_waiter`)."""
        done = self._done
        if done is None:
            done = self._done = trio.Event()
            if self._finished or self._waiter is _RELEASED:
                done.set()
        return done

    async def wait_done(self) -> None:
        """``await self.done.wait()`` without an Event, for one task at a time (the POST
        waiting for its JSON answer: once per call). Cancellation: safe."""
        if self._finished or self._waiter is _RELEASED:
            await trio.lowlevel.checkpoint()
            return
        if self._waiter is not None:
            raise trio.BusyResourceError("another task waits for this stream already")
        self._waiter = trio.lowlevel.current_task()

        def abort(_: Any) -> trio.lowlevel.Abort:
            self._waiter = None
            return trio.lowlevel.Abort.SUCCEEDED

        await trio.lowlevel.wait_task_rescheduled(abort)

    def _wake(self, then: object | None) -> None:
        waiter = self._waiter
        self._waiter = then
        if type(waiter) is trio.lowlevel.Task:
            trio.lowlevel.reschedule(waiter)

    def release_waiter(self) -> None:
        """Wake whoever waits for :attr:`done` (or in :meth:`wait_done`) now: the POST
        waiting for its answer has lost its client. The stream itself goes on (its
        answers are still taken)."""
        self._wake(_RELEASED)
        if self._done is not None:
            self._done.set()

    def storing(self) -> None:
        """An event of this stream is being stored (until :meth:`stored`)."""
        self._storing += 1

    def stored(self) -> None:
        """That event's store call returned: the stream is in the store."""
        self._storing -= 1
        self.in_store = True
        if not self._storing and self._stored is not None:
            self._stored.set()
            self._stored = None

    async def wait_stored(self) -> None:
        """Wait until no event of this stream is being stored (each store call is bounded
        by its store). Cancellation: safe."""
        while self._storing:
            if self._stored is None:
                self._stored = trio.Event()
            await self._stored.wait()

    def attach(self, sink: Sink) -> None:
        """Write into ``sink`` from now on; a previously attached sink is finished."""
        old = self.sink
        if old is not None and old is not sink:
            old.finish()
        self.sink = sink
        if self._finished:
            sink.finish()

    def detach(self, sink: Sink) -> None:
        """Stop writing into ``sink`` (its client went away), if it is still attached."""
        if self.sink is sink:
            self.sink = None

    def emit(self, chunk: bytes) -> bool:
        """Write one encoded event to the attached sink; False if nobody got it."""
        sink = self.sink
        if sink is None:
            return False
        if sink.put(chunk):
            return True
        logger.warning(
            "a client is not reading its SSE stream (%s bytes queued); ending that response",
            sink.buffered,
        )
        self.sink = None
        return False

    def finish(self) -> None:
        """The stream has nothing more to say: end the attached response."""
        self._finished = True
        if self._done is not None:
            self._done.set()
        waiter = self._waiter
        if type(waiter) is trio.lowlevel.Task:  # (_wake, inline: once per JSON answer)
            self._waiter = None
            trio.lowlevel.reschedule(waiter)
        if self.sink is not None:
            self.sink.finish()


async def pump(send: Send, sink: Sink) -> None:
    """Write a sink's bytes as the response body until it is finished and drained.

    Stops without writing once the client is gone (:meth:`Sink.client_gone`).
    """
    while True:
        data = await sink.take()
        if sink.gone:
            return
        if data is None:
            await send({"type": "http.response.body", "body": b"", "more_body": False})
            return
        if sink.finished and not sink.buffered:
            await send({"type": "http.response.body", "body": data, "more_body": False})
            return
        await send({"type": "http.response.body", "body": data, "more_body": True})


async def pump_until_disconnect(send: Send, receive: Receive, sink: Sink) -> None:
    """:func:`pump`, ending early when the client goes away (long-lived streams).

    The disconnect ends the sink rather than cancelling the writer: a write in progress
    must finish inside the server (hypercorn updates its connection state there).
    """
    async with trio.open_nursery() as nursery:

        async def watch() -> None:
            await wait_for_disconnect(receive)
            sink.client_gone()

        nursery.start_soon(watch)
        await pump(send, sink)
        nursery.cancel_scope.cancel()
