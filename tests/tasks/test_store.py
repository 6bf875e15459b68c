"""MemoryTaskStore: bounded, expiring, 'expired' remembered, owner listing."""

from __future__ import annotations

import pytest
import trio

from trimcp.server.tasks import (
    MemoryTaskStore,
    TaskBudget,
    TaskRecord,
    TaskStore,
    TaskStoreFull,
)
from trimcp.tasks.store import EXPIRED_IDS_KEPT


def record(task_id: str, expires_at: float | None, owner: str | None = None) -> TaskRecord:
    return TaskRecord(
        task_id=task_id,
        owner=owner,
        method="tools/call",
        protocol_version=None,
        created_at=0.0,
        updated_at=0.0,
        ttl_ms=1000,
        poll_interval_ms=None,
        expires_at=expires_at,
    )


def test_it_is_a_task_store() -> None:
    assert isinstance(MemoryTaskStore(), TaskStore)
    with pytest.raises(ValueError, match="max_tasks"):
        MemoryTaskStore(max_tasks=0)


async def test_records_expire_on_time_and_are_remembered_as_expired(
    autojump_clock: trio.abc.Clock,
) -> None:
    store = MemoryTaskStore()
    await store.create(record("a", trio.current_time() + 10))
    await store.create(record("b", None))  # never expires
    await trio.sleep(9.5)
    assert await store.get("a") is not None
    await trio.sleep(0.5)
    assert await store.get("a") is None
    assert await store.expired("a")
    assert not await store.expired("zzz")
    assert await store.get("b") is not None
    assert len(store) == 1


async def test_a_longer_expiry_saved_later_is_honoured(autojump_clock: trio.abc.Clock) -> None:
    store = MemoryTaskStore()
    rec = record("a", trio.current_time() + 10)
    await store.create(rec)
    rec.expires_at = trio.current_time() + 100
    await store.save(rec)
    await trio.sleep(50)
    assert await store.get("a") is rec
    await trio.sleep(50)
    assert await store.get("a") is None


async def test_bounded_and_duplicate_ids_refused(autojump_clock: trio.abc.Clock) -> None:
    store = MemoryTaskStore(max_tasks=2)
    await store.create(record("a", trio.current_time() + 1))
    with pytest.raises(ValueError, match="already in use"):
        await store.create(record("a", None))
    await store.create(record("b", None))
    with pytest.raises(TaskStoreFull, match="at most 2"):
        await store.create(record("c", None))
    await trio.sleep(1)  # "a" expires: room again
    await store.create(record("c", None))


async def test_expired_ids_kept_are_bounded(autojump_clock: trio.abc.Clock) -> None:
    n = EXPIRED_IDS_KEPT * 2
    store = MemoryTaskStore(budget=TaskBudget(max_tasks=n, max_tasks_per_owner=n))
    for i in range(EXPIRED_IDS_KEPT + 10):
        await store.create(record(str(i), trio.current_time() + 1))
    await trio.sleep(1)
    assert await store.get("0") is None
    assert not await store.expired("0")  # forgotten: the oldest beyond the bound
    assert await store.expired(str(EXPIRED_IDS_KEPT + 9))


async def test_owned_by_lists_oldest_first() -> None:
    store = MemoryTaskStore()
    for task_id, owner in (("1", "x"), ("2", "y"), ("3", "x")):
        await store.create(record(task_id, None, owner))
    assert [r.task_id for r in await store.owned_by("x")] == ["1", "3"]
    assert [r.task_id for r in await store.owned_by(None)] == []


async def test_one_owner_cannot_fill_the_store_for_everyone(
    autojump_clock: trio.abc.Clock,
) -> None:
    # Issue 21: the memory store was bounded only in total, so one principal's tasks
    # (kept until their TTL, up to 24 h) locked every other principal out.
    store = MemoryTaskStore(budget=TaskBudget(max_tasks=5, max_tasks_per_owner=2))
    await store.create(record("m1", trio.current_time() + 10, "mallory"))
    await store.create(record("m2", None, "mallory"))
    with pytest.raises(TaskStoreFull, match="max_tasks_per_owner") as refused:
        await store.create(record("m3", None, "mallory"))
    assert (refused.value.limit, refused.value.value) == ("max_tasks_per_owner", 2)
    assert store.count_of("mallory") == 2
    await store.create(record("a1", None, "alice"))  # another owner is not locked out
    await store.create(record("n1", None))  # anonymous callers are one owner together
    await store.create(record("n2", None))
    with pytest.raises(TaskStoreFull, match="max_tasks_per_owner"):
        await store.create(record("n3", None))
    with pytest.raises(TaskStoreFull, match="at most 5 tasks") as full:
        await store.create(record("b1", None, "bob"))  # the total still holds
    assert full.value.limit == "max_tasks"
    await trio.sleep(10)  # m1 expires: pruned before counting, for its owner and the total
    assert store.count_of("mallory") == 1
    await store.create(record("m3", None, "mallory"))


def test_budgets_refuse_nonsense() -> None:
    for kwargs in ({"max_tasks": 0}, {"max_tasks_per_owner": 0}):
        with pytest.raises(ValueError, match="TaskBudget"):
            TaskBudget(**kwargs)
