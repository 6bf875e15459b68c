"""The task store on Redis: a task's status and result are readable from any replica.

One key per task (``<prefix>task:<id>``, JSON), expiring with the task's TTL (tasks without
one expire after ``max_ttl``); a sorted set per owner (``<prefix>tasks-of:<owner>``)
lists them for ``tasks/list``, and one of every task (``<prefix>tasks-all``), both
scored by expiry (Unix time), so a create first removes what has expired
(``ZREMRANGEBYSCORE``) and then counts against the :class:`~trimcp.tasks.store.TaskBudget`
(per owner and in total), atomically in one script. The bytes of the results and errors
kept are counted in a hash per owner (``<prefix>tasks-bytes-of:<owner>``) and one for
everyone (``<prefix>tasks-bytes``): the size of each task by its id and the sum under
the empty field; a save with a result checks the byte budgets and writes in one script,
and pruning an expired task gives its bytes back. A marker per task
(``<prefix>task-seen:<id>``) outlives it by ``seen_for`` seconds, so a late poll is told
"expired" rather than "unknown".

A record remembers the replica running the task. When a replica reads a task that is
still working but whose replica has stopped saying it is alive, the task is failed there
and then (its runner died: it will never finish), never left working for ever; its error
(``-32603``, :data:`RUNNER_STOPPED`) names that replica in ``data``: ``{"replica": id}``.

A record that has ended is final: every write checks the stored status in the same script
and leaves an ended record as it is. While a task runs, the replica running it is the one
writer of its record; its end is written once, by whoever gets there first (the runner
with its outcome, a replica taking a ``tasks/cancel``, or one finding the runner dead), so
a write of the runner that was on its way (a question, a progress message) never undoes
a cancel another replica acknowledged.

Times: a record's ``expires_at`` is on the reading process's Trio clock; Redis keeps the
expiry as a Unix time, converted on every read and write.
"""

from __future__ import annotations

import json
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import trio

from trimcp.errors import INTERNAL_ERROR
from trimcp.stores.redis_client import RedisClient
from trimcp.tasks.store import (
    SMALL_PAYLOAD_BYTES,
    TERMINAL,
    TaskBudget,
    TaskRecord,
    TaskStoreFull,
    check_payload,
    payload_bytes,
)

RUNNER_STOPPED = "the server process running this task stopped; start the task again"


def _encode(record: TaskRecord, replica: str) -> bytes:
    expires = record.expires_at
    unix_expiry = None if expires is None else time.time() + (expires - trio.current_time())
    return json.dumps(
        {
            "id": record.task_id,
            "owner": record.owner,
            "method": record.method,
            "version": record.protocol_version,
            "status": record.status,
            "message": record.status_message,
            "created": record.created_at,
            "updated": record.updated_at,
            "ttl": record.ttl_ms,
            "poll": record.poll_interval_ms,
            "expires": unix_expiry,
            "result": record.result,
            "error": record.error,
            "inputs": record.input_requests,
            "runner": replica,
        },
        separators=(",", ":"),
    ).encode()


def _decode(raw: bytes) -> tuple[TaskRecord, str]:
    data: dict[str, Any] = json.loads(raw)
    unix_expiry = data["expires"]
    expires_at = None if unix_expiry is None else trio.current_time() + (unix_expiry - time.time())
    record = TaskRecord(
        task_id=data["id"],
        owner=data["owner"],
        method=data["method"],
        protocol_version=data["version"],
        status=data["status"],
        status_message=data["message"],
        created_at=data["created"],
        updated_at=data["updated"],
        ttl_ms=data["ttl"],
        poll_interval_ms=data["poll"],
        expires_at=expires_at,
        result=data["result"],
        error=data["error"],
        input_requests=data.get("inputs"),
    )
    return record, str(data["runner"])


class RedisTaskStore:
    """A :class:`~trimcp.server.tasks.TaskStore` in Redis (see the module docstring).

    Made by :meth:`trimcp.stores.RedisStore.task_store`; ``serve_http(store=...)`` gives
    the server one (or ``Server(..., task_store=store.task_store())``). Raises
    StoreUnavailable when Redis does not answer in time (the task call fails with an error).
    """

    def __init__(
        self,
        client: RedisClient,
        prefix: str,
        *,
        replica: str,
        alive: Callable[[str], Awaitable[bool]],
        budget: TaskBudget | None = None,
        max_ttl: float = 24 * 3600.0,
        seen_for: float = 3600.0,
    ) -> None:
        self._client = client
        self._prefix = prefix
        self.replica = replica
        self._alive = alive
        self.budget = budget or TaskBudget()
        self.max_ttl = max_ttl
        self.seen_for = seen_for

    def _key(self, task_id: str) -> str:
        return f"{self._prefix}task:{task_id}"

    def _owner_key(self, owner: str | None) -> str:
        return f"{self._prefix}tasks-of:{'' if owner is None else owner}"

    def _bytes_key(self, owner: str | None) -> str:
        return f"{self._prefix}tasks-bytes-of:{'' if owner is None else owner}"

    def _ttl_ms(self, record: TaskRecord) -> int:
        if record.expires_at is None:
            return int(self.max_ttl * 1000)
        left = record.expires_at - trio.current_time()
        return max(1, min(int(left * 1000), int(self.max_ttl * 1000)))

    async def create(self, record: TaskRecord) -> None:
        ttl = self._ttl_ms(record)
        now = time.time()
        expires = now + ttl / 1000
        if record.expires_at is not None:  # already past: counted as gone from now on
            expires = min(expires, now + (record.expires_at - trio.current_time()))
        budget = self.budget
        reply = await self._client.execute(
            "EVAL",
            _CREATE,
            6,
            self._key(record.task_id),
            f"{self._prefix}task-seen:{record.task_id}",
            self._owner_key(record.owner),
            f"{self._prefix}tasks-all",
            self._bytes_key(record.owner),
            f"{self._prefix}tasks-bytes",
            record.task_id,
            _encode(record, self.replica),
            ttl,
            ttl + int(self.seen_for * 1000),
            repr(now),
            repr(expires),
            budget.max_tasks_per_owner,
            budget.max_tasks,
            int(self.max_ttl * 1000) + 60_000,
        )
        if not isinstance(reply, list) or len(reply) != 2:
            raise ValueError(f"unexpected reply from the task store: {reply!r}")
        outcome, count = reply[0], reply[1]
        if outcome == b"owner":
            raise TaskStoreFull(
                f"this caller already has {count} tasks kept, the most one caller may "
                "(TaskBudget.max_tasks_per_owner); wait for some to expire",
                "max_tasks_per_owner",
                budget.max_tasks_per_owner,
            )
        if outcome == b"total":
            raise TaskStoreFull(
                f"the server keeps at most {budget.max_tasks} tasks "
                "(TaskBudget.max_tasks) and has no room for another; wait for some to expire",
                "max_tasks",
                budget.max_tasks,
            )
        if outcome == b"taken":
            raise ValueError(f"task id {record.task_id!r} is already in use")

    async def get(self, task_id: str) -> TaskRecord | None:
        raw = await self._client.execute("GET", self._key(task_id))
        if not isinstance(raw, bytes):
            return None
        record, runner = _decode(raw)
        if not record.terminal and runner != self.replica and not await self._alive(runner):
            record.status = "failed"
            record.status_message = RUNNER_STOPPED
            error_data = {"replica": runner}  # which one: as a cut call's error says
            record.error = {"code": INTERNAL_ERROR, "message": RUNNER_STOPPED, "data": error_data}
            record.updated_at = time.time()
            if not await self._write(record, runner):
                return await self.get(task_id)  # it ended meanwhile: as it ended
        return record

    async def save(self, record: TaskRecord) -> None:
        if record.result is None and record.error is None:
            await self._write(record, self.replica)  # a status change: nothing to count
            return
        size = payload_bytes(record)
        budget = self.budget
        reply = await self._client.execute(
            "EVAL",
            _SAVE,
            5,
            self._key(record.task_id),
            self._owner_key(record.owner),
            f"{self._prefix}tasks-all",
            self._bytes_key(record.owner),
            f"{self._prefix}tasks-bytes",
            record.task_id,
            _encode(record, self.replica),
            self._ttl_ms(record),
            repr(time.time()),
            size,
            budget.max_result_bytes,
            budget.max_owner_bytes,
            budget.max_total_bytes,
            SMALL_PAYLOAD_BYTES,
            int(self.max_ttl * 1000) + 60_000,
        )
        if isinstance(reply, list) and len(reply) == 4 and reply[0] == b"over":
            old, owner_bytes, total_bytes = (int(value) for value in reply[1:])
            check_payload(budget, size, old, owner_bytes, total_bytes)  # raises, naming it

    async def _write(self, record: TaskRecord, runner: str) -> bool:
        """Write ``record`` unless its stored record has ended (or is gone): whether it
        was written."""
        written = await self._client.execute(
            "EVAL",
            _WRITE,
            1,
            self._key(record.task_id),
            _encode(record, runner),
            self._ttl_ms(record),
        )
        return written == 1

    async def owned_by(self, owner: str | None) -> Sequence[TaskRecord]:
        owners = self._owner_key(owner)
        ids = await self._client.execute("ZRANGEBYSCORE", owners, f"({time.time()!r}", "+inf")
        if not isinstance(ids, list) or not ids:
            return []
        raws = await self._client.execute("MGET", *[self._key(i.decode()) for i in ids])
        found = raws if isinstance(raws, list) else []
        records = [_decode(raw)[0] for raw in found if isinstance(raw, bytes)]
        records.sort(key=_created)  # oldest first (the set is ordered by expiry)
        return records

    async def expired(self, task_id: str) -> bool:
        seen, live = await self._client.pipeline(
            [
                ("EXISTS", f"{self._prefix}task-seen:{task_id}"),
                ("EXISTS", self._key(task_id)),
            ]
        )
        return seen == 1 and live == 0


def _created(record: TaskRecord) -> tuple[float, str]:
    return (record.created_at, record.task_id)


#: Whether the record stored under a key has ended (a terminal status): it is final.
_ENDED = (
    """
local function ended(key)
  local raw = redis.call('GET', key)
  if not raw then return false end
  local status = cjson.decode(raw)['status']
  return """
    + " or ".join(f"status == '{status}'" for status in sorted(TERMINAL))
    + """
end
"""
)

#: KEYS: the task; ARGV: the record, its ttl ms. Writes the record if it exists and has
#: not ended: 1, else 0.
_WRITE = (
    _ENDED
    + """
if ended(KEYS[1]) then return 0 end
if redis.call('SET', KEYS[1], ARGV[1], 'XX', 'PX', ARGV[2]) then return 1 end
return 0
"""
)

#: Removes the expired members of a task set (KEYS[n]) and gives their bytes back to
#: its byte hash (KEYS[m]), in bounded steps.
_PRUNE = """
local function prune(set, sizes, now)
  while true do
    local gone = redis.call('ZRANGEBYSCORE', set, '-inf', now, 'LIMIT', 0, 500)
    if #gone == 0 then return end
    redis.call('ZREM', set, unpack(gone))
    local held = redis.call('HMGET', sizes, unpack(gone))
    local freed = 0
    for i = 1, #gone do
      if held[i] then freed = freed + tonumber(held[i]) end
    end
    if freed > 0 then
      redis.call('HDEL', sizes, unpack(gone))
      redis.call('HINCRBY', sizes, '', -freed)
    end
  end
end
"""

#: KEYS: the task, its seen-marker, its owner's set, the set of all tasks, their byte
#: hashes; ARGV: the id, the record, its ttl ms, the marker's ttl ms, now and its expiry
#: (Unix), the most tasks per owner and in total, the sets' ttl ms. Prunes expired
#: tasks, then counts: {'owner'|'total', count} past a budget, {'taken', 0} for an id
#: in use, else creates the task: {'ok', 0}.
_CREATE = (
    _PRUNE
    + """
prune(KEYS[3], KEYS[5], ARGV[5])
prune(KEYS[4], KEYS[6], ARGV[5])
local mine = redis.call('ZCARD', KEYS[3])
if mine >= tonumber(ARGV[7]) then return {'owner', mine} end
local all = redis.call('ZCARD', KEYS[4])
if all >= tonumber(ARGV[8]) then return {'total', all} end
if not redis.call('SET', KEYS[1], ARGV[2], 'NX', 'PX', ARGV[3]) then return {'taken', 0} end
redis.call('SET', KEYS[2], '1', 'NX', 'PX', ARGV[4])
redis.call('ZADD', KEYS[3], ARGV[6], ARGV[1])
redis.call('ZADD', KEYS[4], ARGV[6], ARGV[1])
redis.call('PEXPIRE', KEYS[3], ARGV[9])
redis.call('PEXPIRE', KEYS[4], ARGV[9])
return {'ok', 0}
"""
)

#: KEYS: the task, its owner's set, the set of all tasks, their byte hashes; ARGV: the
#: id, the record, its ttl ms, now (Unix), its payload bytes, the most bytes per task,
#: per owner and in total, the size always kept, the hashes' ttl ms. Prunes, then
#: {'ended'} when the stored record has ended (nothing written, nothing counted),
#: {'over', old, owner bytes, total bytes} when the payload does not fit (nothing
#: written), else writes the record (if it still exists) and counts its bytes: {'ok'}.
_SAVE = (
    _PRUNE
    + _ENDED
    + """
prune(KEYS[2], KEYS[4], ARGV[4])
prune(KEYS[3], KEYS[5], ARGV[4])
if ended(KEYS[1]) then return {'ended'} end
local size = tonumber(ARGV[5])
local old = tonumber(redis.call('HGET', KEYS[4], ARGV[1]) or '0')
local mine = tonumber(redis.call('HGET', KEYS[4], '') or '0')
local all = tonumber(redis.call('HGET', KEYS[5], '') or '0')
if size > tonumber(ARGV[9]) and size > old and (size > tonumber(ARGV[6])
    or mine - old + size > tonumber(ARGV[7]) or all - old + size > tonumber(ARGV[8])) then
  return {'over', old, mine, all}
end
if not redis.call('SET', KEYS[1], ARGV[2], 'XX', 'PX', ARGV[3]) then return {'ok'} end
if size ~= old and redis.call('ZSCORE', KEYS[2], ARGV[1]) then
  redis.call('HSET', KEYS[4], ARGV[1], size)
  redis.call('HSET', KEYS[5], ARGV[1], size)
  redis.call('HINCRBY', KEYS[4], '', size - old)
  redis.call('HINCRBY', KEYS[5], '', size - old)
  redis.call('PEXPIRE', KEYS[4], ARGV[10])
  redis.call('PEXPIRE', KEYS[5], ARGV[10])
end
return {'ok'}
"""
)
