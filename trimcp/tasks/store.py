"""Task records and where they are kept: the :class:`TaskStore` interface and its in-memory
implementation.

A :class:`TaskRecord` is everything a second process would need to answer ``tasks/get``,
``tasks/result`` and ``tasks/list`` for a task: its id, owner, status, timestamps, TTL and,
once it ended, its result or error in wire form. What only the process running the task
has (its cancel scope, the input requests it is waiting on) stays in the
:class:`~trimcp.tasks.manager.TaskManager`.

:class:`MemoryTaskStore` keeps records in a dict, bounded by a :class:`TaskBudget` (tasks per
owner and in total) and expiring: a record is dropped once its expiry time (``created +
ttl``, on Trio's clock) has passed, checked on every call, before anything is counted
(amortised O(log n) with a heap). Ids of expired records are kept in a bounded set so a
late poll can be told "expired" rather than "not found". A shared, durable store (Redis)
implements the same five coroutines and honours the same budget.
"""

from __future__ import annotations

import heapq
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any, Final, Protocol, runtime_checkable

import attrs
import trio

from trimcp._record import Record
from trimcp.protocol.jsonrpc import dump_json
from trimcp.types import TERMINAL_TASK_STATUSES, TaskStatus

TERMINAL: Final = TERMINAL_TASK_STATUSES
"""The statuses a task never leaves."""

#: Ids of expired tasks remembered (to answer "expired" instead of "not found").
EXPIRED_IDS_KEPT: Final = 4096


class TaskStoreFull(Exception):
    """A :class:`TaskBudget` limit refused a new task (or a result); nothing was stored.

    ``limit`` names the budget's field (``"max_tasks_per_owner"``...), ``value`` its value.
    """

    def __init__(self, message: str, limit: str = "", value: int = 0) -> None:
        super().__init__(message)
        self.limit = limit
        self.value = value


@attrs.frozen(kw_only=True, repr=False, eq=False)
class TaskBudget(Record):
    """What the task records of one server may hold (``TaskOptions(budget=...)``).

    ``max_tasks``: records kept at once, running or finished (until their TTL).
    ``max_tasks_per_owner``: the same for one owner (a principal, a session; every
    anonymous 2026 caller together is one owner). ``max_result_bytes``: one task's
    result or error (its JSON encoding); ``max_owner_bytes`` and ``max_total_bytes``: the
    results and errors kept for one owner, and for everyone. A budget refuses what would
    pass it, it never drops what it holds: a refused new task is a ``-32603`` error
    naming the limit; a result that does not fit is not kept and the task ends
    ``failed`` with an error naming the limit (an error of at most
    :data:`SMALL_PAYLOAD_BYTES` is always kept, so that one can be). Expired records are
    never counted.
    """

    max_tasks: int = 10_000
    max_tasks_per_owner: int = 1000
    max_result_bytes: int = 4 * 1024 * 1024
    max_owner_bytes: int = 32 * 1024 * 1024
    max_total_bytes: int = 256 * 1024 * 1024

    def __attrs_post_init__(self) -> None:
        if self.max_tasks < 1 or self.max_tasks_per_owner < 1:
            raise ValueError("TaskBudget: max_tasks and max_tasks_per_owner must be >= 1")
        if min(self.max_result_bytes, self.max_owner_bytes, self.max_total_bytes) < 1:
            raise ValueError("TaskBudget: the byte budgets must be >= 1")


#: A result or error this small is always kept (counted, never refused): recording that
#: a result did not fit must itself fit.
SMALL_PAYLOAD_BYTES: Final = 1024


def payload_bytes(record: TaskRecord) -> int:
    """The bytes a record's result and error take (their JSON encodings)."""
    size = 0
    if record.result is not None:
        size += len(dump_json(record.result))
    if record.error is not None:
        size += len(dump_json(record.error))
    return size


def check_payload(
    budget: TaskBudget, size: int, old: int, owner_bytes: int, total_bytes: int
) -> None:
    """Raise :class:`TaskStoreFull` when a payload of ``size`` bytes (replacing ``old``)
    does not fit ``budget`` next to ``owner_bytes`` and ``total_bytes`` already kept."""
    if size <= SMALL_PAYLOAD_BYTES or size <= old:
        return
    if size > budget.max_result_bytes:
        raise TaskStoreFull(
            f"its result is {size} bytes, over the {budget.max_result_bytes} bytes one task "
            "may keep (TaskBudget.max_result_bytes)",
            "max_result_bytes",
            budget.max_result_bytes,
        )
    if owner_bytes - old + size > budget.max_owner_bytes:
        raise TaskStoreFull(
            f"its result ({size} bytes) does not fit the {budget.max_owner_bytes} bytes of "
            "results one caller may keep (TaskBudget.max_owner_bytes); wait for older tasks "
            "to expire",
            "max_owner_bytes",
            budget.max_owner_bytes,
        )
    if total_bytes - old + size > budget.max_total_bytes:
        raise TaskStoreFull(
            f"its result ({size} bytes) does not fit the {budget.max_total_bytes} bytes of "
            "results the server keeps (TaskBudget.max_total_bytes); try again later",
            "max_total_bytes",
            budget.max_total_bytes,
        )


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
    #: The questions an ``input_required`` task waits on, by key, in wire form
    #: (``{"method": ..., "params": ...}``), kept with the record so that every replica
    #: sharing the store shows them (None: none).
    input_requests: dict[str, dict[str, Any]] | None = None

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
        """Store the record's new state (status, result...). A record that has ended
        stays as it ended: once a terminal status is stored, saving the task again
        changes nothing (a store replicas share checks the stored status as it writes,
        so the first end written wins and a late write never undoes it).

        Raises :class:`TaskStoreFull` when its result or error does not fit the store's
        :class:`TaskBudget` (nothing of the new state is kept then)."""
        ...

    async def owned_by(self, owner: str | None) -> Sequence[TaskRecord]:
        """Every live record of ``owner``, oldest first (for ``tasks/list``)."""
        ...

    async def expired(self, task_id: str) -> bool:
        """Whether ``task_id`` named a task that has expired (best effort)."""
        ...


class MemoryTaskStore:
    """An in-process :class:`TaskStore`: records within ``budget`` (default
    :class:`TaskBudget`; ``max_tasks`` overrides its total), each dropped once it expires.
    Nothing is shared between processes; use it for one server process."""

    def __init__(self, max_tasks: int | None = None, *, budget: TaskBudget | None = None) -> None:
        if max_tasks is not None and max_tasks < 1:
            raise ValueError("max_tasks must be at least 1")
        budget = budget or TaskBudget()
        if max_tasks is not None:
            budget = attrs.evolve(budget, max_tasks=max_tasks)
        self.budget = budget
        self._records: dict[str, TaskRecord] = {}
        self._per_owner: dict[str | None, int] = {}
        #: Payload bytes kept: per record, per owner, in total (the byte budgets).
        self._sizes: dict[str, int] = {}
        self._owner_bytes: dict[str | None, int] = {}
        self.total_bytes = 0
        self._expiry: list[tuple[float, str]] = []
        self._scheduled: dict[str, float] = {}  # the expiry each record's heap entry holds
        self._expired: OrderedDict[str, None] = OrderedDict()

    @property
    def max_tasks(self) -> int:
        return self.budget.max_tasks

    def __len__(self) -> int:
        return len(self._records)

    def count_of(self, owner: str | None) -> int:
        """How many records ``owner`` has now (expired ones are not counted)."""
        self._purge()
        return self._per_owner.get(owner, 0)

    def bytes_of(self, owner: str | None) -> int:
        """Payload bytes ``owner``'s records hold now (expired ones are not counted)."""
        self._purge()
        return self._owner_bytes.get(owner, 0)

    def _purge(self) -> None:
        now = trio.current_time()
        heap = self._expiry
        while heap and heap[0][0] <= now:
            _, task_id = heapq.heappop(heap)
            record = self._records.get(task_id)
            if record is None or record.expires_at is None or record.expires_at > now:
                continue  # a stale heap entry (TTL changed, record gone)
            self._drop(record)
            self._expired[task_id] = None
            if len(self._expired) > EXPIRED_IDS_KEPT:
                self._expired.popitem(last=False)

    def _drop(self, record: TaskRecord) -> None:
        del self._records[record.task_id]
        self._scheduled.pop(record.task_id, None)
        left = self._per_owner[record.owner] - 1
        if left:
            self._per_owner[record.owner] = left
        else:
            del self._per_owner[record.owner]
        self._account(record, 0)

    def _account(self, record: TaskRecord, size: int) -> None:
        old = self._sizes.pop(record.task_id, 0)
        if size:
            self._sizes[record.task_id] = size
        if size == old:
            return
        held = self._owner_bytes.get(record.owner, 0) - old + size
        if held:
            self._owner_bytes[record.owner] = held
        else:
            self._owner_bytes.pop(record.owner, None)
        self.total_bytes += size - old

    async def create(self, record: TaskRecord) -> None:
        self._purge()
        if record.task_id in self._records:
            raise ValueError(f"task id {record.task_id!r} is already in use")
        budget = self.budget
        owned = self._per_owner.get(record.owner, 0)
        if owned >= budget.max_tasks_per_owner:
            raise TaskStoreFull(
                f"this caller already has {owned} tasks kept, the most one caller may "
                "(TaskBudget.max_tasks_per_owner); wait for some to expire",
                "max_tasks_per_owner",
                budget.max_tasks_per_owner,
            )
        if len(self._records) >= budget.max_tasks:
            raise TaskStoreFull(
                f"the server keeps at most {budget.max_tasks} tasks "
                "(TaskBudget.max_tasks) and has no room for another; wait for some to expire",
                "max_tasks",
                budget.max_tasks,
            )
        self._records[record.task_id] = record
        self._per_owner[record.owner] = owned + 1
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
            has_payload = record.result is not None or record.error is not None
            size = payload_bytes(record) if has_payload else 0
            old = self._sizes.get(record.task_id, 0)
            if size != old:
                owner_bytes = self._owner_bytes.get(record.owner, 0)
                check_payload(self.budget, size, old, owner_bytes, self.total_bytes)
                self._account(record, size)
            self._schedule(record)

    async def owned_by(self, owner: str | None) -> Sequence[TaskRecord]:
        self._purge()
        return [record for record in self._records.values() if record.owner == owner]

    async def expired(self, task_id: str) -> bool:
        self._purge()
        return task_id in self._expired
