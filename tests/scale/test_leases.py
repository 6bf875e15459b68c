"""Leases: budgets of open things, counted in this process or across replicas in Redis
(trimcp.stores.leases, trimcp.stores.redis_leases)."""

from __future__ import annotations

from typing import Any

import pytest
import trio
from trio.testing import wait_all_tasks_blocked

from tests.scale.peers import RedisServer
from trimcp.stores import redis_leases
from trimcp.stores.base import StoreUnavailable
from trimcp.stores.leases import (
    Lease,
    LeaseRefused,
    Leases,
    MemoryLeases,
    Scope,
    give_back,
    held,
)
from trimcp.stores.redis_client import RedisClient
from trimcp.stores.redis_leases import RedisLeases

SESSION = Scope(key="follow:s:S", limit=2, setting="max_follows_per_session")
TOTAL = Scope(key="follow", limit=3, setting="max_follows")


async def _budgets_hold(a: Leases, b: Leases) -> None:
    """``a`` and ``b`` count together (two replicas, or one process twice)."""
    first = await a.acquire([SESSION, TOTAL])
    await b.acquire([SESSION, TOTAL])
    with pytest.raises(LeaseRefused) as refused:
        await b.acquire([SESSION, TOTAL])
    assert refused.value.scope is SESSION  # the first full scope is named ...
    assert refused.value.held == 2
    other = Scope(key="follow:s:T", limit=2, setting="max_follows_per_session")
    await a.acquire([other, TOTAL])  # ... and a refusal took nothing anywhere
    with pytest.raises(LeaseRefused, match="max_follows"):
        await a.acquire([other, TOTAL])
    await a.release(first)
    await a.release(first)  # idempotent
    async with held(b, [SESSION, TOTAL]):
        with pytest.raises(LeaseRefused):
            await a.acquire([TOTAL])


async def test_memory_leases_count_per_scope_and_in_all() -> None:
    leases = MemoryLeases()
    await _budgets_hold(leases, leases)


async def test_redis_leases_count_across_replicas(redis_server: RedisServer) -> None:
    client = RedisClient(redis_server.url)
    try:
        await _budgets_hold(
            RedisLeases(client, "l1:", "aaaaaaaaaaaa"), RedisLeases(client, "l1:", "bbbbbbbbbbbb")
        )
    finally:
        await client.aclose()


async def test_a_dead_replicas_leases_stop_counting(
    redis_server: RedisServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A replica that dies never gives its leases back: they count until their lease runs
    # out (LEASE_TTL, renewed while it lives), then the next acquire prunes them. Here
    # its leases are taken already expired: the other replica's acquire prunes them.
    client = RedisClient(redis_server.url)
    try:
        dead, alive = (
            RedisLeases(client, "l2:", "aaaaaaaaaaaa"),
            RedisLeases(client, "l2:", "b" * 12),
        )
        monkeypatch.setattr(redis_leases, "LEASE_TTL", -1.0)
        for _ in range(3):
            await dead.acquire([TOTAL])
        monkeypatch.setattr(redis_leases, "LEASE_TTL", 15.0)
        for _ in range(3):
            await alive.acquire([TOTAL])
        assert await client.execute("ZCARD", "l2:lease:follow") == 3
        ttl = await client.execute("PTTL", "l2:lease:follow")
        assert isinstance(ttl, int)
        assert 0 < ttl <= 15_000  # no longer than the leases it holds
    finally:
        await client.aclose()


class Remote(MemoryLeases):
    """Leases whose release waits for its store (a checkpoint, as a round trip has)."""

    async def release(self, lease: Lease) -> None:
        await trio.lowlevel.checkpoint()
        await super().release(lease)


async def test_a_lease_is_given_back_when_its_holder_is_cancelled() -> None:
    leases = Remote()
    with trio.CancelScope() as scope:
        async with held(leases, [SESSION, TOTAL]):
            assert leases.count(SESSION.key) == 1
            scope.cancel()
            await trio.sleep(1)  # cancelled here; the release runs shielded
    assert scope.cancelled_caught
    assert leases.count(SESSION.key) == 0
    assert leases.count(TOTAL.key) == 0


class Stuck(MemoryLeases):
    """Leases whose store stops answering when a lease is given back."""

    async def release(self, lease: Lease) -> None:
        await trio.sleep_forever()


async def test_a_release_that_hangs_is_abandoned_after_two_seconds(
    autojump_clock: trio.abc.Clock,
) -> None:
    leases = Stuck()
    lease = await leases.acquire([SESSION])
    start = trio.current_time()
    await give_back(leases, lease)
    assert trio.current_time() - start == pytest.approx(2.0)


class Script:
    """A Redis client that answers the lease script with ``replies`` in turn and records
    each pipeline (blocking the first until ``go`` is set, when ``hold`` is)."""

    def __init__(self, *replies: object, hold: bool = False) -> None:
        self.replies = list(replies)
        self.pipelines: list[list[tuple[object, ...]]] = []
        self.go = trio.Event()
        if not hold:
            self.go.set()

    async def execute(self, *args: object) -> object:
        return self.replies.pop(0)

    async def pipeline(self, commands: list[tuple[object, ...]]) -> list[object]:
        self.pipelines.append(list(commands))
        await self.go.wait()
        return [1] * len(commands)


def scripted(*replies: object, hold: bool = False) -> tuple[RedisLeases, Script]:
    client = Script(*replies, hold=hold)
    fake: Any = client
    return RedisLeases(fake, "p:", "r" * 12), client


@pytest.mark.parametrize("reply", [None, b"OK", [0], [0, 0, 0], "x"])
async def test_a_lease_script_reply_of_another_shape_is_an_outage(reply: object) -> None:
    leases, _ = scripted(reply)
    with pytest.raises(StoreUnavailable, match="unexpected reply from the lease script"):
        await leases.acquire([SESSION])


async def test_the_lease_scripts_answer_names_the_full_scope() -> None:
    leases, client = scripted([2, 3], [0, 0], [0, 0])
    with pytest.raises(LeaseRefused) as refused:
        await leases.acquire([SESSION, TOTAL])
    assert (refused.value.scope, refused.value.held) == (TOTAL, 3)
    lease = await leases.acquire([SESSION, TOTAL])
    assert lease.keys == ("p:lease:follow:s:S", "p:lease:follow")
    await leases.release(lease)
    await leases.release(lease)  # given back once
    assert client.pipelines == [
        [("ZREM", "p:lease:follow:s:S", lease.member), ("ZREM", "p:lease:follow", lease.member)]
    ]
    later = await leases.acquire([TOTAL])  # a release after the first one ended: sent too
    await leases.release(later)
    assert client.pipelines[1:] == [[("ZREM", "p:lease:follow", later.member)]]


async def test_leases_given_back_at_once_share_the_release_under_way() -> None:
    leases, client = scripted([0, 0], [0, 0], [0, 0], hold=True)
    first, second, third = [await leases.acquire([TOTAL]) for _ in range(3)]
    async with trio.open_nursery() as nursery:
        nursery.start_soon(leases.release, first)
        await wait_all_tasks_blocked()
        await leases.release(second)  # left to the release under way: returns at once
        await leases.release(third)
        assert len(client.pipelines) == 1
        client.go.set()
    assert client.pipelines == [
        [("ZREM", "p:lease:follow", first.member)],
        [("ZREM", "p:lease:follow", m) for m in (second.member, third.member)],
    ]


async def test_held_leases_are_renewed_every_renewal_period(
    autojump_clock: trio.abc.Clock,
) -> None:
    leases, client = scripted([0, 0])
    async with trio.open_nursery() as nursery:
        await nursery.start(leases.run)
        await trio.sleep(redis_leases.RENEW_EVERY * 2.5)
        assert client.pipelines == []  # nothing held: nothing sent
        lease = await leases.acquire([SESSION])
        await trio.sleep(redis_leases.RENEW_EVERY)
        assert len(client.pipelines) == 1
        renewal = client.pipelines[0]
        assert renewal[0][:3] == ("ZADD", "p:lease:follow:s:S", "XX")
        assert renewal[0][4] == lease.member
        assert renewal[1] == ("PEXPIRE", "p:lease:follow:s:S", 15_000)
        await trio.sleep(redis_leases.RENEW_EVERY)
        assert len(client.pipelines) == 2
        nursery.cancel_scope.cancel()


def test_a_lease_counts_15_s_after_its_last_renewal_as_documented() -> None:
    # docs/deployment.md and docs/input-limits.md: 15 s; renewed often enough that two
    # renewals may fail (a store hiccup) before a live replica's lease stops counting.
    assert redis_leases.LEASE_TTL == 15.0
    assert redis_leases.RENEW_EVERY * 3 <= redis_leases.LEASE_TTL
