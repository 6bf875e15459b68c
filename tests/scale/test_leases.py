"""Leases: budgets of open things, counted in this process or across replicas in Redis
(trimcp.stores.leases, trimcp.stores.redis_leases)."""

from __future__ import annotations

import pytest

from tests.scale.peers import RedisServer
from trimcp.stores import redis_leases
from trimcp.stores.leases import LeaseRefused, Leases, MemoryLeases, Scope, held
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
