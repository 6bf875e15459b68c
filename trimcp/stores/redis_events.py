"""The resumability event store on Redis: ``Last-Event-ID`` works on any replica.

One Redis stream per session (``<prefix>ev:<session id>``) holds its events: field ``s``
is the logical stream, ``m`` the message (empty for a priming event). Event ids are
``<stream>_<redis entry id>``. Every write trims the stream to about ``max_events``
entries (``XADD MAXLEN ~``) and pushes its expiry ``ttl`` seconds out, in the same round
trip: an idle session's events vanish on their own.

A POST stream's priming event is not stored: its id is ``<stream>_0-0``, which sorts
before every stored entry, so resuming after it replays the whole stream, which is what
resuming after a priming event means. That leaves one Redis round trip per call (the
answer), not two. The GET stream's priming events are stored: that stream outlives its
connections, and resuming after a priming event must not replay what an earlier
connection already delivered.

Streams: the session's GET stream is one stream whichever replica writes to it. A POST's
answer stream belongs to the replica running the request, so its name carries that
replica's id (``<replica>.<n>``). Resumed on another replica, it is replayed there; when
nothing is new and its replica has died, the id is refused (the client's resume fails with
an HTTP error instead of polling for an answer that will never come).

When Redis is down, :meth:`RedisEventStore.store` still returns an id (the event goes out
live, unstored, and an error is logged): a stream is never stopped by its store, but a
client resuming across that gap misses what was not stored.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Awaitable, Callable

from trimcp.stores.base import StoreUnavailable
from trimcp.stores.redis_client import RedisClient, reply_error
from trimcp.transports.http_server.transport import STANDALONE_STREAM

logger = logging.getLogger("trimcp.stores.events")

_ENTRY_ID = re.compile(r"\d{1,20}-\d{1,20}")
#: The entry id of a POST stream's priming event (never stored: before every entry).
_PRIMING = "0-0"


def _entry_key(entry_id: str) -> tuple[int, int]:
    ms, _, seq = entry_id.partition("-")
    return int(ms), int(seq)


class RedisEventStore:
    """The :class:`~trimcp.transports.http_server.EventStore` of one session, in Redis.

    Made by :meth:`trimcp.stores.RedisStore.event_store`; every replica that serves the
    session makes its own, and they all see the same events.
    """

    __slots__ = ("_alive", "_client", "_key", "_local", "max_events", "replica", "ttl_ms")

    def __init__(
        self,
        client: RedisClient,
        key: str,
        *,
        max_events: int = 512,
        ttl: float = 3600.0,
        replica: str = "r",
        alive: Callable[[str], Awaitable[bool]] | None = None,
    ) -> None:
        self._client = client
        self._key = key
        self.max_events = max_events
        self.ttl_ms = max(1, int(ttl * 1000))
        self.replica = replica
        self._alive = alive
        self._local = 0  # ids handed out while Redis was down

    def _shared_name(self, stream_id: str) -> str:
        return stream_id if stream_id == STANDALONE_STREAM else f"{self.replica}.{stream_id}"

    async def store(self, stream_id: str, message: bytes) -> str:
        """Append the event; returns its id. Never raises for a store outage (see module)."""
        name = self._shared_name(stream_id)
        if not message and stream_id != STANDALONE_STREAM:
            return f"{name}_{_PRIMING}"  # see the module docstring: nothing to store
        try:
            replies = await self._client.pipeline(
                [
                    (
                        "XADD",
                        self._key,
                        "MAXLEN",
                        "~",
                        self.max_events,
                        "*",
                        "s",
                        name,
                        "m",
                        message,
                    ),
                    ("PEXPIRE", self._key, self.ttl_ms),
                ]
            )
        except StoreUnavailable as error:
            logger.error("event not stored (the stream goes on, unresumable here): %s", error)
            return self._unstored_id(name)
        entry_id = replies[0]
        if reply_error(entry_id) or not isinstance(entry_id, bytes):
            logger.error("Redis refused to store an event for %s: %s", self._key, entry_id)
            return self._unstored_id(name)
        return f"{name}_{entry_id.decode('ascii')}"

    def _unstored_id(self, name: str) -> str:
        # "0-<n>" sorts before any stored entry: resuming after it replays the stream's
        # stored events, the best that is left.
        self._local += 1
        return f"{name}_0-{self._local}"

    async def replay_after(self, event_id: str) -> tuple[str, list[tuple[str, bytes]]] | None:
        """The events of ``event_id``'s stream stored after it (None: unknown id, or a
        stream whose replica died with nothing left to replay).

        Raises :class:`~trimcp.stores.StoreUnavailable` when Redis does not answer (the
        client gets an error and may retry)."""
        name, _, entry_id = event_id.rpartition("_")
        if not name or not _ENTRY_ID.fullmatch(entry_id):
            return None
        after = _entry_key(entry_id)
        last_reply, first_reply, entries = await self._client.pipeline(
            [
                ("XREVRANGE", self._key, "+", "-", "COUNT", 1),
                ("XRANGE", self._key, "-", "+", "COUNT", 1),
                ("XRANGE", self._key, f"({entry_id}", "+", "COUNT", self.max_events * 2),
            ]
        )
        if not isinstance(last_reply, list) or not isinstance(entries, list):
            return None
        if not last_reply and entry_id != _PRIMING:
            return None  # no events: never issued, or expired
        if last_reply and after > _entry_key(last_reply[0][0].decode("ascii")):
            return None  # never issued by this session
        if isinstance(first_reply, list) and first_reply:
            first = _entry_key(first_reply[0][0].decode("ascii"))
            if after[0] != 0 and after < first:
                logger.warning(
                    "replaying %s after %s: older events were trimmed, some may be lost",
                    self._key,
                    event_id,
                )
        wanted = name.encode()
        replay: list[tuple[str, bytes]] = []
        for raw_id, fields in entries:
            values = dict(zip(fields[::2], fields[1::2], strict=False))
            if values.get(b"s") == wanted and values.get(b"m"):
                replay.append((f"{name}_{raw_id.decode('ascii')}", values[b"m"]))
        owner, dot, local = name.partition(".")
        if not dot:
            return name, replay  # the GET stream, or an id of another store's format
        if owner == self.replica:
            return local, replay  # our own stream: the transport knows it by its local name
        if not replay and self._alive is not None and not await self._alive(owner):
            logger.info("stream %s of %s: its replica stopped, nothing left", name, self._key)
            return None
        return name, replay
