"""The Redis client and the Redis event store against a real redis-server (loopback)."""

from __future__ import annotations

import json
import socket
from collections.abc import Sequence

import pytest
import trio

from tests.scale.peers import RedisServer
from trimcp.stores import RedisStore, StoreUnavailable, store_from_url
from trimcp.stores.events import RecordsStreams
from trimcp.stores.redis_client import RedisAddress, RedisClient, RedisReplyError
from trimcp.stores.redis_events import RedisEventStore
from trimcp.transports.http_server import InMemoryEventStore

#: Replica ids (as trimcp.stores.event_ids makes them) for event stores made by hand.
A, B, C = "aaaaaaaaaaaa", "bbbbbbbbbbbb", "cccccccccccc"


def test_redis_urls_parse_and_bad_ones_say_what_is_wrong() -> None:
    address = RedisAddress.from_url("redis://u:p%40ss@10.0.0.1:7000/3")
    assert (address.host, address.port, address.db) == ("10.0.0.1", 7000, 3)
    assert (address.username, address.password) == ("u", "p@ss")
    assert str(address) == "redis://10.0.0.1:7000/3"  # no secrets in logs
    assert RedisAddress.from_url("redis://h") == RedisAddress(host="h")
    with pytest.raises(ValueError, match="redis://"):
        RedisAddress.from_url("http://h:1/0")
    with pytest.raises(ValueError, match="database"):
        RedisAddress.from_url("redis://h:1/x")
    with pytest.raises(ValueError, match="unknown store"):
        store_from_url("mongodb://h")


async def test_commands_pipelines_and_error_replies(redis_server: RedisServer) -> None:
    client = RedisClient(redis_server.url)
    try:
        assert await client.execute("SET", "t:a", b"\x00\xff") == b"OK"
        assert await client.execute("GET", "t:a") == b"\x00\xff"
        replies = await client.pipeline([("INCR", "t:n"), ("INCR", "t:n"), ("LPUSH", "t:a", 1)])
        assert replies[:2] == [1, 2]
        with pytest.raises(RedisReplyError, match="WRONGTYPE"):
            await client.execute("LPUSH", "t:a", 1)
        assert await client.execute("GET", "t:a") == b"\x00\xff"  # the connection goes on
    finally:
        await client.aclose()


async def test_an_unreachable_store_is_a_clear_bounded_error() -> None:
    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    client = RedisClient(f"redis://127.0.0.1:{port}/0", timeout=1.0)
    with pytest.raises(StoreUnavailable, match=rf"redis://127.0.0.1:{port}/0.*check that Redis"):
        await client.execute("PING")
    await client.aclose()


async def test_a_silent_store_times_out_within_its_bound(autojump_clock: object) -> None:
    # A listener that accepts and never answers: the call ends at its timeout.
    listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")
    port = listeners[0].socket.getsockname()[1]
    client = RedisClient(f"redis://127.0.0.1:{port}/0", timeout=2.0)

    async def never_answer(stream: trio.SocketStream) -> None:
        await trio.sleep_forever()

    async with trio.open_nursery() as nursery:
        nursery.start_soon(trio.serve_listeners, never_answer, listeners)
        start = trio.current_time()
        with pytest.raises(StoreUnavailable, match="no answer within 2s"):
            await client.execute("PING")
        assert trio.current_time() - start == pytest.approx(2.0)
        nursery.cancel_scope.cancel()
    await client.aclose()


async def test_calls_fail_while_redis_is_down_and_recover_after(
    redis_server: RedisServer,
) -> None:
    client = RedisClient(redis_server.url, timeout=1.0)
    try:
        await client.execute("SET", "t:r", 1)
        redis_server.stop()
        with pytest.raises(StoreUnavailable, match="unavailable"):
            await client.execute("GET", "t:r")
        redis_server.start()
        assert await client.execute("PING") == b"PONG"
    finally:
        await client.aclose()


async def test_events_replay_on_another_replica(redis_server: RedisServer) -> None:
    # Two stores on one Redis stand for two replicas serving the same session.
    a, b = RedisStore(redis_server.url, prefix="t1:"), RedisStore(redis_server.url, prefix="t1:")
    try:
        async with trio.open_nursery() as nursery:
            await nursery.start(a.run)  # replica a says it is alive
            on_a, on_b = a.event_store("S"), b.event_store("S")
            prime = await on_a.store("1", b"")  # a POST stream of replica a
            first = await on_a.store("1", b"one")
            await on_b.store("1", b"b's own stream 1")  # another stream, though named alike
            second = await on_a.store("1", b"two")
            assert prime.startswith(f"{a.replica}.1_")
            # On b, a's stream is replayed under its shared name (not live on b) ...
            assert await on_b.replay_after(prime) == (
                f"{a.replica}.1",
                [(first, b"one"), (second, b"two")],
            )
            # ... and on a under the name a's transport knows it by.
            assert await on_a.replay_after(first) == ("1", [(second, b"two")])
            # While a is alive, an up-to-date resume on b is an empty replay (poll again).
            assert await on_b.replay_after(second) == (f"{a.replica}.1", [])
            # The GET stream is one stream, whichever replica writes to it.
            get_a = await on_a.store("0", b"from a")
            get_b = await on_b.store("0", b"from b")
            assert await on_b.replay_after(get_a) == ("0", [(get_b, b"from b")])
            # Unknown ids: never issued, malformed, or another session's.
            assert await on_a.replay_after("1_99999999999999-0") is None
            assert await on_a.replay_after("garbage") is None
            assert await a.event_store("T").replay_after(first) is None
            nursery.cancel_scope.cancel()
        # a has stopped: nothing new on its stream means its answer will never come.
        assert await on_b.replay_after(second) is None
        assert await on_b.replay_after(prime) == (
            f"{a.replica}.1",
            [(first, b"one"), (second, b"two")],
        )
    finally:
        await a.aclose()
        await b.aclose()


async def test_a_post_streams_priming_event_costs_no_round_trip(
    redis_server: RedisServer,
) -> None:
    store = RedisStore(redis_server.url, prefix="t5:")
    try:
        events = store.event_store("S")
        prime = await events.store("7", b"")
        # Nothing was written for it: the session has no events in Redis yet.
        key = store.key("ev", "S")
        assert await store.client.execute("EXISTS", key) == 0
        await events.store("0", b"")  # (a GET priming event is stored: the key exists)
        assert await store.client.execute("EXISTS", key) == 1
        await store.client.execute("DEL", key)
        # Resuming right after the priming event, before anything was stored: the stream
        # is known (empty) once recorded (the server records a stream whose response
        # starts before it is complete), not refused, while its replica lives.
        async with trio.open_nursery() as nursery:
            await nursery.start(store.run)
            assert await events.replay_after(prime) is None  # never recorded: unknown
            assert isinstance(events, RecordsStreams)
            await events.record_stream("7")
            assert await events.replay_after(prime) == ("7", [])
            answer = await events.store("7", b"answer")
            assert await events.replay_after(prime) == ("7", [(answer, b"answer")])
            # The GET stream's priming events are stored: a resume after one replays
            # only what came after it, not what an earlier GET connection delivered.
            old = await events.store("0", b"old")
            get_prime = await events.store("0", b"")
            new = await events.store("0", b"new")
            assert await events.replay_after(get_prime) == ("0", [(new, b"new")])
            assert await events.replay_after(old) == ("0", [(new, b"new")])
            nursery.cancel_scope.cancel()
    finally:
        await store.aclose()


async def test_event_streams_are_bounded_and_expire(redis_server: RedisServer) -> None:
    store = RedisStore(redis_server.url, prefix="t2:", max_events=100, event_ttl=60)
    try:
        events = store.event_store("S")
        ids = [await events.store("1", b"x%d" % i) for i in range(1000)]
        length = await store.client.execute("XLEN", "t2:ev:S")
        assert isinstance(length, int)
        assert 88 <= length <= 100  # trimmed to 7/8 of the bound when past it
        for key in ("t2:ev:S", "t2:ev:S:bytes"):
            ttl = await store.client.execute("PTTL", key)
            assert isinstance(ttl, int)
            assert 0 < ttl <= 60_000
        found = await events.replay_after(ids[-3])
        assert found == ("1", [(ids[-2], b"x998"), (ids[-1], b"x999")])
    finally:
        await store.aclose()


async def test_event_logs_and_replays_are_bounded_in_bytes(redis_server: RedisServer) -> None:
    # Before: only the number of events was bounded (512 events of 1 MiB each: 512 MiB in
    # Redis for one session, and a replay that size).
    store = RedisStore(redis_server.url, prefix="t6:", max_event_bytes=64 * 1024)
    try:
        events = store.event_store("S")
        big = b"x" * 10_000
        name = f"{store.replica}.1"
        first = await events.store("1", big)
        ids = [await events.store("1", big) for _ in range(20)]
        held = await store.client.execute("XRANGE", "t6:ev:S", "-", "+")
        assert isinstance(held, list)
        counted = await store.client.execute("GET", "t6:ev:S:bytes")
        assert counted == str(sum(len(name) + len(big) for _ in held)).encode()
        assert int(counted) <= 64 * 1024
        assert len(held) in (5, 6)  # the newest that fit (trimmed to 7/8 when past it)
        found = await events.replay_after(first)
        assert found is not None
        assert [eid for eid, _ in found[1]] == ids[-len(held) :]
        assert sum(len(data) for _, data in found[1]) <= 64 * 1024
        # One event bigger than the whole bound is kept alone (the newest always is).
        huge = await events.store("1", b"y" * 100_000)
        assert await events.replay_after(ids[-1]) == ("1", [(huge, b"y" * 100_000)])
        assert await store.client.execute("XLEN", "t6:ev:S") == 1
    finally:
        await store.aclose()


async def test_the_event_store_keeps_streams_going_while_redis_is_down(
    redis_server: RedisServer,
) -> None:
    store = RedisStore(redis_server.url, prefix="t3:", timeout=1.0)
    try:
        events = store.event_store("S")
        first = await events.store("1", b"one")
        redis_server.stop()
        unstored = await events.store("1", b"lost")  # an id, no exception: the stream goes on
        assert unstored.startswith(f"{store.replica}.1_0-")
        with pytest.raises(StoreUnavailable):
            await events.replay_after(first)
        redis_server.start()  # a fresh, empty Redis
        later = await events.store("1", b"after")
        assert await events.replay_after(unstored) == ("1", [(later, b"after")])
    finally:
        await store.aclose()


async def test_what_a_session_keeps_expires_with_it(redis_server: RedisServer) -> None:
    # Before: the replica holding the GET stream was kept 24 h, subscriptions and values
    # (the log level) 24 h after set, whatever the session's expiry.
    store = RedisStore(redis_server.url, prefix="t7:")
    kept = ("t7:get:S", "t7:subs:S", "t7:sv:S")

    async def ttls() -> list[object]:
        return [await store.client.execute("PTTL", key) for key in kept]

    try:
        await store.save_session("S", b"{}", 60)
        await store.bus.set_stream_holder("S", 24 * 3600)
        assert await store.bus.add_subscription("S", "file:///a", 10)
        await store.bus.save_session_value("S", "log-level", "debug")
        assert all(isinstance(t, int) and 0 < t <= 60_000 for t in await ttls())
        assert await store.bus.load_session_value("S", "log-level") == "debug"
        # Each request pushes them out with the record ...
        assert await store.load_session("S", 120) == b"{}"
        assert all(isinstance(t, int) and 60_000 < t <= 120_000 for t in await ttls())
        # ... and ending the session deletes them.
        await store.drop_session("S", 10)
        assert [await store.client.execute("EXISTS", key) for key in kept] == [0, 0, 0]
    finally:
        await store.aclose()


async def test_the_memory_store_is_the_in_memory_event_store() -> None:
    assert isinstance(store_from_url("memory://").event_store("S"), InMemoryEventStore)


async def test_a_dead_replicas_unanswered_requests_end_with_one_error_each(
    redis_server: RedisServer,
) -> None:
    from trimcp.stores.redis_events import MAX_NAMED_IDS, RedisEventStore

    client = RedisClient(redis_server.url)
    stopped: dict[str, str] = {}

    async def gone(replica: str) -> str | None:
        return stopped.get(replica)

    def store(replica: str) -> RedisEventStore:
        return RedisEventStore(client, "t:cut", replica=replica, gone=gone)

    try:
        a, b, c = store(A), store(B), store(C)
        # A batch POST on replica a: a string id (non-ASCII, with a comma) and a number.
        local = a.post_stream_id(4, ["x,é", 7])
        assert "_" not in local
        assert a.post_stream_id(5, ["x" * MAX_NAMED_IDS]) == "5"  # too long: left out
        await a.record_stream(local)  # (its response starts before it is complete)
        priming = await a.store(local, b"")
        progress = await a.store(local, b'{"jsonrpc":"2.0","method":"notifications/progress"}')
        await a.store(local, b'{"jsonrpc":"2.0","id":7,"result":{}}')
        # a still runs it: b replays what is stored and sends no error.
        found = await b.replay_after(progress)
        assert found is not None
        assert [m for _, m in found[1]] == [b'{"jsonrpc":"2.0","id":7,"result":{}}']
        stopped[A] = "it shut down"
        # A stream a never recorded (nor stored anything for) gets no errors: unknown.
        length = await client.execute("XLEN", "t:cut")
        assert await b.replay_after(f"{A}.6.9_0-0") is None
        assert await client.execute("XLEN", "t:cut") == length
        found = await b.replay_after(progress)
        assert found is not None
        name, events = found
        assert name == f"{A}.{local}"
        assert len(events) == 2  # the stored answer to 7, then the error for "x,é" only
        error = json.loads(events[1][1])
        assert error["id"] == "x,é"
        assert error["error"]["code"] == -32603
        assert error["error"]["message"].startswith(
            f"replica {A} that was running this request stopped (it shut down); "
        )
        assert error["error"]["data"] == {"replica": A, "reason": "it shut down"}
        # Resumed again (anywhere, from anywhere): the error is stored, never written twice.
        assert await c.replay_after(events[1][0]) is None  # nothing left
        again = await c.replay_after(priming)
        assert again is not None
        assert [eid for eid, _ in again[1]] == [progress, events[0][0], events[1][0]]
    finally:
        await client.aclose()


async def test_a_stream_stays_known_after_its_events_are_trimmed(
    redis_server: RedisServer,
) -> None:
    # A busy session (20 calls at a time) trims a call's events from its log within a
    # second; the call's replica dies; its client resumes from the last event it got:
    # the stream must still be known, and its request end with the error. Failed on
    # bb779b0, where only a stored event or an explicit record made a stream known:
    # None (400 "Unknown Last-Event-ID"), and the SDK's "reconnection attempts were
    # exhausted" in tests/scale/test_failures.py.
    from trimcp.stores.redis_events import RedisEventStore

    client = RedisClient(redis_server.url)
    stopped: dict[str, str] = {}

    async def gone(replica: str) -> str | None:
        return stopped.get(replica)

    a = RedisEventStore(client, "t:trimmed", replica=A, gone=gone, max_events=16)
    b = RedisEventStore(client, "t:trimmed", replica=B, gone=gone, max_events=16)
    try:
        local = a.post_stream_id(1, [7])
        last = await a.store(local, b'{"jsonrpc":"2.0","method":"notifications/progress"}')
        for n in range(2, 7):  # other calls, each with its events
            other = a.post_stream_id(n, [n])
            for _ in range(8):
                await a.store(other, b'{"jsonrpc":"2.0","method":"notifications/progress"}')
        assert await client.execute("XRANGE", "t:trimmed", last.rpartition("_")[2], "+") != []
        assert await client.execute("XRANGE", "t:trimmed", "-", last.rpartition("_")[2]) == []
        stopped[A] = "it shut down"
        found = await b.replay_after(last)
        assert found is not None
        ((_, error),) = found[1]
        assert json.loads(error)["id"] == 7
        # A stream never made is still unknown, trimmed log or not.
        assert await b.replay_after(f"{A}.99.99_{last.rpartition('_')[2]}") is None
    finally:
        await client.aclose()


async def test_a_followed_stream_is_asked_after_while_the_session_is_busy(
    redis_server: RedisServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The session's other streams keep every XREAD of the reader busy: the replica
    # running the followed stream must still be asked after, on a clock.
    from trimcp.stores import redis_follow
    from trimcp.stores.redis_events import RedisEventStore
    from trimcp.stores.redis_follow import ReplicaState, StreamWatcher

    monkeypatch.setattr(redis_follow, "FOLLOW_CHECK", 0.05)
    client = RedisClient(redis_server.url)
    stopped: dict[str, str] = {}
    late: set[str] = set()

    async def gone(replica: str) -> str | None:
        return stopped.get(replica)

    async def states(replicas: Sequence[str]) -> dict[str, ReplicaState]:
        return {r: ReplicaState(gone=stopped.get(r), beating=r not in late) for r in replicas}

    watcher = StreamWatcher(client, states)
    a = RedisEventStore(client, "t:busy", replica=A, gone=gone, watcher=watcher)
    b = RedisEventStore(client, "t:busy", replica=B, gone=gone, watcher=watcher)
    delivered: list[tuple[str, bytes]] = []

    def deliver(events: list[tuple[str, bytes]]) -> bool:
        delivered.extend(events)
        return True

    async def busy() -> None:  # the session's other calls, on the live replica b
        while True:
            await b.store("9.3", b'{"jsonrpc":"2.0","method":"notifications/progress"}')

    progress = b'{"jsonrpc":"2.0","method":"notifications/progress"}'
    try:
        local = a.post_stream_id(1, [7])
        first = await a.store(local, progress)
        async with trio.open_nursery() as nursery:
            await nursery.start(watcher.run)
            nursery.start_soon(busy)
            # Before the fix: followed the busy session for ever once a stopped.
            with trio.fail_after(20):
                # a on time: its events, to the answer.
                second = await a.store(local, progress)
                answer = await a.store(local, b'{"jsonrpc":"2.0","id":7,"result":{}}')
                assert await b.follow(first, deliver)
                assert [eid for eid, _ in delivered] == [second, answer]
                # a missed a heartbeat: the follow ends (the client resumes again), empty.
                delivered.clear()
                late.add(A)
                local = a.post_stream_id(2, [8])
                await a.record_stream(local)
                first = await a.store(local, progress)
                assert not await b.follow(first, deliver)
                assert delivered == []
                # a stopped: its request ends with the error, delivered once.
                stopped[A] = "it shut down"
                assert await b.follow(first, deliver)
                # A follow has a time bound: a stream that never ends is left, and the
                # watcher reads for no follow once it has.
                late.clear()
                del stopped[A]
                local = a.post_stream_id(3, [9])
                third = await a.store(local, progress)
                assert not await b.follow(third, deliver, timeout=0.2)
                assert watcher.follows == 0
            nursery.cancel_scope.cancel()
        ((eid, message),) = delivered
        assert eid.startswith(f"{A}.2.8_")
        error = json.loads(message)
        assert error["id"] == 8
        assert error["error"]["data"] == {"replica": A, "reason": "it shut down"}
    finally:
        await client.aclose()


async def test_replicas_resuming_a_dead_replicas_stream_at_once_end_its_call_once(
    redis_server: RedisServer,
) -> None:
    """Four replicas resume, at the same moment, the stream of a call whose replica
    stopped before answering: each may answer its client with the error, but the error is
    stored once, so every later resume, anywhere, replays one answer for the call."""
    dead = RedisStore(redis_server.url, prefix="t5:")
    others = [RedisStore(redis_server.url, prefix="t5:") for _ in range(4)]
    try:
        async with trio.open_nursery() as nursery:
            await nursery.start(dead.run)
            events = dead.event_store("S")
            assert isinstance(events, RedisEventStore)
            stream = events.post_stream_id(1, [7])
            await events.record_stream(stream)  # a call still running when it answers
            prime = await events.store(stream, b"")
            nursery.cancel_scope.cancel()  # it stops with call 7 unanswered
        for store in others:  # connected first, so that the resumes start together
            assert await store.client.execute("PING") == b"PONG"
        # Redis holds every write for a moment: each replica reads the stream, finds call
        # 7 unanswered and its replica gone, before any of them can store the error.
        assert await others[0].client.execute("CLIENT", "PAUSE", 1000, "WRITE") == b"OK"
        replays: list[list[tuple[str, bytes]]] = []

        async def resume(store: RedisStore) -> None:
            found = await store.event_store("S").replay_after(prime)
            assert found is not None
            replays.append(found[1])

        async with trio.open_nursery() as nursery:
            for store in others:
                nursery.start_soon(resume, store)
        # Whoever answered its client answered it with the one stored error.
        answers = {(event_id, message) for replay in replays for event_id, message in replay}
        assert len(answers) == 1, answers
        ((_, message),) = answers
        assert json.loads(message)["id"] == 7
        assert "stopped" in json.loads(message)["error"]["message"]
        found = await others[0].event_store("S").replay_after(prime)
        assert found is not None
        assert [json.loads(message)["id"] for _, message in found[1]] == [7]
    finally:
        for store in (dead, *others):
            await store.aclose()
