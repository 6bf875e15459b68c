"""The notification bus and the shared requestState keyring against a real redis-server."""

from __future__ import annotations

import socket
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import pytest
import trio

from tests.scale.peers import RedisServer
from trimcp.stores import MemoryStore, RedisStore
from trimcp.stores.bus import TAG_SHIFT, Bus, BusMessage, MemoryBus, tag_of_request_id
from trimcp.stores.keyring import keep_keyring_shared, load_shared_keyring
from trimcp.stores.redis_bus import RedisBus
from trimcp.stores.request_state import InvalidRequestState, RequestStateKeyring

#: Every wait on a real Redis is bounded by this (a hang fails the test, never blocks it).
WAIT = 10.0


class Heard:
    """What one replica's subscriber heard, and a way to wait for the next message."""

    def __init__(self, bus: Bus) -> None:
        self.messages: list[BusMessage] = []
        self._arrived = trio.Event()
        bus.subscribe(self.handler)

    async def handler(self, message: BusMessage) -> None:
        self.messages.append(message)
        self._arrived.set()

    async def next(self, kind: str) -> BusMessage:
        with trio.fail_after(WAIT):
            while True:
                for message in self.messages:
                    if message.get("t") == kind:
                        self.messages.remove(message)
                        return message
                self._arrived = trio.Event()
                await self._arrived.wait()


@asynccontextmanager
async def replicas(url: str, prefix: str, count: int = 2) -> AsyncIterator[list[RedisStore]]:
    stores = [RedisStore(url, prefix=prefix, timeout=1.0) for _ in range(count)]
    try:
        async with trio.open_nursery() as nursery:
            for store in stores:
                await nursery.start(store.run)
            with trio.fail_after(WAIT):
                for store in stores:
                    await store.bus.connected.wait()
            yield stores
            nursery.cancel_scope.cancel()
    finally:
        for store in stores:
            await store.aclose()


def test_request_ids_carry_the_tag_of_their_replica() -> None:
    assert tag_of_request_id((0x1F2 << TAG_SHIFT) + 7) == 0x1F2
    for plain in (1, 2**31, "x", True, None, 1.5, 2**60):
        assert tag_of_request_id(plain) is None
    assert (0xFFFFF << TAG_SHIFT) + 2**31 < 2**53  # a JavaScript client holds every id


async def test_a_memory_store_has_a_one_process_bus() -> None:
    store = MemoryStore()
    bus = store.bus
    assert isinstance(bus, MemoryBus)
    assert isinstance(bus, Bus)
    assert not bus.shared
    assert bus.tag == 0
    heard = Heard(bus)
    bus.publish_nowait({"t": "list", "kind": "tools"})  # the publisher handles its own
    bus.send_nowait(0, {"t": "in"})
    await trio.testing.wait_all_tasks_blocked()
    assert heard.messages == []
    assert await store.request_state_keyring(rotate_every=60) is None


async def test_events_reach_every_other_replica_once(redis_server: RedisServer) -> None:
    async with replicas(redis_server.url, "b1:", 3) as (a, b, c):
        on_a, on_b, on_c = Heard(a.bus), Heard(b.bus), Heard(c.bus)
        a.bus.publish_nowait({"t": "list", "kind": "tools"})
        assert (await on_b.next("list"))["kind"] == "tools"
        assert (await on_c.next("list"))["kind"] == "tools"
        # Sent now, with the count of replicas listening.
        assert await a.bus.send(None, {"t": "now"}) == 3  # a listens on it too
        assert await a.bus.send(b.bus.tag, {"t": "now-b"}) == 1
        free = next(t for t in range(1, 8) if t not in {a.bus.tag, b.bus.tag, c.bus.tag})
        assert await a.bus.send(free, {"t": "nobody"}) == 0
        await on_b.next("now")
        await on_c.next("now")
        await on_b.next("now-b")
        # Directed: only the replica with that tag hears it.
        a.bus.send_nowait(c.bus.tag, {"t": "in", "n": 1})
        b.bus.publish_nowait({"t": "marker"})  # sent after, so heard after, by everyone
        assert (await on_c.next("in"))["n"] == 1
        await on_a.next("marker")
        await on_c.next("marker")
        # Nobody heard its own events (the publisher handles them itself), and b never
        # heard what was sent to c.
        assert [m["t"] for m in on_a.messages + on_b.messages + on_c.messages] == []
        assert a.bus.tag != b.bus.tag != c.bus.tag


async def test_the_bus_survives_a_redis_restart_and_reports_the_gap(
    redis_server: RedisServer,
) -> None:
    async with replicas(redis_server.url, "b2:") as (a, b):
        assert isinstance(a.bus, RedisBus)
        a.bus.ping_every = b.bus.ping_every = 0.2  # notice the loss soon
        on_b = Heard(b.bus)
        redis_server.stop()
        a.bus.publish_nowait({"t": "lost"})  # nobody can carry it: dropped, counted
        with trio.fail_after(WAIT):
            while a.bus.dropped == 0 or b.bus.connected.is_set():  # noqa: ASYNC110
                await trio.sleep(0.05)  # a real Redis is stopped: poll its effect
        redis_server.start()
        await on_b.next("gap")  # subscribers learn that they may have missed events
        with trio.fail_after(WAIT):
            await a.bus.connected.wait()
        a.bus.publish_nowait({"t": "after"})
        await on_b.next("after")
        assert not [m for m in on_b.messages if m["t"] == "lost"]


async def test_a_bus_cut_off_from_redis_holds_a_bounded_queue(autojump_clock: object) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    store = RedisStore(f"redis://127.0.0.1:{port}/0", timeout=0.5)
    bus = RedisBus(store.client, "b3:", store.replica, max_pending=16, backoff_max=1.0)
    # Before it runs (and with nobody to publish to) the queue fills, then drops.
    for n in range(10_000):
        bus.publish_nowait({"t": "x", "n": n})
    assert bus.dropped == 10_000 - 16
    with trio.move_on_after(30):
        await bus.run()  # connects, fails, backs off, retries: never raises, never grows
    assert bus.dropped == 10_000
    assert not bus.connected.is_set()
    big = {"t": "big", "data": "x" * (bus.max_message_bytes + 1)}
    bus.publish_nowait(big)  # over the size bound: refused before it is queued
    assert bus.dropped == 10_000
    with pytest.raises(ValueError, match="max_message_bytes"):
        await bus.send(1, big)  # refused before anything is sent
    await store.aclose()


async def test_a_slow_subscriber_misses_messages_then_hears_a_gap(
    redis_server: RedisServer,
) -> None:
    url = redis_server.url
    a = RedisStore(url, prefix="b8:")
    b = RedisStore(url, prefix="b8:")
    slow = RedisBus(b.client, "b8:", b.replica, max_pending=4)
    release = trio.Event()
    heard: list[str] = []
    gap = trio.Event()

    async def blocked(message: BusMessage) -> None:
        heard.append(message["t"])
        if message["t"] == "gap":
            gap.set()
        await release.wait()  # bounded by the bus's handler_timeout all the same

    slow.subscribe(blocked)
    try:
        async with trio.open_nursery() as nursery:
            await nursery.start(a.run)
            await nursery.start(slow.run)
            with trio.fail_after(WAIT):
                await slow.connected.wait()
                for n in range(50):
                    await a.bus.send(slow.tag, {"t": "m", "n": n})
                # The reader goes on while the subscriber is stuck (real Redis delivering).
                while slow.missed == 0:  # noqa: ASYNC110
                    await trio.sleep(0.01)
                release.set()
                await gap.wait()
            # Heard: the first few, then (the queue full) drops, then a gap to resync.
            assert heard[-1] == "gap"
            assert heard.count("m") == 50 - slow.missed
            nursery.cancel_scope.cancel()
    finally:
        await a.aclose()
        await b.aclose()


async def test_shared_subscriptions_are_bounded_and_expire(redis_server: RedisServer) -> None:
    async with replicas(redis_server.url, "b4:") as (a, b):
        assert await a.bus.add_subscription("S", "memo://1", limit=2)
        assert await b.bus.add_subscription("S", "memo://2", limit=2)
        assert not await a.bus.add_subscription("S", "memo://3", limit=2)  # past the limit
        assert await a.bus.add_subscription("S", "memo://2", limit=2)  # already held: fine
        assert await b.bus.subscribed(["S", "T"], "memo://1") == [True, False]
        assert await b.bus.subscribed(["S"], "memo://3") == [False]
        await b.bus.remove_subscription("S", "memo://1")
        assert await a.bus.subscribed(["S"], "memo://1") == [False]
        ttl = await a.client.execute("PTTL", "b4:subs:S")
        assert isinstance(ttl, int)
        assert 0 < ttl <= 24 * 3600 * 1000


async def test_the_holder_of_a_get_stream_is_known_to_every_replica(
    redis_server: RedisServer,
) -> None:
    async with replicas(redis_server.url, "b7:") as (a, b):
        assert await a.bus.stream_holder("S") is None
        await b.bus.set_stream_holder("S", ttl=60)
        assert await a.bus.stream_holder("S") == b.bus.tag
        await a.bus.set_stream_holder("S", ttl=60)  # the client's GET moved to a
        assert await b.bus.stream_holder("S") == a.bus.tag
        ttl = await a.client.execute("PTTL", "b7:get:S")
        assert isinstance(ttl, int)
        assert 0 < ttl <= 60_000
    assert await MemoryBus().stream_holder("S") is None


async def test_replicas_share_requestState_keys_and_rotate_them(
    redis_server: RedisServer,
) -> None:
    now = [1_000_000.0]
    a = RedisStore(redis_server.url, prefix="b5:")
    b = RedisStore(redis_server.url, prefix="b5:")
    try:
        key = "b5:rs-keys"
        ring_a = await load_shared_keyring(a.client, key, rotate_every=100, clock=lambda: now[0])
        ring_b = await load_shared_keyring(b.client, key, rotate_every=100, clock=lambda: now[0])
        assert ring_a.current == ring_b.current == "p10000"
        token = ring_a.seal(b"state", b"call")
        assert ring_b.open(token, b"call") == b"state"  # sealed on a, opened on b
        now[0] += 100  # the next period: a new current key, the old one still opens
        ring_b = await load_shared_keyring(b.client, key, rotate_every=100, clock=lambda: now[0])
        assert ring_b.current == "p10001"
        assert ring_b.open(token, b"call") == b"state"
        now[0] += 200  # two periods later: gone, from the keyring and from Redis
        ring_b = await load_shared_keyring(b.client, key, rotate_every=100, clock=lambda: now[0])
        with pytest.raises(InvalidRequestState, match="no longer holds"):
            ring_b.open(token, b"call")
        fields = await b.client.execute("HKEYS", key)
        assert isinstance(fields, list)
        assert b"p10000" not in fields
        assert len(fields) <= 3
        ttl = await b.client.execute("PTTL", key)
        assert isinstance(ttl, int)
        assert 0 < ttl <= 400_000
    finally:
        await a.aclose()
        await b.aclose()


async def test_a_default_keyring_adopts_the_shared_keys_in_place(
    redis_server: RedisServer,
) -> None:
    a, b = RedisStore(redis_server.url, prefix="b6:"), RedisStore(redis_server.url, prefix="b6:")
    ring_a, ring_b = RequestStateKeyring(), RequestStateKeyring()
    assert ring_a.generated
    assert not RequestStateKeyring.from_secret("s" * 16).generated
    try:
        async with trio.open_nursery() as nursery:
            await nursery.start(keep_keyring_shared, a, ring_a)
            await nursery.start(keep_keyring_shared, b, ring_b)
            assert ring_a.key_ids == ring_b.key_ids
            assert ring_b.open(ring_a.seal(b"x", b"y"), b"y") == b"x"
            nursery.cancel_scope.cancel()
    finally:
        await a.aclose()
        await b.aclose()


async def test_without_the_store_a_replica_seals_with_its_own_key(
    autojump_clock: object, caplog: pytest.LogCaptureFixture
) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    store = RedisStore(f"redis://127.0.0.1:{port}/0", timeout=0.5)
    ring = RequestStateKeyring()
    before = ring.key_ids
    async with trio.open_nursery() as nursery:
        await nursery.start(keep_keyring_shared, store, ring)  # started, though it failed
        nursery.cancel_scope.cancel()
    assert ring.key_ids == before
    assert "seals with its own key until the store answers" in caplog.text
    await store.aclose()


async def test_a_message_for_a_get_stream_goes_to_its_holder_or_stays(
    redis_server: RedisServer,
) -> None:
    from trimcp.transports.http_server.relay import ReplicaRelay

    async with replicas(redis_server.url, "b9:") as (a, b):
        relay = ReplicaRelay(None, a)  # type: ignore[arg-type]
        on_b = Heard(b.bus)
        forward = relay.forwarder("S")
        assert await forward(b'{"n":1}') is False  # no GET stream known: kept here
        await b.bus.set_stream_holder("S", ttl=60)
        relay._holders.clear()  # (the relay trusts what it learnt for a second)
        assert await forward(b'{"n":2}') is True
        out = await on_b.next("out")
        assert (out["s"], out["m"]) == ("S", '{"n":2}')
        # The holder stopped (nobody listens on its channel): kept here, looked up again.
        gone = next(t for t in range(1, 4) if t not in {a.bus.tag, b.bus.tag})
        await a.client.execute("SET", "b9:get:S", gone)
        relay._holders.clear()
        assert await forward(b'{"n":3}') is False
        assert "S" not in relay._holders
