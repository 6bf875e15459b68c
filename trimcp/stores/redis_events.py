"""The resumability event store on Redis: ``Last-Event-ID`` works on any replica.

One Redis stream per session (``<prefix>ev:<session id>``) holds its events: field ``s``
is the logical stream, ``m`` the message (empty for a priming event). Event ids are
``<stream>_<redis entry id>``. Every write is one script (one round trip) that appends,
trims (see Bounds, below) and pushes the expiry ``ttl`` seconds out: an idle session's
events vanish on their own.

A POST stream's priming event is not stored: its id is ``<stream>_0-0``, which sorts
before every stored entry, so resuming after it replays the whole stream, which is what
resuming after a priming event means. That leaves one Redis round trip per quick call
(the answer), not two. The GET stream's priming events are stored: that stream outlives its
connections, and resuming after a priming event must not replay what an earlier
connection already delivered.

Streams: the session's GET stream is one stream whichever replica writes to it. A POST's
answer stream belongs to the replica running its requests, so its name carries that
replica's id and the requests' ids (``<replica>.<n>.<ids>``, see
:mod:`trimcp.stores.event_ids`, whose parser every ``Last-Event-ID`` goes through first:
a name this store could not have issued is unknown, and costs no Redis call). Resumed on
another replica, it is replayed there. A stream is *known* when it is *recorded* in a
sorted set per session (``<prefix>ev:<session id>:streams``, the newest ``max_events``
kept): each stored event of a POST stream records it, in the event's own round trip, and
a POST stream whose response starts before anything of it is stored is recorded first
(:meth:`RedisEventStore.record_stream`, one more round trip for slow calls only), so a
stream stays known after its events are trimmed from the log. A resume of a stream
not known is refused (unknown): nobody can make a replica follow, or end, a stream that
never was. When its replica has died (its heartbeat lapsed, see
:meth:`~trimcp.stores.RedisStore.replica_gone`) and some of its requests have no answer
stored, the resuming replica stores and sends, after the replayed events, one JSON-RPC
error (``-32603``) for each of them, naming the dead replica and why it is taken for
dead, and the stream ends: every call ends, once, with its answer or that error. The
script writing those errors records the stream as ended, so they are written once,
however often the client resumes. A stream of a dead replica with nothing left to send
is refused (the client's resume fails with an HTTP error instead of polling for an
answer that will never come).

Bounds: each session's events are at most ``max_events`` entries and ``max_bytes`` bytes
of stream names and messages (the newest event is always kept); every write trims the
oldest in the same script. A replay or a followed batch is read from that log, so it is
bounded the same way. The log, its byte count and the stream records expire ``ttl``
after the session's last event.

When Redis is down, :meth:`RedisEventStore.store` still returns an id (the event goes out
live, unstored, and an error is logged): a stream is never stopped by its store, but a
client resuming across that gap misses what was not stored.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Awaitable, Callable, Iterable, Sequence

import trio

from trimcp.errors import INTERNAL_ERROR, McpError
from trimcp.protocol.jsonrpc import RequestId, encode_error, parse_json
from trimcp.session.options import DEFAULT_IDLE_TIMEOUT
from trimcp.stores.base import StoreUnavailable, log_unavailable
from trimcp.stores.event_ids import (
    GET_STREAM,
    MAX_NAMED_IDS,
    PRIMING,
    EventName,
    parse_event_id,
    post_stream_name,
)
from trimcp.stores.redis_client import Command, RedisClient, RedisReplyError, reply_error
from trimcp.stores.redis_follow import FOLLOW_CHECK, StreamWatcher

logger = logging.getLogger("trimcp.stores.events")

__all__ = ["FOLLOW_CHECK", "MAX_NAMED_IDS", "RedisEventStore", "event_keys"]


def event_keys(key: str) -> tuple[str, str, str]:
    """Every key the event store of one session (``key``: its log) writes: the log, its
    byte count and its stream records (what ending the session deletes)."""
    return key, f"{key}:bytes", f"{key}:streams"


def _entry_key(entry_id: str) -> tuple[int, int]:
    ms, _, seq = entry_id.partition("-")
    return int(ms), int(seq)


class RedisEventStore:
    """The :class:`~trimcp.transports.http_server.EventStore` of one session, in Redis.

    Made by :meth:`trimcp.stores.RedisStore.event_store`; every replica that serves the
    session makes its own, and they all see the same events.
    """

    __slots__ = (
        "_alive",
        "_bytes_key",
        "_client",
        "_gone",
        "_key",
        "_local",
        "_streams_key",
        "_watcher",
        "max_bytes",
        "max_events",
        "replica",
        "ttl_ms",
    )

    def __init__(
        self,
        client: RedisClient,
        key: str,
        *,
        max_events: int = 512,
        max_bytes: int = 4 * 1024 * 1024,
        ttl: float = DEFAULT_IDLE_TIMEOUT,
        replica: str = "000000000000",
        alive: Callable[[str], Awaitable[bool]] | None = None,
        gone: Callable[[str], Awaitable[str | None]] | None = None,
        watcher: StreamWatcher | None = None,
    ) -> None:
        if max_events < 1 or max_bytes < 1:
            raise ValueError("max_events and max_bytes must be >= 1")
        self._client = client
        # The log; the bytes of names and messages it holds (see the module docstring);
        # the POST streams recorded as made (see :meth:`record_stream`).
        self._key, self._bytes_key, self._streams_key = event_keys(key)
        self.max_events = max_events
        self.max_bytes = max_bytes
        self.ttl_ms = max(1, int(ttl * 1000))
        self.replica = replica
        self._alive = alive
        #: Why a replica runs no more (None: alive); preferred to ``alive`` when given.
        self._gone = gone
        #: The replica's reader of followed streams (None: streams are not followed).
        self._watcher = watcher
        self._local = 0  # ids handed out while Redis was down

    def _shared_name(self, stream_id: str) -> str:
        return stream_id if stream_id == GET_STREAM else f"{self.replica}.{stream_id}"

    def post_stream_id(self, number: int, request_ids: Sequence[RequestId]) -> str:
        """``<number>.<ids>``: see :func:`~trimcp.stores.event_ids.post_stream_name`."""
        return post_stream_name(number, request_ids)

    async def store(self, stream_id: str, message: bytes) -> str:
        """Append the event; returns its id. Never raises for a store outage (see module)."""
        name = self._shared_name(stream_id)
        if not message and stream_id != GET_STREAM:
            return f"{name}_{PRIMING}"  # see the module docstring: nothing to store
        key, sizes, ttl = self._key, self._bytes_key, self.ttl_ms
        commands: list[Command] = [
            ("XADD", key, "*", "s", name, "m", message),
            ("INCRBY", sizes, len(name) + len(message)),
            ("XLEN", key),
            ("PEXPIRE", key, ttl),
            ("PEXPIRE", sizes, ttl),
        ]
        if stream_id != GET_STREAM:
            # Each event of a POST stream records the stream too (score: its newest
            # event), in the same round trip: it stays known after its events are trimmed.
            streams = self._streams_key
            commands += [("ZADD", streams, "GT", _now_ms(), name), ("PEXPIRE", streams, ttl)]
        try:
            entry_id, total, count, *_ = await self._client.pipeline(commands)
        except StoreUnavailable as error:
            why = "event not stored (the stream goes on, unresumable here)"
            log_unavailable(logger, logging.ERROR, error, why)
            return self._unstored_id(name)
        if not isinstance(entry_id, bytes):
            logger.error("Redis refused to store an event for %s: %s", self._key, entry_id)
            return self._unstored_id(name)
        if (
            not isinstance(total, int)
            or not isinstance(count, int)
            or count > self.max_events
            or total > self.max_bytes
        ):
            await self._trim()
        return f"{name}_{entry_id.decode('ascii')}"

    async def _trim(self) -> None:
        """Trim the log's oldest events to 7/8 of its bounds, and its stream records to
        the newest ``max_events`` (one round trip, once every ``max_events / 8`` events or
        ``max_bytes / 8`` bytes at most). An outage is logged: the next write trims."""
        keep_events = max(1, self.max_events - self.max_events // 8)
        keep_bytes = max(1, self.max_bytes - self.max_bytes // 8)
        try:
            await self._client.execute(
                "EVAL",
                _TRIM,
                3,
                self._key,
                self._bytes_key,
                self._streams_key,
                keep_events,
                keep_bytes,
                self.max_events,
            )
        except (StoreUnavailable, RedisReplyError) as error:
            logger.error("the events of %s were not trimmed: %s", self._key, error)

    async def record_stream(self, stream_id: str) -> None:
        """Record that this replica made POST stream ``stream_id`` (one round trip): called
        before the client can learn the stream's first event id, for a stream not complete
        when its response starts, so that another replica knows the stream exists (to
        follow it, or to end its requests if this replica dies). The newest
        ``max_events`` records are kept, for ``ttl``. A store outage is logged (the stream
        goes on, resumable only here)."""
        name = self._shared_name(stream_id)
        try:
            await self._client.pipeline(
                [
                    ("ZADD", self._streams_key, "GT", _now_ms(), name),
                    ("ZREMRANGEBYRANK", self._streams_key, 0, -self.max_events - 1),
                    ("PEXPIRE", self._streams_key, self.ttl_ms),
                ]
            )
        except StoreUnavailable as error:
            log_unavailable(logger, logging.ERROR, error, "stream %s not recorded", name)

    def _unstored_id(self, name: str) -> str:
        # "0-<n>" sorts before any stored entry: resuming after it replays the stream's
        # stored events, the best that is left.
        self._local += 1
        return f"{name}_0-{self._local}"

    async def replay_after(self, event_id: str) -> tuple[str, list[tuple[str, bytes]]] | None:
        """The events of ``event_id``'s stream stored after it (None: an id this store
        could not have issued, a stream not known (see the module docstring), or a
        stream whose replica died with nothing left to replay).

        Raises :class:`~trimcp.stores.StoreUnavailable` when Redis does not answer (the
        client gets an error and may retry)."""
        parsed = parse_event_id(event_id)
        if parsed is None:
            return None
        name, entry_id = parsed.stream, parsed.entry
        after = _entry_key(entry_id)
        commands: list[tuple[str | int, ...]] = [
            ("XREVRANGE", self._key, "+", "-", "COUNT", 1),
            ("XRANGE", self._key, "-", "+", "COUNT", 1),
            ("XRANGE", self._key, f"({entry_id}", "+", "COUNT", self.max_events),
        ]
        if parsed.owner is not None:
            commands.append(("ZSCORE", self._streams_key, name))
            if parsed.stored:  # the entry the client last had: of this stream?
                commands.append(("XRANGE", self._key, entry_id, entry_id))
        last_reply, first_reply, entries, *known_replies = await self._client.pipeline(commands)
        if not isinstance(last_reply, list) or not isinstance(entries, list):
            return None
        if not last_reply and parsed.stored:
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
        replay = _events_of(name, entries)
        owner = parsed.owner
        if owner is None:
            return name, replay  # the GET stream
        recorded = known_replies[0] is not None
        if not (recorded or replay or _of_stream(name, known_replies[1:])):
            return None  # a stream never made (or long gone): nothing to follow or end
        if owner == self.replica:
            return parsed.local, replay  # ours: the transport knows it by its local name
        request_ids = parsed.request_ids
        if request_ids is None:  # a stream named without its requests
            if not replay and await self._why_gone(owner) is not None:
                logger.info("stream %s of %s: its replica stopped, nothing left", name, self._key)
                return None
            return name, replay
        answered = _answered(data for _, data in replay)
        if answered.issuperset(request_ids):
            return name, replay  # complete: whoever ran it
        reason = await self._why_gone(owner)
        if reason is None:
            return name, replay  # its replica runs it still: the client polls for the rest
        if parsed.stored:  # answers the client already had count too
            answered |= await self._answered_until(name, entry_id)
        cut = [rid for rid in request_ids if rid not in answered]
        if cut:
            # (Empty: another replica wrote them meanwhile; the client follows, reads them.)
            replay.extend(await self._end_cut_requests(parsed, reason, cut))
        elif not replay:
            logger.info("stream %s of %s: its replica stopped, nothing left", name, self._key)
            return None
        return name, replay

    async def follow(
        self,
        event_id: str,
        deliver: Callable[[list[tuple[str, bytes]]], bool],
        *,
        timeout: float = math.inf,
    ) -> bool:
        """Follow another replica's POST stream after ``event_id`` (the last event the
        client has; call it once :meth:`replay_after` has accepted that id, which checks
        that the stream is known): hand each batch of its events to ``deliver`` as they
        are stored, until every request the stream carries is answered (True), while its
        replica is alive and on time, for at most ``timeout`` seconds. Every
        :data:`~trimcp.stores.redis_follow.FOLLOW_CHECK` seconds its replica is asked
        after: if it stopped, its unanswered requests end with the errors
        :meth:`replay_after` writes (delivered too, then True); if it missed a heartbeat,
        False (the client resumes again: a stream held open for a replica that may be
        dead is one a client may lose midway, and some clients, the official SDK among
        them, then resume from where they started it, and count it as a failed attempt).

        False too when there is nothing to follow (our own stream, the GET stream, a
        stream named without its requests, an id this store could not have issued, no
        watcher), ``deliver`` returned False (the client went away) or ``timeout``
        passed. Raises :class:`~trimcp.stores.StoreUnavailable`. The replica's one
        :class:`~trimcp.stores.redis_follow.StreamWatcher` reads for every follow: no
        connection of its own. Cancellation: stops.
        """
        parsed = parse_event_id(event_id)
        watcher = self._watcher
        if (
            watcher is None
            or parsed is None
            or parsed.owner is None
            or parsed.owner == self.replica
            or parsed.request_ids is None
        ):
            return False
        name, cursor, owner = parsed.stream, parsed.entry, parsed.owner
        request_ids = parsed.request_ids
        with trio.move_on_after(timeout):
            answered = await self._answered_until(name, cursor) if parsed.stored else set()
            async with watcher.watch(self._key, owner, cursor) as watch:
                # What was stored before the watch began (entries read twice are left out).
                watch.take(await self._entries_after(cursor))
                checks = 0
                cut_ended = False
                while True:
                    events = _events_of(name, watch.entries())
                    if events:
                        answered |= _answered(data for _, data in events)
                        if not deliver(events):
                            return False
                    if answered.issuperset(request_ids):
                        return True
                    if watch.failed is not None:
                        raise watch.failed
                    state = watch.state
                    if state is not None and watch.checks != checks:
                        checks = watch.checks
                        if cut_ended:
                            return False  # the errors were not stored: the client resumes
                        if state.gone is not None:
                            cut = [rid for rid in request_ids if rid not in answered]
                            # Stored (by us, or by a replica that got there first): read next.
                            await self._end_cut_requests(parsed, state.gone, cut)
                            cut_ended = True
                        elif not state.beating:
                            return False
                    await watch.wait()
        return False  # timed out: the client resumes again

    async def _entries_after(self, cursor: str) -> list[list[object]]:
        entries = await self._client.execute(
            "XRANGE", self._key, f"({cursor}", "+", "COUNT", self.max_events
        )
        return entries if isinstance(entries, list) else []

    async def _why_gone(self, replica: str) -> str | None:
        if self._gone is not None:
            return await self._gone(replica)
        if self._alive is not None and not await self._alive(replica):
            return "it stopped saying it is alive"
        return None

    async def _answered_until(self, name: str, entry_id: str) -> set[RequestId]:
        """The requests answered on stream ``name`` up to entry ``entry_id`` (included)."""
        entries = await self._client.execute(
            "XRANGE", self._key, "-", entry_id, "COUNT", self.max_events
        )
        if not isinstance(entries, list):
            return set()
        return _answered(data for _, data in _events_of(name, entries))

    async def _end_cut_requests(
        self, parsed: EventName, reason: str, cut: list[RequestId]
    ) -> list[tuple[str, bytes]]:
        """Store and return an error answer for each of ``cut``, the requests of the
        stream ``parsed`` names that its dead replica never answered. Only for a stream
        known to exist (:meth:`replay_after` checked its record or its stored events).

        One atomic script: it records the stream as ended as it writes them, so only the
        first replica to get here writes them; the others get ``[]``, and their client
        reads the errors stored. Raises StoreUnavailable (then they may or may not be
        stored: either way the client's next resume ends the requests, once).
        """
        owner, name = parsed.owner, parsed.stream
        message = (
            f"replica {owner} that was running this request stopped ({reason}); the "
            "request may or may not have taken effect; retry it if it is safe to"
        )
        data = {"replica": owner, "reason": reason}
        errors = [encode_error(rid, McpError(INTERNAL_ERROR, message, data)) for rid in cut]
        ids = await self._client.execute(
            "EVAL",
            _END_CUT,
            3,
            self._key,
            self._bytes_key,
            self._streams_key,
            self.ttl_ms,
            name,
            *errors,
        )
        if not isinstance(ids, list) or len(ids) != len(errors):
            if reply_error(ids):
                logger.error("Redis refused to end the requests of %s: %s", name, ids)
            return []  # another replica did
        await self._trim()
        logger.warning(
            "stream %s of %s: replica %s stopped (%s); %d request(s) ended with an error",
            name,
            self._key,
            owner,
            reason,
            len(cut),
        )
        return [
            (f"{name}_{entry.decode('ascii')}", error)
            for entry, error in zip(ids, errors, strict=True)
        ]


#: KEYS: the log, its byte count, the stream records; ARGV: the most events and bytes to
#: keep, the most stream records. Removes the oldest events until the log holds no more
#: (keeping the newest whatever its size), and subtracts their bytes (names and messages,
#: as :meth:`RedisEventStore.store` counts); keeps the newest stream records.
_TRIM = """
local total = tonumber(redis.call('GET', KEYS[2]) or '0')
local count = redis.call('XLEN', KEYS[1])
local keep_events, keep_bytes = tonumber(ARGV[1]), tonumber(ARGV[2])
local removed, after = 0, '-'
while count > 1 and (count > keep_events or total > keep_bytes) do
  local batch = redis.call('XRANGE', KEYS[1], after, '+', 'COUNT', 32)
  if #batch == 0 then break end
  for _, entry in ipairs(batch) do
    if count <= 1 or (count <= keep_events and total <= keep_bytes) then break end
    local fields = entry[2]
    total = total - #(fields[2] or '') - #(fields[4] or '')
    count = count - 1
    removed = removed + 1
    after = '(' .. entry[1]
  end
end
if removed > 0 then
  local first = redis.call('XRANGE', KEYS[1], after, '+', 'COUNT', 1)[1]
  if first then redis.call('XTRIM', KEYS[1], 'MINID', first[1]) end
end
if total < 0 then total = 0 end
redis.call('SET', KEYS[2], total, 'KEEPTTL')
redis.call('ZREMRANGEBYRANK', KEYS[3], 0, -tonumber(ARGV[3]) - 1)
return removed
"""

#: KEYS: the log, its byte count, the stream records; ARGV: ttl ms, the stream's name,
#: the messages. Appends the messages (counting their bytes) unless the stream was ended
#: already, and records it as ended (score -1: trimmed first): their entry ids, or nil.
_END_CUT = """
local score = redis.call('ZSCORE', KEYS[3], ARGV[2])
if score and tonumber(score) < 0 then return false end
redis.call('ZADD', KEYS[3], -1, ARGV[2])
local ids = {}
for i = 3, #ARGV do
  ids[#ids + 1] = redis.call('XADD', KEYS[1], '*', 's', ARGV[2], 'm', ARGV[i])
  redis.call('INCRBY', KEYS[2], #ARGV[2] + #ARGV[i])
end
for i = 1, 3 do redis.call('PEXPIRE', KEYS[i], ARGV[1]) end
return ids
"""


def _now_ms() -> int:
    return int(time.time() * 1000)


def _events_of(name: str, entries: object) -> list[tuple[str, bytes]]:
    """The events (id, message) of stream ``name`` among ``entries`` (an XRANGE reply),
    leaving out priming events."""
    if not isinstance(entries, list):
        return []
    wanted = name.encode()
    events: list[tuple[str, bytes]] = []
    for raw_id, fields in entries:
        values = dict(zip(fields[::2], fields[1::2], strict=False))
        if values.get(b"s") == wanted and values.get(b"m"):
            events.append((f"{name}_{raw_id.decode('ascii')}", values[b"m"]))
    return events


def _of_stream(name: str, replies: list[object]) -> bool:
    """Whether an ``XRANGE <id> <id>`` reply (if any) is an entry of stream ``name``."""
    if not replies or not isinstance(replies[0], list) or not replies[0]:
        return False
    _, fields = replies[0][0]
    values = dict(zip(fields[::2], fields[1::2], strict=False))
    return values.get(b"s") == name.encode()


def _answered(messages: Iterable[bytes]) -> set[RequestId]:
    """The ids of the requests that ``messages`` (stored events) answer."""
    answered: set[RequestId] = set()
    for data in messages:
        try:
            decoded = parse_json(data)
        except McpError:
            continue
        for item in decoded if isinstance(decoded, list) else (decoded,):
            if (
                isinstance(item, dict)
                and "method" not in item
                and ("result" in item or "error" in item)
                and type(item.get("id")) in (int, str)
            ):
                answered.add(item["id"])
    return answered
