"""User state on a real redis-server, shared by two replicas (two stores, two clients).

What ``ctx.user_state`` and ``ctx.handles`` promise where several processes serve one
user: a value written through one replica is read through the other, and after a new
store on the same Redis (a restart); concurrent updates through both lose nothing
(compare-and-set, where a plain read-then-write does lose them: the control below);
the budgets hold across replicas and give back the bytes of what expired; a write cut
by a cancel lands whole; a handle minted on one replica opens on the other, also after
the shared sealing key rotated once, and no more once its key is two periods old.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from functools import partial
from typing import Any

import pytest
import trio
import trio.testing

from tests.scale.peers import RedisServer
from trimcp.auth.principal import principal_key
from trimcp.server.handles import InvalidHandle
from trimcp.server.state import StateKeeper, StateLimit, StateOptions
from trimcp.stores import RedisStore
from trimcp.stores.base import StoreUnavailable
from trimcp.stores.keyring import keep_keyring_shared, load_shared_keyring
from trimcp.stores.redis_client import Arg, RedisClient, RedisReplyError
from trimcp.stores.redis_state import RedisUserStateStore
from trimcp.stores.request_state import RequestStateKeyring
from trimcp.stores.user_state import StateBudget, UserStateStore, VersionMismatch


def keeper_on(store: UserStateStore, keyring: RequestStateKeyring | None = None) -> StateKeeper:
    ring = keyring or RequestStateKeyring()
    return StateKeeper(StateOptions(store=store, budget=store.budget), lambda: ring)


@asynccontextmanager
async def two_replicas(
    redis: RedisServer, prefix: str, budget: StateBudget | None = None
) -> AsyncIterator[tuple[RedisStore, RedisStore, UserStateStore, UserStateStore]]:
    a = RedisStore(redis.url, prefix=prefix)
    b = RedisStore(redis.url, prefix=prefix)
    try:
        yield a, b, a.user_state_store(budget=budget), b.user_state_store(budget=budget)
    finally:
        await a.aclose()
        await b.aclose()


async def books(store: RedisStore, owner: str) -> tuple[int, int, int]:
    """(the owner's counted bytes, the total counted, the sum of every entry's size)."""
    mine = await store.client.execute("GET", store.key(f"st-owner:{owner}"))
    assert mine is None or isinstance(mine, bytes)
    sizes = await store.client.execute("HGETALL", store.key("st-size"))
    assert isinstance(sizes, list)
    table = {k.decode(): int(v) for k, v in zip(sizes[::2], sizes[1::2], strict=True)}
    total = table.pop("", 0)
    return int(mine or 0), total, sum(table.values())


async def test_values_are_shared_by_replicas_and_outlive_them(redis_server: RedisServer) -> None:
    async with two_replicas(redis_server, "us1:") as (_, _, on_a, on_b):
        a, b = keeper_on(on_a), keeper_on(on_b)
        await a.user_state("alice").set("color", "blue")
        assert await b.user_state("alice").get("color") == "blue"
        assert await b.user_state("bob").get("color") is None
        value, version = await b.user_state("alice").versioned("color")
        assert value == "blue"
        red = await a.user_state("alice").set("color", "red", if_version=version)
        with pytest.raises(VersionMismatch):  # the store's answer to a stale version
            await on_b.put(
                principal_key("alice") or "", "u:color", b'"x"', ttl=60, expected=version
            )
        # Deleted and made again through the other replica: a version never given before.
        await b.user_state("alice").delete("color")
        again = await b.user_state("alice").set("color", "red")
        assert again not in (version, red)
        assert again > red
    async with two_replicas(redis_server, "us1:") as (_, _, on_a, _):  # both restarted
        assert await keeper_on(on_a).user_state("alice").get("color") == "red"
        assert await keeper_on(on_a).user_state("alice").delete("color")
        assert await keeper_on(on_a).user_state("alice").get("color") is None


async def test_concurrent_updates_across_two_replicas_lose_nothing(
    redis_server: RedisServer,
) -> None:
    async with two_replicas(redis_server, "us2:") as (_, _, on_a, on_b):
        replicas = [keeper_on(on_a).user_state("alice"), keeper_on(on_b).user_state("alice")]
        # Each replica's connections opened first, as on a server that has been serving:
        # else the writers, each waiting for a connection of its own, would go one by one.
        async with trio.open_nursery() as nursery:
            for n in range(24):
                nursery.start_soon(replicas[n % 2].get, "warm-up")
        with trio.fail_after(60):
            async with trio.open_nursery() as nursery:
                for n in range(24):  # 12 writers on each replica at once
                    state = replicas[n % 2]
                    nursery.start_soon(partial(state.update, "n", lambda v: v + 1, default=0))
        assert await replicas[0].get("n") == 24

        # The control: the same writers reading and then writing plainly do lose updates,
        # so the writers above really raced.
        async def naive(state: Any) -> None:
            await state.set("m", await state.get("m", 0) + 1)

        async with trio.open_nursery() as nursery:
            for n in range(24):
                nursery.start_soon(naive, replicas[n % 2])
        assert await replicas[1].get("m") < 24


async def test_budgets_hold_across_replicas_and_expiry_gives_bytes_back(
    redis_server: RedisServer,
) -> None:
    # "u:a" and 80 x's in quotes: an entry of 85 bytes.
    budget = StateBudget(max_value_bytes=100, max_user_bytes=200, max_total_bytes=400, ttl=60)
    async with two_replicas(redis_server, "us3:", budget) as (store, _, on_a, on_b):
        a, b = keeper_on(on_a), keeper_on(on_b)
        alice = principal_key("alice") or ""
        with pytest.raises(StateLimit, match=r"StateBudget\.max_value_bytes"):
            await a.user_state("alice").set("big", "x" * 100)
        await a.user_state("alice").set("a", "x" * 80)
        await b.user_state("alice").set("b", "x" * 80)
        with pytest.raises(StateLimit, match="this user keeps 170 of the 200 bytes"):
            await a.user_state("alice").set("c", "x" * 80)
        assert await books(store, alice) == (170, 170, 170)
        await b.user_state("bob").set("a", "x" * 80)
        await a.user_state("bob").set("b", "x" * 80)
        with pytest.raises(StateLimit, match="the server keeps 340 of the 400 bytes"):
            await b.user_state("carol").set("c", "x" * 80)
        ttl = await store.client.execute("PTTL", store.key(f"st:{alice}|u:a"))
        assert isinstance(ttl, int)
        assert 0 < ttl <= 60_000
        # alice's "a" expires (its expiry moved to the past, as time would): the next
        # write prunes it and gives its 85 bytes back, to alice and to the total.
        await store.client.execute("ZADD", store.key("st-exp"), 0, f"{alice}|u:a")
        await b.user_state("carol").set("c", "x" * 80)
        assert await a.user_state("alice").get("a") is None
        assert await books(store, alice) == (85, 340, 340)  # 340 - 85 + carol's 85
        await a.user_state("alice").delete("b")
        assert await books(store, alice) == (0, 255, 255)


class GatedClient(RedisClient):
    """A client whose scripts (the writes) wait at a gate before they are sent, and
    which records the commands it sent."""

    def __init__(self, url: str) -> None:
        super().__init__(url)
        self.writing = trio.Event()
        self.gate = trio.Event()
        self.sent: list[str] = []

    async def execute(self, *args: Arg) -> object:
        if args[0] == "EVAL":
            self.writing.set()
            await self.gate.wait()
        self.sent.append(str(args[0]))
        return await super().execute(*args)


async def test_a_write_cancelled_mid_way_lands_whole(redis_server: RedisServer) -> None:
    client = GatedClient(redis_server.url)
    plain = RedisStore(redis_server.url, prefix="us4:")
    try:
        gated = keeper_on(RedisUserStateStore(client, "us4:"))
        await keeper_on(plain.user_state_store()).user_state("alice").set("cart", ["apple"])
        request = trio.CancelScope()
        outcome: list[str] = []

        async def add() -> None:
            with request:
                try:
                    await gated.user_state("alice").update("cart", lambda c: [*c, "pear"])
                except trio.Cancelled:
                    outcome.append("cancelled")
                    raise

        with trio.fail_after(30):
            async with trio.open_nursery() as nursery:
                nursery.start_soon(add)
                await client.writing.wait()  # read done, the write under way
                request.cancel()
                await trio.testing.wait_all_tasks_blocked()
                client.gate.set()
        assert outcome == ["cancelled"]
        assert client.sent == ["HMGET", "EVAL"]
        after = keeper_on(plain.user_state_store()).user_state("alice")
        assert await after.get("cart") == ["apple", "pear"]  # whole: the new value
        alice = principal_key("alice") or ""
        mine, total, summed = await books(plain, alice)
        assert mine == total == summed  # the counts moved with it, in the same step

        # A cancel before the read: nothing is sent, nothing written.
        client.sent.clear()
        with trio.CancelScope() as scope:
            scope.cancel()
            await gated.user_state("alice").update("cart", lambda c: [*c, "fig"])
        assert client.sent == []
        assert await after.get("cart") == ["apple", "pear"]
    finally:
        await client.aclose()
        await plain.aclose()


async def test_a_handle_opens_on_another_replica_through_one_key_rotation(
    redis_server: RedisServer,
) -> None:
    period = 1000.0
    now = [50 * period + 10]

    def clock() -> float:
        return now[0]

    async with two_replicas(redis_server, "us5:") as (a, b, on_a, on_b):

        async def shared(store: RedisStore) -> RequestStateKeyring:
            return await load_shared_keyring(
                store.client, store.key("rs-keys"), rotate_every=period, clock=clock
            )

        ring_a, ring_b = await shared(a), await shared(b)
        budget = StateBudget(handle_ttl=int(10 * period))  # outlives the keys, on purpose
        options = StateOptions(budget=budget, clock=clock)
        on_replica_a = StateKeeper(attrs_evolve(options, on_a), lambda: ring_a)
        on_replica_b = StateKeeper(attrs_evolve(options, on_b), lambda: ring_b)
        cart = await on_replica_a.handles("alice").mint("cart", ["apple"])
        opened = on_replica_b.handles("alice").open(cart, "cart")
        assert await opened.update(lambda items: [*items, "pear"]) == ["apple", "pear"]
        with pytest.raises(InvalidHandle, match="another user"):
            on_replica_b.handles("bob").open(cart, "cart")

        now[0] += period  # the next period: replicas seal with a new key...
        ring_a.adopt(await shared(a))
        ring_b.adopt(await shared(b))
        fresh = await on_replica_b.handles("alice").mint("cart", [])
        assert fresh.split(".")[1] != cart.split(".")[1]
        # ...and the old handle still opens on both (the rotation window).
        assert await on_replica_a.handles("alice").open(cart).get() == ["apple", "pear"]
        assert await on_replica_b.handles("alice").open(cart).get() == ["apple", "pear"]

        now[0] += period  # two periods on: its key was dropped
        ring_a.adopt(await shared(a))
        with pytest.raises(InvalidHandle, match="no longer holds") as refused:
            on_replica_a.handles("alice").open(cart)
        assert refused.value.reason == "unknown key"
        assert await on_replica_a.handles("alice").open(fresh).get() == []


def attrs_evolve(options: StateOptions, store: UserStateStore) -> StateOptions:
    import attrs

    return attrs.evolve(options, store=store)


class KeyHash:
    """A Redis client whose keyring hash holds ``fields`` (HGETALL's flat list); records
    what is written and deleted."""

    address = "fake:6379"

    def __init__(self, fields: object) -> None:
        self.fields = fields
        self.pipelines: list[list[tuple[Arg, ...]]] = []
        self.deleted: list[tuple[Arg, ...]] = []

    async def pipeline(self, commands: list[tuple[Arg, ...]]) -> list[object]:
        self.pipelines.append(commands)
        return [1, 1, self.fields, 1]

    async def execute(self, *args: Arg) -> object:
        self.deleted.append(args)
        return 1


def _load(client: KeyHash, rotate_every: float) -> Any:
    fake: Any = client
    return load_shared_keyring(fake, "k", rotate_every=rotate_every, clock=lambda: 10_050.0)


async def test_the_shared_keyring_keeps_three_periods_keys_and_deletes_the_rest() -> None:
    key = bytes(32)
    # p99 is wanted but holds a key of the wrong length; p98 is too old; p100x is no id.
    fields = [b"p99", b"short", b"p100", key, b"p101", key, b"p98", key, b"p100x", key]
    client = KeyHash(fields)
    ring = await _load(client, 100.0)
    assert ring.current == "p100"
    assert sorted(ring.key_ids) == ["p100", "p101"]
    assert client.deleted == [("HDEL", "k", b"p99", b"p98", b"p100x")]
    made = [command[:3] for command in client.pipelines[0][:2]]
    assert made == [("HSETNX", "k", "p100"), ("HSETNX", "k", "p101")]
    assert client.pipelines[0][3] == ("PEXPIRE", "k", 400_000)
    clean = KeyHash([b"p100", key, b"p101", key])
    await _load(clean, 100.0)
    assert clean.deleted == []  # nothing stale: no HDEL


@pytest.mark.parametrize("rotate_every", [0.0, -1.0])
async def test_the_shared_keyring_needs_a_positive_period(rotate_every: float) -> None:
    with pytest.raises(ValueError, match="rotate_every must be > 0 seconds"):
        await _load(KeyHash([]), rotate_every)


async def test_a_short_period_is_allowed_and_a_wrong_kind_of_key_is_refused() -> None:
    key = bytes(32)
    ring = await _load(KeyHash([b"p20100", key]), 0.5)
    assert ring.current == "p20100"
    with pytest.raises(RedisReplyError, match="fake:6379: k is not a keyring hash"):
        await _load(KeyHash(b"a string"), 100.0)


class SharedKeys:
    """A store whose shared keyring reads answer ``answers`` in turn (the last one again
    and again); an exception is raised. Records when it was asked (virtual time)."""

    def __init__(self, *answers: RequestStateKeyring | Exception | None) -> None:
        self.answers = list(answers)
        self.asked: list[float] = []

    async def request_state_keyring(self, *, rotate_every: float) -> RequestStateKeyring | None:
        self.asked.append(trio.current_time())
        answer = self.answers.pop(0) if len(self.answers) > 1 else self.answers[0]
        if isinstance(answer, Exception):
            raise answer
        return answer


def ring(key_id: str) -> RequestStateKeyring:
    return RequestStateKeyring({key_id: bytes(32)}, current=key_id)


async def test_the_shared_keys_are_read_again_every_minute_at_most(
    autojump_clock: trio.abc.Clock,
) -> None:
    for rotate_every, every in [(24 * 3600.0, 60.0), (80.0, 10.0)]:
        store = SharedKeys(ring("p1"), ring("p2"))
        fake: Any = store
        keyring = RequestStateKeyring()
        async with trio.open_nursery() as nursery:
            start = trio.current_time()
            await nursery.start(
                partial(keep_keyring_shared, fake, keyring, rotate_every=rotate_every)
            )
            assert keyring.key_ids == ("p1",)  # adopted before it counts as started
            await trio.sleep(every * 2.5)
            assert [t - start for t in store.asked] == [0.0, every, 2 * every]
            assert keyring.current == "p2"
            nursery.cancel_scope.cancel()


async def test_an_outage_is_logged_once_retried_and_its_end_logged(
    autojump_clock: trio.abc.Clock, caplog: pytest.LogCaptureFixture
) -> None:
    store = SharedKeys(*[StoreUnavailable("down")] * 3, ring("p1"), StoreUnavailable("again"))
    fake: Any = store
    keyring = RequestStateKeyring()
    async with trio.open_nursery() as nursery:
        start = trio.current_time()
        await nursery.start(partial(keep_keyring_shared, fake, keyring, retry_every=5.0))
        assert trio.current_time() == start  # started at once, sealing with its own key
        await trio.sleep(16)
        assert [t - start for t in store.asked] == [0.0, 5.0, 10.0, 15.0]
        assert keyring.current == "p1"
        await trio.sleep(60)  # the next read fails again: a new outage, logged again
        nursery.cancel_scope.cancel()
    said = [(r.levelname, r.getMessage()) for r in caplog.records if r.name.endswith("keyring")]
    assert [level for level, _ in said] == ["ERROR", "WARNING", "ERROR"]
    assert "seals with its own key until the store answers" in said[0][1]
    assert said[1][1] == "the shared requestState keys are read again"


async def test_a_store_that_shares_no_keys_ends_the_task(autojump_clock: trio.abc.Clock) -> None:
    store = SharedKeys(None)
    fake: Any = store
    keyring = RequestStateKeyring()
    before = keyring.key_ids
    async with trio.open_nursery() as nursery:
        await nursery.start(keep_keyring_shared, fake, keyring)
    assert store.asked == [trio.current_time()]  # asked once; the nursery ended by itself
    assert keyring.key_ids == before
