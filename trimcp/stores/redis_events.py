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
answer stream belongs to the replica running its requests, so its name carries that
replica's id and the requests' ids (``<replica>.<n>.<ids>``, see :meth:`post_stream_id`;
the ids cost no Redis call: they travel in the names and event ids). Resumed on another
replica, it is replayed there. When its replica has died (its heartbeat lapsed, see
:meth:`~trimcp.stores.RedisStore.replica_gone`) and some of its requests have no answer
stored, the resuming replica stores and sends, after the replayed events, one JSON-RPC
error (``-32603``) for each of them, naming the dead replica and why it is taken for
dead, and the stream ends: every call ends, once, with its answer or that error. (A
marker key makes sure only one replica writes those errors, however often the client
resumes.) A stream of a dead replica with nothing left to send is refused (the client's
resume fails with an HTTP error instead of polling for an answer that will never come).

When Redis is down, :meth:`RedisEventStore.store` still returns an id (the event goes out
live, unstored, and an error is logged): a stream is never stopped by its store, but a
client resuming across that gap misses what was not stored.
"""

from __future__ import annotations

import logging
import math
import re
from collections.abc import Awaitable, Callable, Iterable, Sequence

import trio

from trimcp.errors import INTERNAL_ERROR, McpError
from trimcp.protocol.jsonrpc import RequestId, encode_error, parse_json
from trimcp.stores.base import StoreUnavailable, log_unavailable
from trimcp.stores.events import STANDALONE_STREAM
from trimcp.stores.redis_client import (
    RedisClient,
    RedisReplyError,
    close_connection,
    pack,
    reply_error,
)

logger = logging.getLogger("trimcp.stores.events")

_ENTRY_ID = re.compile(r"\d{1,20}-\d{1,20}")
#: The entry id of a POST stream's priming event (never stored: before every entry).
_PRIMING = "0-0"
#: The longest request ids a POST stream's name carries (longer: left out, and a resume
#: after its replica died ends without an error for them, as before).
MAX_NAMED_IDS = 200
_INT_ID = re.compile(r"-?\d{1,40}")
#: How often a follower asks after the replica running the followed stream.
FOLLOW_CHECK = 0.25


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
        "_beating",
        "_client",
        "_gone",
        "_key",
        "_local",
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
        ttl: float = 3600.0,
        replica: str = "r",
        alive: Callable[[str], Awaitable[bool]] | None = None,
        gone: Callable[[str], Awaitable[str | None]] | None = None,
        beating: Callable[[str], Awaitable[bool]] | None = None,
    ) -> None:
        self._client = client
        self._key = key
        self.max_events = max_events
        self.ttl_ms = max(1, int(ttl * 1000))
        self.replica = replica
        self._alive = alive
        #: Why a replica runs no more (None: alive); preferred to ``alive`` when given.
        self._gone = gone
        #: Whether a replica's heartbeat is on time (None: taken as on time).
        self._beating = beating
        self._local = 0  # ids handed out while Redis was down

    def _shared_name(self, stream_id: str) -> str:
        return stream_id if stream_id == STANDALONE_STREAM else f"{self.replica}.{stream_id}"

    def post_stream_id(self, number: int, request_ids: Sequence[RequestId]) -> str:
        """``<number>.<ids>``: the ids comma-separated, a number in decimal, a string as
        ``s`` and the hex of its UTF-8 (ids that would take more than
        :data:`MAX_NAMED_IDS` characters are left out: just ``<number>``)."""
        if len(request_ids) == 1 and type(request_ids[0]) is int:
            named = str(request_ids[0])  # the usual case (the SDK's ids)
        else:
            named = ",".join(
                str(rid)
                if type(rid) is int
                else "s" + str(rid).encode("utf-8", "surrogatepass").hex()
                for rid in request_ids
            )
        if not named or len(named) > MAX_NAMED_IDS:
            return str(number)
        return f"{number}.{named}"

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
            why = "event not stored (the stream goes on, unresumable here)"
            log_unavailable(logger, logging.ERROR, error, why)
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
        request_ids = _named_ids(local.partition(".")[2])
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
        if entry_id != _PRIMING:  # answers the client already had count too
            answered |= await self._answered_until(name, entry_id)
        cut = [rid for rid in request_ids if rid not in answered]
        if cut:
            replay.extend(await self._end_cut_requests(name, owner, reason, cut))
        elif not replay:
            logger.info("stream %s of %s: its replica stopped, nothing left", name, self._key)
            return None
        return name, replay

    async def follow(
        self, event_id: str, deliver: Callable[[list[tuple[str, bytes]]], bool]
    ) -> bool:
        """Follow another replica's POST stream after ``event_id`` (the last event the
        client has): hand each batch of its events to ``deliver`` as they are stored,
        until every request the stream carries is answered (True), while its replica is
        alive and on time. Every :data:`FOLLOW_CHECK` seconds its replica is asked after:
        if it stopped, its unanswered requests end with the errors :meth:`replay_after`
        writes (delivered too, then True); if it missed a heartbeat, False (the client
        resumes again: a stream held open for a replica that may be dead is one a client
        may lose midway, and some clients, the official SDK among them, then resume from
        where they started it, and count it as a failed attempt).

        False too when there is nothing to follow (our own stream, the GET stream, a
        stream named without its requests) or ``deliver`` returned False (the client went
        away). Raises :class:`~trimcp.stores.StoreUnavailable`. One connection of its own
        while it follows (``XREAD BLOCK`` of at most :data:`FOLLOW_CHECK` seconds at a
        time: no pooled connection is held). Cancellation: stops; the connection is
        closed.
        """
        name, _, cursor = event_id.rpartition("_")
        owner, dot, local = name.partition(".")
        request_ids = _named_ids(local.partition(".")[2]) if dot else None
        if owner == self.replica or request_ids is None or not _ENTRY_ID.fullmatch(cursor):
            return False
        answered = await self._answered_until(name, cursor) if cursor != _PRIMING else set()
        wanted = name.encode()
        client = self._client
        try:
            connection = await client.connect()
        except (OSError, RedisReplyError) as error:
            raise StoreUnavailable(f"cannot follow {name} in {client.address}: {error}") from None
        try:
            check_at = trio.current_time()  # now: before the first wait
            cut_ended = False
            while not answered.issuperset(request_ids):
                # On a clock: the session's other streams may keep every XREAD busy.
                if trio.current_time() >= check_at:
                    check_at = trio.current_time() + FOLLOW_CHECK
                    if cut_ended:
                        return False  # the errors were not stored: the client resumes again
                    reason = await self._why_gone(owner)
                    if reason is not None:
                        cut = [rid for rid in request_ids if rid not in answered]
                        # Stored (by us, or by a replica that got there first): read next.
                        await self._end_cut_requests(name, owner, reason, cut)
                        cut_ended = True
                    elif self._beating is not None and not await self._beating(owner):
                        return False
                # At least 1 ms: BLOCK 0 would wait for ever.
                block_ms = max(1, math.ceil((check_at - trio.current_time()) * 1000))
                command = ("XREAD", "COUNT", self.max_events, "BLOCK", block_ms)
                with trio.move_on_after(FOLLOW_CHECK + client.timeout) as bound:
                    try:
                        (reply,) = await connection.roundtrip(
                            pack((*command, "STREAMS", self._key, cursor)), 1
                        )
                    except (OSError, trio.BrokenResourceError) as error:
                        raise StoreUnavailable(f"following {name}: {error}") from None
                if bound.cancelled_caught:
                    raise StoreUnavailable(f"following {name}: no answer from {client.address}")
                if not isinstance(reply, list) or not reply:
                    continue  # nothing new in the whole session for a while
                events: list[tuple[str, bytes]] = []
                for raw_id, fields in reply[0][1]:
                    cursor = raw_id.decode("ascii")
                    values = dict(zip(fields[::2], fields[1::2], strict=False))
                    if values.get(b"s") == wanted and values.get(b"m"):
                        events.append((f"{name}_{cursor}", values[b"m"]))
                if events:
                    answered |= _answered(data for _, data in events)
                    if not deliver(events):
                        return False
            return True
        finally:
            await close_connection(connection)

    async def _why_gone(self, replica: str) -> str | None:
        if self._gone is not None:
            return await self._gone(replica)
        if self._alive is not None and not await self._alive(replica):
            return "it stopped saying it is alive"
        return None

    async def _answered_until(self, name: str, entry_id: str) -> set[RequestId]:
        """The requests answered on stream ``name`` up to entry ``entry_id`` (included)."""
        entries = await self._client.execute(
            "XRANGE", self._key, "-", entry_id, "COUNT", self.max_events * 2
        )
        if not isinstance(entries, list):
            return set()
        wanted = name.encode()
        messages = []
        for _, fields in entries:
            values = dict(zip(fields[::2], fields[1::2], strict=False))
            if values.get(b"s") == wanted and values.get(b"m"):
                messages.append(values[b"m"])
        return _answered(messages)

    async def _end_cut_requests(
        self, name: str, owner: str, reason: str, cut: list[RequestId]
    ) -> list[tuple[str, bytes]]:
        """Store and return an error answer for each of ``cut``, the requests of stream
        ``name`` that its dead replica ``owner`` never answered.

        One atomic script: only the first replica to get here writes them (a marker key
        says it did); the others return nothing, and their client resumes again and finds
        the errors stored. Raises StoreUnavailable (then they may or may not be stored:
        either way the client's next resume ends the requests, once).
        """
        message = (
            f"replica {owner} that was running this request stopped ({reason}); the "
            "request may or may not have taken effect; retry it if it is safe to"
        )
        data = {"replica": owner, "reason": reason}
        errors = [encode_error(rid, McpError(INTERNAL_ERROR, message, data)) for rid in cut]
        marker = f"{self._key}:cut:{name}"
        ids = await self._client.execute(
            "EVAL", _END_CUT, 2, self._key, marker, self.ttl_ms, self.max_events, name, *errors
        )
        if not isinstance(ids, list) or len(ids) != len(errors):
            if reply_error(ids):
                logger.error("Redis refused to end the requests of %s: %s", name, ids)
            return []  # another replica did (or Redis refused: logged)
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


#: KEYS: the events, the marker; ARGV: ttl ms, max events, stream name, the messages.
#: Adds the messages to the stream unless the marker exists; their entry ids, or nil.
_END_CUT = """
if not redis.call('SET', KEYS[2], '1', 'NX', 'PX', ARGV[1]) then return false end
local ids = {}
for i = 4, #ARGV do
  ids[#ids + 1] = redis.call('XADD', KEYS[1], 'MAXLEN', '~', ARGV[2], '*',
                             's', ARGV[3], 'm', ARGV[i])
end
redis.call('PEXPIRE', KEYS[1], ARGV[1])
return ids
"""


def _named_ids(named: str) -> list[RequestId] | None:
    """The request ids :meth:`RedisEventStore.post_stream_id` put in a name (None: none)."""
    if not named:
        return None
    ids: list[RequestId] = []
    try:
        for part in named.split(","):
            if part.startswith("s"):
                ids.append(bytes.fromhex(part[1:]).decode("utf-8", "surrogatepass"))
            elif _INT_ID.fullmatch(part):
                ids.append(int(part))
            else:
                return None
    except ValueError:
        return None
    return ids


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
