"""The resumability event store on Redis: ``Last-Event-ID`` works on any replica.

One Redis stream per session (``<prefix>ev:<session id>``) holds its events: field ``s``
is the logical stream (a POST's answer stream or the GET stream), ``m`` the message (empty
for a priming event). Event ids are ``<stream>_<redis entry id>``. Every write trims the
stream to about ``max_events`` entries (``XADD MAXLEN ~``) and pushes its expiry
``ttl`` seconds out, in the same round trip: an idle session's events vanish on their own.

When Redis is down, :meth:`RedisEventStore.store` still returns an id (the event goes out
live, unstored, and an error is logged): a stream is never stopped by its store, but a
client resuming across that gap misses what was not stored (logged on replay).
"""

from __future__ import annotations

import logging
import re

from trimcp.stores.base import StoreUnavailable
from trimcp.stores.redis_client import RedisClient, reply_error

logger = logging.getLogger("trimcp.stores.events")

_ENTRY_ID = re.compile(r"\d{1,20}-\d{1,20}")


def _entry_key(entry_id: str) -> tuple[int, int]:
    ms, _, seq = entry_id.partition("-")
    return int(ms), int(seq)


class RedisEventStore:
    """The :class:`~trimcp.transports.http_server.EventStore` of one session, in Redis.

    Made by :meth:`trimcp.stores.RedisStore.event_store`; every replica that serves the
    session makes its own, and they all see the same events.
    """

    __slots__ = ("_client", "_key", "_local", "max_events", "ttl_ms")

    def __init__(
        self, client: RedisClient, key: str, *, max_events: int = 512, ttl: float = 3600.0
    ) -> None:
        self._client = client
        self._key = key
        self.max_events = max_events
        self.ttl_ms = max(1, int(ttl * 1000))
        self._local = 0  # ids handed out while Redis was down

    async def store(self, stream_id: str, message: bytes) -> str:
        """Append the event; returns its id. Never raises for a store outage (see module)."""
        try:
            replies = await self._client.pipeline(
                [
                    ("XADD", self._key, "MAXLEN", "~", self.max_events, "*",
                     "s", stream_id, "m", message),
                    ("PEXPIRE", self._key, self.ttl_ms),
                ]
            )
        except StoreUnavailable as error:
            logger.error("event not stored (the stream goes on, unresumable here): %s", error)
            return self._unstored_id(stream_id)
        entry_id = replies[0]
        if reply_error(entry_id) or not isinstance(entry_id, bytes):
            logger.error("Redis refused to store an event for %s: %s", self._key, entry_id)
            return self._unstored_id(stream_id)
        return f"{stream_id}_{entry_id.decode('ascii')}"

    def _unstored_id(self, stream_id: str) -> str:
        # "0-<n>" sorts before any stored entry: resuming after it replays the stream's
        # stored events, the best that is left.
        self._local += 1
        return f"{stream_id}_0-{self._local}"

    async def replay_after(self, event_id: str) -> tuple[str, list[tuple[str, bytes]]] | None:
        """The events of ``event_id``'s stream stored after it (None: unknown id).

        Raises :class:`~trimcp.stores.StoreUnavailable` when Redis does not answer (the
        client gets an error and may retry)."""
        stream_id, _, entry_id = event_id.rpartition("_")
        if not stream_id or not _ENTRY_ID.fullmatch(entry_id):
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
        if not last_reply:
            return None  # no events: never issued, or expired
        if after > _entry_key(last_reply[0][0].decode("ascii")):
            return None  # never issued by this session
        if isinstance(first_reply, list) and first_reply:
            first = _entry_key(first_reply[0][0].decode("ascii"))
            if after[0] != 0 and after < first:
                logger.warning(
                    "replaying %s after %s: older events were trimmed, some may be lost",
                    self._key,
                    event_id,
                )
        replay: list[tuple[str, bytes]] = []
        for raw_id, fields in entries:
            values = dict(zip(fields[::2], fields[1::2], strict=False))
            if values.get(b"s") == stream_id.encode() and values.get(b"m"):
                replay.append((f"{stream_id}_{raw_id.decode('ascii')}", values[b"m"]))
        return stream_id, replay
