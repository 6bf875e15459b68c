"""The notification bus on Redis pub/sub (see :mod:`trimcp.stores.bus`).

Each replica keeps one dedicated subscriber connection, subscribed to the broadcast
channel ``<prefix>bus`` and to its own channel ``<prefix>bus:<tag>``; it publishes through
the store's ordinary connection pool, from one publisher task that drains a bounded queue
(``max_pending`` messages: a full queue drops, logged, never blocks the server). What the
subscriber reads waits for the subscribers in a queue of the same bound: when they fall
behind, messages are dropped (counted in ``missed``) and a ``gap`` event follows.

Every wait is bounded: publishing takes the pool's ``timeout``; the subscriber sends a
``PING`` after ``ping_every`` quiet seconds and reconnects when nothing answers within
``timeout``. A lost connection is retried with exponential backoff (``backoff_min`` to
``backoff_max`` seconds, with jitter); while it is down, events of other replicas are
lost for this one, so once it is back the subscribers hear a ``gap`` event. Each reply
the subscriber reads is bounded (``max_message_bytes``); bigger messages are not
published at all.
"""

from __future__ import annotations

import logging
import random
from collections.abc import Callable
from contextlib import suppress

import hiredis
import trio

from trimcp.protocol.jsonrpc import dump_json, parse_json
from trimcp.session.options import DEFAULT_IDLE_TIMEOUT
from trimcp.stores.base import StoreUnavailable
from trimcp.stores.bus import TAG_BITS, BusHandler, BusMessage, Subscribers
from trimcp.stores.redis import SessionKeys, session_keys
from trimcp.stores.redis_client import Command, Connection, RedisClient, RedisReplyError, pack

logger = logging.getLogger("trimcp.stores.bus")

_DROPPED = (
    OSError,
    trio.BrokenResourceError,
    trio.ClosedResourceError,
    trio.TooSlowError,
    StoreUnavailable,
    RedisReplyError,
    hiredis.ProtocolError,
)


class RedisBus:
    """The bus of the replicas sharing one Redis database and key prefix.

    Made by :meth:`trimcp.stores.RedisStore.bus`; :meth:`run` (which the store's ``run``
    runs) carries the messages.
    """

    def __init__(
        self,
        client: RedisClient,
        prefix: str,
        replica: str,
        *,
        max_pending: int = 1024,
        max_message_bytes: int = 5 * 1024 * 1024,
        ping_every: float = 5.0,
        backoff_min: float = 0.1,
        backoff_max: float = 5.0,
        handler_timeout: float = 5.0,
        session_ttl: float = DEFAULT_IDLE_TIMEOUT,
    ) -> None:
        self.client = client
        self.prefix = prefix
        #: How long what the bus keeps of a session (its subscriptions, small values, the
        #: replica holding its GET stream) lasts when the session's own record is not in
        #: Redis; with a record, it expires with the record (see :func:`session_keys`).
        self.session_ttl_ms = max(1, int(session_ttl * 1000))
        self.replica = replica
        self._tag = int(replica[:5], 16) % (1 << TAG_BITS) or 1  # 0: "no replica"
        self.channel = prefix + "bus"
        self.max_message_bytes = max_message_bytes
        self.ping_every = ping_every
        self.backoff_min = backoff_min
        self.backoff_max = backoff_max
        self._subscribers = Subscribers(handler_timeout)
        self._out_send, self._out_receive = trio.open_memory_channel[tuple[str, bytes]](max_pending)
        # Read messages wait here for the subscribers, so a slow subscriber never stalls
        # the reader (Redis would cut a subscriber whose output it must buffer too long).
        self._in_send, self._in_receive = trio.open_memory_channel[BusMessage](max_pending)
        self._overflowed = False
        self._token: trio.lowlevel.TrioToken | None = None
        self.dropped = 0
        #: Messages heard but dropped because the subscribers could not keep up.
        self.missed = 0
        #: Set once the subscriber is connected (tests wait for it; so may an operator).
        self.connected = trio.Event()

    @property
    def shared(self) -> bool:
        return True

    @property
    def tag(self) -> int:
        return self._tag

    def channel_of(self, tag: int) -> str:
        return f"{self.channel}:{tag:05x}"

    def subscribe(self, handler: BusHandler) -> Callable[[], None]:
        return self._subscribers.add(handler)

    # --- subscriptions of shared sessions -------------------------------------------------

    def _keys(self, session_id: str) -> SessionKeys:
        return session_keys(self.prefix, session_id)

    def _expire_with_session(self, key: str, session_id: str) -> Command:
        """The command giving ``key`` the expiry of the session's record."""
        return ("EVAL", _EXPIRE_WITH, 2, key, self._keys(session_id).record, self.session_ttl_ms)

    async def add_subscription(self, session_id: str, uri: str, limit: int) -> bool:
        key = self._keys(session_id).subscriptions
        added, count, _ = await self.client.pipeline(
            [("SADD", key, uri), ("SCARD", key), self._expire_with_session(key, session_id)]
        )
        if isinstance(count, int) and count > limit:
            if added == 1:
                await self.client.execute("SREM", key, uri)
            return False
        return True

    async def remove_subscription(self, session_id: str, uri: str) -> None:
        await self.client.execute("SREM", self._keys(session_id).subscriptions, uri)

    async def subscribed(self, session_ids: list[str], uri: str) -> list[bool]:
        replies = await self.client.pipeline(
            [("SISMEMBER", self._keys(sid).subscriptions, uri) for sid in session_ids]
        )
        return [reply == 1 for reply in replies]

    # --- small values of shared sessions (e.g. the log level) ------------------------------

    async def save_session_value(self, session_id: str, name: str, value: str) -> None:
        key = self._keys(session_id).values
        await self.client.pipeline(
            [("HSET", key, name, value), self._expire_with_session(key, session_id)]
        )

    async def load_session_value(self, session_id: str, name: str) -> str | None:
        reply = await self.client.execute("HGET", self._keys(session_id).values, name)
        return reply.decode("utf-8", "replace") if isinstance(reply, bytes) else None

    # --- which replica holds a session's GET stream ------------------------------------------

    async def set_stream_holder(self, session_id: str, ttl: float) -> None:
        key = self._keys(session_id).holder
        await self.client.pipeline(
            [
                ("SET", key, self._tag, "PX", max(1, int(ttl * 1000))),
                self._expire_with_session(key, session_id),
            ]
        )

    async def stream_holder(self, session_id: str) -> int | None:
        reply = await self.client.execute("GET", self._keys(session_id).holder)
        return int(reply) if isinstance(reply, bytes) and reply.isdigit() else None

    # --- publishing -----------------------------------------------------------------------

    def publish_nowait(self, message: BusMessage) -> None:
        self._queue(self.channel, message)

    def send_nowait(self, tag: int, message: BusMessage) -> None:
        self._queue(self.channel_of(tag), message)

    async def send(self, tag: int | None, message: BusMessage) -> int:
        channel = self.channel if tag is None else self.channel_of(tag)
        data = self._encode(message)
        if data is None:
            raise ValueError(
                f"a bus message cannot exceed {self.max_message_bytes} bytes (max_message_bytes)"
            )
        listening = await self.client.execute("PUBLISH", channel, data)
        return listening if isinstance(listening, int) else 0

    def _encode(self, message: BusMessage) -> bytes | None:
        data = dump_json({**message, "o": self.replica})
        if len(data) > self.max_message_bytes:
            logger.error(
                "a %r bus message of %d bytes exceeds max_message_bytes (%d): not published",
                message.get("t"),
                len(data),
                self.max_message_bytes,
            )
            return None
        return data

    def _queue(self, channel: str, message: BusMessage) -> None:
        data = self._encode(message)
        if data is None:
            return
        try:
            trio.lowlevel.current_trio_token()
        except RuntimeError:  # another thread: hand it to Trio
            token = self._token
            if token is not None:
                with suppress(trio.RunFinishedError):
                    token.run_sync_soon(self._put, channel, data)
            return
        self._put(channel, data)

    def _put(self, channel: str, data: bytes) -> None:
        try:
            self._out_send.send_nowait((channel, data))
        except trio.WouldBlock:
            self.dropped += 1
            if self.dropped == 1 or self.dropped % 1000 == 0:
                logger.warning(
                    "the bus cannot publish fast enough (is Redis slow?): %d messages dropped",
                    self.dropped,
                )

    async def _publisher(self) -> None:
        batch: list[tuple[str, bytes]] = []
        async for item in self._out_receive:
            batch.append(item)
            while len(batch) < 64:
                try:
                    batch.append(self._out_receive.receive_nowait())
                except trio.WouldBlock:
                    break
            try:
                await self.client.pipeline([("PUBLISH", ch, data) for ch, data in batch])
            except StoreUnavailable:
                # The client logged the outage; these events are lost for the others.
                self.dropped += len(batch)
                await trio.sleep(self.backoff_min)  # do not spin while Redis is down
            batch.clear()

    # --- subscribing ----------------------------------------------------------------------

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Publish and subscribe until cancelled; a Redis outage is logged and retried."""
        self._token = trio.lowlevel.current_trio_token()
        async with trio.open_nursery() as nursery:
            nursery.start_soon(self._publisher)
            nursery.start_soon(self._dispatcher)
            task_status.started()
            await self._subscriber()

    async def _dispatcher(self) -> None:
        async for message in self._in_receive:
            await self._subscribers.deliver(message)
            if self._overflowed and not self._in_receive.statistics().current_buffer_used:
                self._overflowed = False  # messages were dropped: subscribers resync
                await self._subscribers.deliver({"t": "gap"})

    def _hand_over(self, message: BusMessage) -> None:
        try:
            self._in_send.send_nowait(message)
        except trio.WouldBlock:
            self._overflowed = True
            self.missed += 1
            if self.missed == 1 or self.missed % 1000 == 0:
                logger.warning(
                    "bus subscribers cannot keep up: %d messages missed (a gap follows)",
                    self.missed,
                )

    async def _subscriber(self) -> None:
        backoff = self.backoff_min
        ever_connected = False
        failing = False
        while True:
            connection: Connection | None = None
            try:
                with trio.fail_after(self.client.timeout):
                    connection = await self.client.connect()
                    await connection.stream.send_all(
                        pack(("SUBSCRIBE", self.channel, self.channel_of(self._tag)))
                    )
                    confirmed = 0
                    while confirmed < 2:
                        reply = await self._read_one(connection)
                        if isinstance(reply, list) and reply and reply[0] == b"subscribe":
                            confirmed += 1
                        else:
                            self._dispatch(reply)
                if failing:
                    logger.debug("the bus is connected to %s again", self.client.address)
                failing = False
                self.client.mark_up()  # (one line for the store, if this ends an outage)
                backoff = self.backoff_min
                self.connected.set()
                if ever_connected:  # what others published meanwhile is lost: say so
                    self._hand_over({"t": "gap"})
                ever_connected = True
                await self._listen(connection)
            except _DROPPED as error:
                cause = str(error) or type(error).__name__
                # One line for the store's outage (the client logs it), not one per part.
                self.client.mark_down(f"the bus's connection: {cause}")
                if not failing:
                    failing = True
                    logger.debug(
                        "the bus lost its connection to %s (%s): events of other replicas "
                        "are missed until it is back; retrying with backoff up to %gs",
                        self.client.address,
                        cause,
                        self.backoff_max,
                    )
            finally:
                if self.connected.is_set():
                    self.connected = trio.Event()
                if connection is not None:
                    with (
                        trio.CancelScope(shield=True),
                        trio.move_on_after(0.5),
                        suppress(*_DROPPED),
                    ):
                        await connection.stream.aclose()
            await trio.sleep(backoff * (0.5 + random.random()))  # jitter: replicas retry apart
            backoff = min(backoff * 2, self.backoff_max)

    async def _read_one(self, connection: Connection) -> object:
        reader = connection.reader
        buffered = 0
        while (reply := reader.gets()) is False:
            data = await connection.stream.receive_some(65536)
            if not data:
                raise trio.BrokenResourceError("Redis closed the connection")
            buffered += len(data)
            if buffered > 2 * self.max_message_bytes:
                raise trio.BrokenResourceError("a bus message exceeded max_message_bytes")
            reader.feed(data)
        if isinstance(reply, hiredis.ReplyError):
            raise RedisReplyError(f"{self.client.address}: {reply}")
        return reply

    async def _listen(self, connection: Connection) -> None:
        ping = pack(("PING",))
        while True:
            with trio.move_on_after(self.ping_every) as quiet:
                reply = await self._read_one(connection)
            if quiet.cancelled_caught:
                # Quiet for a while: is the connection still there? Bounded by timeout.
                with trio.fail_after(self.client.timeout):
                    await connection.stream.send_all(ping)
                    reply = await self._read_one(connection)
            self._dispatch(reply)

    def _dispatch(self, reply: object) -> None:
        if not isinstance(reply, list) or len(reply) != 3 or reply[0] != b"message":
            return  # a pong, or a subscribe confirmation
        payload = reply[2]
        try:
            message = parse_json(payload)
        except Exception:
            logger.error("an unreadable bus message on %r; ignored", reply[1])
            return
        if not isinstance(message, dict) or message.get("o") == self.replica:
            return  # our own event: handled when it was raised
        self._hand_over(message)


#: KEYS: a key, the session's record; ARGV: the ttl ms to use without a record. Gives the
#: key the record's expiry, never a longer one.
_EXPIRE_WITH = """
local left = redis.call('PTTL', KEYS[2])
if left < 0 then left = tonumber(ARGV[1]) end
local mine = redis.call('PTTL', KEYS[1])
if mine < 0 or mine > left then redis.call('PEXPIRE', KEYS[1], left) end
return left
"""
