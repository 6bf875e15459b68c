"""Resumability: every SSE event gets an id, and a store keeps events for replay.

A client whose stream broke (or that the server asked to poll) sends ``GET`` with
``Last-Event-ID``; the server replays what that stream sent after the event and goes on
with live events. The store is per session (the factory gets the session id), so a client
can never replay another session's events.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Sequence
from typing import Final, Protocol, runtime_checkable

from trimcp.protocol.jsonrpc import RequestId

#: The stream id of a session's standalone (GET) stream in every event store; POST streams
#: get other ids.
STANDALONE_STREAM: Final = "0"

logger = logging.getLogger("trimcp.http.events")

#: A sequence number as :class:`InMemoryEventStore` writes it (1, 2, ...; below 10**18).
_SEQ = re.compile(r"[1-9][0-9]{0,17}")
#: The longest stream id taken on trust when the store forgot which streams lost events.
_MAX_STREAM_ID = 64


class EventStore(Protocol):
    """Where SSE events are kept so a client can resume a stream.

    ``stream_id`` names one logical stream of a session (a POST's answer stream, or the
    standalone GET stream). An empty ``message`` is a priming event: it has an id but
    carries nothing and is never replayed. Methods should not block for long: the
    session's writer waits for :meth:`store`.
    """

    async def store(self, stream_id: str, message: bytes) -> str:
        """Keep ``message`` and return its event id (unique in the session, no CR/LF/NUL)."""
        ...

    async def replay_after(self, event_id: str) -> tuple[str, list[tuple[str, bytes]]] | None:
        """The stream ``event_id`` belongs to and its later events as ``(id, message)``.

        None when the id is unknown (never issued, or from another session).
        """
        ...


@runtime_checkable
class FollowsStreams(Protocol):
    """An event store that can follow a stream written by another process (a replica's
    answer stream, resumed on another replica): see
    :meth:`~trimcp.stores.redis_events.RedisEventStore.follow`."""

    async def follow(
        self,
        event_id: str,
        deliver: Callable[[list[tuple[str, bytes]]], bool],
        *,
        timeout: float = ...,
    ) -> bool:
        """Hand the stream's events after ``event_id`` to ``deliver`` as they are stored,
        until it is complete (True); False: nothing to follow, ``deliver`` said stop, or
        ``timeout`` seconds passed."""
        ...


@runtime_checkable
class RecordsStreams(Protocol):
    """An event store shared by processes that must be told when a POST stream is made
    (see :meth:`~trimcp.stores.redis_events.RedisEventStore.record_stream`): only a stream
    known to exist is followed, or ended, elsewhere."""

    async def record_stream(self, stream_id: str) -> None:
        """Record that POST stream ``stream_id`` exists (before its client can learn an
        event id of it). Never raises for a store outage (logged)."""
        ...


@runtime_checkable
class NamesPostStreams(Protocol):
    """An event store that names each POST's stream itself, from the requests it carries.

    The transport asks it for the id of every new POST stream (instead of numbering them
    ``1``, ``2``, ...). A store shared by replicas puts the request ids in the name, so a
    replica resuming the stream after the one running those requests died knows which of
    them will never be answered (:class:`~trimcp.stores.redis_events.RedisEventStore`).
    """

    def post_stream_id(self, number: int, request_ids: Sequence[RequestId]) -> str:
        """The id of the session's ``number``-th POST stream (unique in the session; no
        ``_``, CR, LF or NUL)."""
        ...


class InMemoryEventStore:
    """Keeps the newest events of one session in memory: bounded, oldest evicted first.

    At most ``max_events`` events and ``max_bytes`` bytes of messages (whichever is hit
    first; the newest event is always kept). Event ids are ``<stream>_<sequence>``, so a
    stream is known even after its events were evicted; replaying across evicted events
    of that stream returns what is left and logs a warning (evictions of other streams'
    events, or of events the client already had, are not a loss and log nothing).
    """

    __slots__ = (
        "_bytes",
        "_events",
        "_head",
        "_lost",
        "_lost_floor",
        "_next",
        "evicted",
        "max_bytes",
        "max_events",
    )

    def __init__(self, *, max_events: int = 512, max_bytes: int = 4 * 1024 * 1024) -> None:
        if max_events < 1 or max_bytes < 1:
            raise ValueError("max_events and max_bytes must be >= 1")
        self.max_events = max_events
        self.max_bytes = max_bytes
        # A list read from ``_head`` on (evicted slots before it are None): a few hundred
        # bytes less than a deque for each of many idle sessions holding two events.
        self._events: list[tuple[int, str, bytes] | None] = []
        self._head = 0
        self._bytes = 0
        self._next = 1
        self.evicted = 0
        #: The newest evicted event of each stream that lost some (made at the first
        #: eviction; at most ``max_events`` streams, oldest forgotten first).
        self._lost: dict[str, int] | None = None
        #: The newest evicted event of a stream forgotten from ``_lost``.
        self._lost_floor = 0

    @property
    def size(self) -> tuple[int, int]:
        """(events, bytes) held now."""
        return len(self._events) - self._head, self._bytes

    def _held(self) -> list[tuple[int, str, bytes]]:
        return self._events[self._head :]  # type: ignore[return-value]

    async def store(self, stream_id: str, message: bytes) -> str:
        return self.store_nowait(stream_id, message)

    def store_nowait(self, stream_id: str, message: bytes) -> str:
        """:meth:`store` without the ``await``."""
        seq = self._next
        self._next += 1
        events = self._events
        events.append((seq, stream_id, message))
        self._bytes += len(message)
        held = len(events) - self._head
        while held > 1 and (held > self.max_events or self._bytes > self.max_bytes):
            oldest = events[self._head]
            assert oldest is not None
            events[self._head] = None
            self._head += 1
            held -= 1
            self._bytes -= len(oldest[2])
            self.evicted += 1
            self._note_lost(oldest[1], oldest[0])
        if self._head > 32 and self._head * 2 > len(events):  # amortized O(1) compaction
            del events[: self._head]
            self._head = 0
        return f"{stream_id}_{seq}"

    def _note_lost(self, stream_id: str, seq: int) -> None:
        lost = self._lost
        if lost is None:
            lost = self._lost = {}
        lost.pop(stream_id, None)
        lost[stream_id] = seq
        if len(lost) > self.max_events:
            forgotten = next(iter(lost))
            self._lost_floor = max(self._lost_floor, lost.pop(forgotten))

    def _lost_after(self, stream_id: str, after: int) -> bool:
        """Whether an event of ``stream_id`` later than ``after`` may have been evicted."""
        lost = self._lost
        if lost is None:
            return False
        newest = lost.get(stream_id)
        if newest is not None:
            return newest > after
        return self._lost_floor > after  # forgotten: assume the worst

    async def replay_after(self, event_id: str) -> tuple[str, list[tuple[str, bytes]]] | None:
        stream_id, _, raw_seq = event_id.rpartition("_")
        if not stream_id or _SEQ.fullmatch(raw_seq) is None:
            return None
        after = int(raw_seq)
        events = self._held()
        if after >= self._next or not self._issued(events, stream_id, after):
            return None  # never issued (by this store, for that stream)
        if self._lost_after(stream_id, after):
            logger.warning(
                "replaying stream %s after event %s: older events were evicted, some may be lost",
                stream_id,
                event_id,
            )
        replay = [
            (f"{sid}_{seq}", data)
            for seq, sid, data in events
            if seq > after and sid == stream_id and data
        ]
        return stream_id, replay

    def _issued(self, held: list[tuple[int, str, bytes]], stream_id: str, seq: int) -> bool:
        """Whether event ``seq`` is (or, evicted, may have been) one of ``stream_id``'s:
        the id a client sends back names both, and must name them as they were. ``held``:
        the events held (consecutive sequence numbers)."""
        first = held[0][0] if held else self._next
        if seq >= first:  # held: its stream is known exactly
            return held[seq - first][1] == stream_id
        lost = self._lost
        if lost is not None and stream_id in lost:
            return True  # evicted events of that stream
        # Forgotten (more streams lost events than are remembered; an event after the
        # floor is of a stream still remembered): any short name may have been its.
        return seq <= self._lost_floor and len(stream_id) <= _MAX_STREAM_ID
