"""Task records and where they are kept: the :class:`TaskStore` interface and its in-memory
implementation.

A :class:`TaskRecord` is everything a second process would need to answer ``tasks/get``,
``tasks/result`` and ``tasks/list`` for a task: its id, owner, status, timestamps, TTL and,
once it ended, its result or error in wire form. What only the process running the task
has (its cancel scope, the input requests it is waiting on) stays in the
:class:`~trimcp.tasks.manager.TaskManager`.

:class:`MemoryTaskStore` keeps records in a dict, bounded (``max_tasks``) and expiring: a
record is dropped once its expiry time (``created + ttl``, on Trio's clock) has passed,
checked on every call (amortised O(log n) with a heap). Ids of expired records are kept in
a bounded set so a late poll can be told "expired" rather than "not found". A shared,
durable store (Redis) implements the same five coroutines.
"""

from __future__ import annotations

import heapq
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any, Final, Protocol, runtime_checkable

import attrs
import trio

from trimcp.types import TERMINAL_TASK_STATUSES, TaskStatus

TERMINAL: Final = TERMINAL_TASK_STATUSES
"""The statuses a task never leaves."""

#: Ids of expired tasks remembered (to answer "expired" instead of "not found").
EXPIRED_IDS_KEPT: Final = 4096


class TaskStoreFull(Exception):
    """The store holds as many tasks as it may; the new task was not created."""


@attrs.define(kw_only=True, slots=True, eq=False)
class TaskRecord:
    """The stored state of one task (mutable; the store owns it once created).

    Times: ``created_at``/``updated_at`` are Unix times (seconds) for the wire's ISO 8601
    strings; ``expires_at`` is on Trio's clock (``trio.current_time()``), which is what
    deadlines use. ``result`` is the final result in wire form (a JSON object); ``error``
    the JSON-RPC error object when the request failed. ``owner`` is the principal that
    created the task (None: no authorization context).
    """

    task_id: str
    owner: str | None
    method: str
    protocol_version: str | None
    status: TaskStatus = "working"
    status_message: str | None = None
    created_at: float
    updated_at: float
    ttl_ms: int | None
    poll_interval_ms: int | None
    expires_at: float | None
    result: dict[str, Any] | None = None
    error: dict[str, Any] | None = None

    @property
    def terminal(self) -> bool:
        return self.status in TERMINAL


@runtime_checkable
class TaskStore(Protocol):
    """Where task records live. Every call must be bounded in time (the caller may also
    cancel it). A store decides expiry itself: ``get`` never returns an expired record.
    """

    async def create(self, record: TaskRecord) -> None:
        """Store a new record; once this returns, :meth:`get` finds it ("durably created").

        Raises :class:`TaskStoreFull` when no more tasks may be kept."""
        ...

    async def get(self, task_id: str) -> TaskRecord | None:
        """The record, or None when unknown or expired."""
        ...

    async def save(self, record: TaskRecord) -> None:
        """Store the record's new state (status, result...)."""
        ...

    async def owned_by(self, owner: str | None) -> Sequence[TaskRecord]:
        """Every live record of ``owner``, oldest first (for ``tasks/list``)."""
        ...

    async def expired(self, task_id: str) -> bool:
        """Whether ``task_id`` named a task that has expired (best effort)."""
        ...


class MemoryTaskStore:
    """An in-process :class:`TaskStore`: at most ``max_tasks`` records, each dropped once it
    expires. Nothing is shared between processes; use it for one server process."""

    def __init__(self, max_tasks: int = 10_000) -> None:
        if max_tasks < 1:
            raise ValueError("max_tasks must be at least 1")
        self.max_tasks = max_tasks
        self._records: dict[str, TaskRecord] = {}
        self._expiry: list[tuple[float, str]] = []
        self._scheduled: dict[str, float] = {}  # the expiry each record's heap entry holds
        self._expired: OrderedDict[str, None] = OrderedDict()

    def __len__(self) -> int:
        return len(self._records)

    def _purge(self) -> None:
        now = trio.current_time()
        heap = self._expiry
        while heap and heap[0][0] <= now:
            _, task_id = heapq.heappop(heap)
            record = self._records.get(task_id)
            if record is None or record.expires_at is None or record.expires_at > now:
                continue  # a stale heap entry (TTL changed, record gone)
            del self._records[task_id]
            self._scheduled.pop(task_id, None)
            self._expired[task_id] = None
            if len(self._expired) > EXPIRED_IDS_KEPT:
                self._expired.popitem(last=False)

    async def create(self, record: TaskRecord) -> None:
        self._purge()
        if record.task_id in self._records:
            raise ValueError(f"task id {record.task_id!r} is already in use")
        if len(self._records) >= self.max_tasks:
            raise TaskStoreFull(
                f"the server keeps at most {self.max_tasks} tasks and has no room for another"
            )
        self._records[record.task_id] = record
        self._schedule(record)

    def _schedule(self, record: TaskRecord) -> None:
        expires_at = record.expires_at
        if expires_at is not None and self._scheduled.get(record.task_id) != expires_at:
            self._scheduled[record.task_id] = expires_at
            heapq.heappush(self._expiry, (expires_at, record.task_id))

    async def get(self, task_id: str) -> TaskRecord | None:
        self._purge()
        return self._records.get(task_id)

    async def save(self, record: TaskRecord) -> None:
        self._purge()
        if record.task_id in self._records:
            self._schedule(record)

    async def owned_by(self, owner: str | None) -> Sequence[TaskRecord]:
        self._purge()
        return [record for record in self._records.values() if record.owner == owner]

    async def expired(self, task_id: str) -> bool:
        self._purge()
        return task_id in self._expired
