"""The task store on a real Redis: readable from any replica, a dead runner's task fails."""

from __future__ import annotations

import time

import pytest
import trio

from tests.scale.peers import RedisServer
from trimcp.server.tasks import TaskRecord, TaskStore
from trimcp.stores import RedisStore
from trimcp.stores.redis_tasks import RUNNER_STOPPED
from trimcp.tasks.store import TaskBudget, TaskStoreFull


def record(task_id: str, owner: str | None = "ann", ttl: float | None = 60.0) -> TaskRecord:
    now = time.time()
    return TaskRecord(
        task_id=task_id,
        owner=owner,
        method="tools/call",
        protocol_version="2025-11-25",
        created_at=now,
        updated_at=now,
        ttl_ms=None if ttl is None else int(ttl * 1000),
        poll_interval_ms=500,
        expires_at=None if ttl is None else trio.current_time() + ttl,
    )


async def test_a_task_is_read_on_another_replica_and_fails_when_its_runner_dies(
    redis_server: RedisServer,
) -> None:
    a = RedisStore(redis_server.url, prefix="tk1:")
    b = RedisStore(redis_server.url, prefix="tk1:")
    try:
        on_a, on_b = a.task_store(), b.task_store()
        assert isinstance(on_a, TaskStore)
        async with trio.open_nursery() as nursery:
            await nursery.start(a.run)  # replica a is alive and runs the tasks
            await on_a.create(record("t1"))
            await on_a.create(record("t2"))
            with pytest.raises(ValueError, match="already in use"):
                await on_a.create(record("t1"))
            seen = await on_b.get("t1")
            assert seen is not None
            assert seen.status == "working"
            assert seen.expires_at is not None
            assert 50 < seen.expires_at - trio.current_time() <= 60
            done = await on_a.get("t1")
            assert done is not None
            done.status, done.result = "completed", {"content": []}
            await on_a.save(done)
            finished = await on_b.get("t1")
            assert finished is not None
            assert (finished.status, finished.result) == ("completed", {"content": []})
            assert [r.task_id for r in await on_b.owned_by("ann")] == ["t1", "t2"]
            assert await on_b.owned_by("bob") == []
            nursery.cancel_scope.cancel()
        # a stopped (its heartbeat key is gone): its unfinished task fails, for everyone.
        lost = await on_b.get("t2")
        assert lost is not None
        assert lost.status == "failed"
        assert lost.status_message == RUNNER_STOPPED
        # The error names the replica that died (as a cut call's does).
        assert lost.error == {
            "code": -32603,
            "message": RUNNER_STOPPED,
            "data": {"replica": a.replica},
        }
        again = await on_a.get("t2")
        assert again is not None
        assert again.status == "failed"
        completed = await on_b.get("t1")
        assert completed is not None
        assert completed.status == "completed"  # a finished task stays as it ended
    finally:
        await a.aclose()
        await b.aclose()


async def test_tasks_expire_and_are_bounded_per_owner(redis_server: RedisServer) -> None:
    store = RedisStore(redis_server.url, prefix="tk2:")
    try:
        tasks = store.task_store(budget=TaskBudget(max_tasks_per_owner=3))
        for n in range(3):
            await tasks.create(record(f"e{n}", owner="carl", ttl=30))
        with pytest.raises(TaskStoreFull):
            await tasks.create(record("e3", owner="carl"))
        ttl = await store.client.execute("PTTL", "tk2:task:e0")
        assert isinstance(ttl, int)
        assert 0 < ttl <= 30_000
        forever = record("f", owner="dora", ttl=None)
        await tasks.create(forever)  # no TTL: still expires, after max_ttl
        ttl = await store.client.execute("PTTL", "tk2:task:f")
        assert isinstance(ttl, int)
        assert 0 < ttl <= 24 * 3600 * 1000
        await store.client.execute("DEL", "tk2:task:e0")  # as its expiry would
        assert await tasks.get("e0") is None
        assert await tasks.expired("e0")
        assert not await tasks.expired("e1")
        assert not await tasks.expired("never")
        assert [r.task_id for r in await tasks.owned_by("carl")] == ["e1", "e2"]
    finally:
        await store.aclose()


async def test_expired_tasks_are_pruned_before_counting(redis_server: RedisServer) -> None:
    # Issue 21: the per-owner set kept expired tasks, so an owner whose tasks had all
    # expired stayed at its cap (nothing pruned it in 2026, which never lists tasks).
    store = RedisStore(redis_server.url, prefix="tk3:")
    try:
        tasks = store.task_store(budget=TaskBudget(max_tasks=4, max_tasks_per_owner=2))
        for n in range(2):  # expired at once: their keys are gone within a millisecond
            await tasks.create(record(f"old{n}", owner="carl", ttl=-10))
        await tasks.create(record("new0", owner="carl"))
        await tasks.create(record("new1", owner="carl"))
        with pytest.raises(TaskStoreFull, match="max_tasks_per_owner") as refused:
            await tasks.create(record("new2", owner="carl"))
        assert (refused.value.limit, refused.value.value) == ("max_tasks_per_owner", 2)
        assert [r.task_id for r in await tasks.owned_by("carl")] == ["new0", "new1"]
        held = await store.client.execute("ZCARD", "tk3:tasks-of:carl")
        assert held == 2  # the expired ones left the owner's set
        await tasks.create(record("d0", owner="dora"))  # another owner: room
        with pytest.raises(ValueError, match="already in use"):
            await tasks.create(record("d0", owner="dora"))
        await tasks.create(record("d1", owner="dora"))
        with pytest.raises(TaskStoreFull, match=r"at most 4 tasks \(TaskBudget.max_tasks\)"):
            await tasks.create(record("e0", owner="erin"))  # the total holds across owners
    finally:
        await store.aclose()


async def test_results_are_kept_within_byte_budgets(redis_server: RedisServer) -> None:
    # Issue 21: results were kept with no byte bound. Measured by the store's own
    # accounting (its byte hashes): what does not fit is refused, naming the limit, and
    # an expired task's bytes are given back before the next check.
    store = RedisStore(redis_server.url, prefix="tk4:")
    try:
        budget = TaskBudget(max_result_bytes=300_000, max_owner_bytes=500_000)
        tasks = store.task_store(budget=budget)

        async def finish(task_id: str, size: int, ttl: float = 60.0) -> None:
            rec = record(task_id, owner="carl", ttl=ttl)
            await tasks.create(rec)
            rec.status, rec.result = "completed", {"text": "x" * size}
            await tasks.save(rec)

        async def held(key: str = "tk4:tasks-bytes-of:carl") -> int:
            value = await store.client.execute("HGET", key, "")
            return int(value) if isinstance(value, bytes) else 0

        await finish("a", 200_000)
        await finish("b", 200_000)
        with pytest.raises(TaskStoreFull, match=r"TaskBudget\.max_owner_bytes") as refused:
            await finish("c", 200_000)
        assert (refused.value.limit, refused.value.value) == ("max_owner_bytes", 500_000)
        c = await tasks.get("c")
        assert c is not None
        assert (c.status, c.result) == ("working", None)  # nothing of the refused save
        with pytest.raises(TaskStoreFull, match=r"TaskBudget\.max_result_bytes"):
            await finish("d", 400_000)
        small = record("e", owner="carl")
        await tasks.create(small)
        small.status, small.error = "failed", {"code": -32603, "message": "no room"}
        await tasks.save(small)  # a small error always fits (the refusal must be kept)
        assert 400_000 < await held() <= 500_000
        assert await held() == await held("tk4:tasks-bytes")
        await store.client.execute("ZADD", "tk4:tasks-of:carl", "XX", 1, "a")  # a expired
        await store.client.execute("ZADD", "tk4:tasks-all", "XX", 1, "a")
        await finish("f", 150_000)  # a's bytes were given back first
        assert 300_000 < await held() <= 500_000
        assert await held() == await held("tk4:tasks-bytes")
    finally:
        await store.aclose()


async def test_a_task_that_ended_is_never_written_back_to_running(
    redis_server: RedisServer,
) -> None:
    # B takes a tasks/cancel for a task A runs: B records the end. A, not told yet, then
    # writes the state it has (a question, a progress message, its result): the record
    # stays as it ended, so A stops the work when it hears of the cancel (it acts only on
    # a stored "cancelled"), and a client never sees an acknowledged cancel undone. Before,
    # A's write put the task back to input_required and the cancel was lost.
    a = RedisStore(redis_server.url, prefix="tk5:")
    b = RedisStore(redis_server.url, prefix="tk5:")
    try:
        on_a, on_b = a.task_store(), b.task_store()
        async with trio.open_nursery() as nursery:
            await nursery.start(a.run)
            await on_a.create(record("t1", owner="dan"))
            runner = await on_a.get("t1")  # A's own copy of the running task
            assert runner is not None
            taken = await on_b.get("t1")
            assert taken is not None
            taken.status, taken.status_message = "cancelled", "The task was cancelled by request"
            await on_b.save(taken)
            runner.status, runner.input_requests = "input_required", {"input-1": {"method": "x"}}
            await on_a.save(runner)  # a status write
            runner.status, runner.result = "completed", {"text": "y" * 5000}
            await on_a.save(runner)  # a final write, with a result to count
            for store in (on_a, on_b):
                seen = await store.get("t1")
                assert seen is not None
                assert (seen.status, seen.input_requests, seen.result) == ("cancelled", None, None)
            kept = await a.client.execute("HGET", "tk5:tasks-bytes-of:dan", "")
            assert kept in (None, b"0")  # the refused result's bytes were not counted
            nursery.cancel_scope.cancel()
    finally:
        await a.aclose()
        await b.aclose()
