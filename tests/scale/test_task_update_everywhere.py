"""Read your writes for a task's answers across replicas: once a client has the answer to
its 2026 ``tasks/update``, a ``tasks/get`` on any replica shows the task without the
questions it answered, wherever the update landed and wherever the task runs.

Two servers in this process stand for two replicas (no Redis): one task store shared, and
a loopback bus whose delivery to each replica the test holds back or lets through, so the
interleavings that made the official ``tasks-mrtr-input`` scenario fail now and then
through nginx (the replica running the task hears the answers late; a replica's write to
the shared record lands late) happen every time. Clients speak 2026-07-28 over memory
streams; the clock is Trio's autojump clock.

Before the fix the replica that took the ``tasks/update`` wrote the record itself and
answered at once: the replica running the task, not told yet, still listed the answered
question; an update taken by the replica running the task was answered before the record
was written; and a late write of the first replica put a finished task back to
``working``.
"""

from __future__ import annotations

import copy
import functools
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from typing import Any

import pytest
import trio
import trio.testing

import trimcp
from tests.scale.test_bus_logic import LoopbackBus
from trimcp.client.connect import connect_transport
from trimcp.tasks.manager import TaskOptions
from trimcp.tasks.store import TaskRecord
from trimcp.transports.memory import memory_transport_pair
from trimcp.types import ElicitResult

V2026 = "2026-07-28"
#: What every raw 2026 request of these clients carries (tasks extension, elicitation).
ENVELOPE = {
    "_meta": {
        "io.modelcontextprotocol/protocolVersion": V2026,
        "io.modelcontextprotocol/clientCapabilities": {
            "elicitation": {},
            "extensions": {"io.modelcontextprotocol/tasks": {}},
        },
        "io.modelcontextprotocol/clientInfo": {"name": "test", "version": "1"},
    }
}
FORM = {"type": "object", "properties": {"name": {"type": "string"}}}


class SharedRecords:
    """A task store shared by the replicas that, like Redis, hands each one copies: what a
    replica changes in its record is seen elsewhere only once it is saved. Unlike the real
    stores it lets a late write undo a task's end: the replicas must write right without
    that guard."""

    def __init__(self) -> None:
        self.records: dict[str, TaskRecord] = {}


class ReplicaView:
    """One replica's connection to :class:`SharedRecords`; its writes can be held back
    (``hold()``) until ``release()``, as a slow connection to Redis would."""

    def __init__(self, shared: SharedRecords) -> None:
        self._shared = shared
        self._open = trio.Event()
        self._open.set()
        self.held_writes = 0

    def hold(self) -> None:
        self._open = trio.Event()

    def release(self) -> None:
        self._open.set()

    async def create(self, record: TaskRecord) -> None:
        self._shared.records[record.task_id] = copy.deepcopy(record)

    async def get(self, task_id: str) -> TaskRecord | None:
        record = self._shared.records.get(task_id)
        return copy.deepcopy(record) if record is not None else None

    async def save(self, record: TaskRecord) -> None:
        state = copy.deepcopy(record)  # what it is now, written when the write goes through
        if not self._open.is_set():
            self.held_writes += 1
            await self._open.wait()
        if record.task_id in self._shared.records:
            self._shared.records[record.task_id] = state

    async def owned_by(self, owner: str | None) -> Sequence[TaskRecord]:
        return [copy.deepcopy(r) for r in self._shared.records.values() if r.owner == owner]

    async def expired(self, task_id: str) -> bool:
        return False


def replica(store: ReplicaView, bus: LoopbackBus, second_question: trio.Event) -> trimcp.Server:
    app = trimcp.Server("replica", task_store=store)

    @app.tool(task_support="optional")
    async def confirm(ctx: trimcp.Context) -> str:
        """One question, then done."""
        outcome = await ctx.elicit("Sure?", FORM)
        return f"confirmed by {(outcome.data or {}).get('name')}"

    @app.tool(task_support="optional")
    async def two_questions(ctx: trimcp.Context) -> str:
        """Two questions pending at once."""
        names: dict[str, str] = {}

        async def ask(field: str) -> None:
            outcome = await ctx.elicit(f"Your {field}?", FORM)
            names[field] = str((outcome.data or {}).get("name"))

        async with trio.open_nursery() as nursery:
            nursery.start_soon(ask, "first")
            nursery.start_soon(ask, "second")
        return f"{names['first']} {names['second']}"

    @app.tool(task_support="optional")
    async def one_then_another(ctx: trimcp.Context) -> str:
        """A question, then (once the test says so) another while the first is open."""
        async with trio.open_nursery() as nursery:
            nursery.start_soon(ctx.elicit, "First?", FORM)
            await second_question.wait()
            outcome = await ctx.elicit("Second?", FORM)
            nursery.cancel_scope.cancel()
        return f"second: {(outcome.data or {}).get('name')}"

    app.attach_bus(bus)
    return app


async def _elicited(ctx: Any, params: Any) -> ElicitResult:
    raise AssertionError("the test answers with tasks/update itself")


@asynccontextmanager
async def client_of(app: trimcp.Server) -> AsyncIterator[trimcp.Client]:
    """A 2026-07-28 client of ``app`` over a memory stream."""
    client_end, server_end = memory_transport_pair()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(app.serve_stream, server_end)
        async with connect_transport(client_end, elicitation_handler=_elicited) as client:
            assert client.negotiated.protocol_version == V2026
            yield client
        nursery.cancel_scope.cancel()


async def call(client: trimcp.Client, method: str, **params: Any) -> dict[str, Any]:
    answer = await client.session.send_request(method, {**params, **ENVELOPE})
    assert isinstance(answer, dict)
    return answer


class Cluster:
    def __init__(self) -> None:
        self.shared = shared = SharedRecords()
        peers: list[LoopbackBus] = []
        subscriptions: dict[str, set[str]] = {}
        self.stores = (ReplicaView(shared), ReplicaView(shared))
        self.buses = (LoopbackBus(1, peers, subscriptions), LoopbackBus(2, peers, subscriptions))
        #: Lets ``one_then_another`` ask its second question.
        self.second_question = trio.Event()
        pairs = zip(self.stores, self.buses, strict=True)
        self.apps = tuple(replica(s, b, self.second_question) for s, b in pairs)


@asynccontextmanager
async def cluster(
    nursery: trio.Nursery,
) -> AsyncIterator[tuple[Cluster, trimcp.Client, trimcp.Client]]:
    """Two replicas (A, B), a client of each; B's bus delivers from the start, A's only
    once the test starts it (``nursery.start_soon(c.buses[0].run)``)."""
    c = Cluster()
    nursery.start_soon(c.buses[1].run)
    async with (
        c.apps[0].tasks.open(),
        c.apps[1].tasks.open(),
        client_of(c.apps[0]) as on_a,
        client_of(c.apps[1]) as on_b,
    ):
        yield c, on_a, on_b


async def started_on_a(on_a: trimcp.Client, tool: str, questions: int) -> tuple[str, list[str]]:
    """Start ``tool`` as a task on A; wait until it asks ``questions`` questions."""
    task_id = (await call(on_a, "tools/call", name=tool, arguments={}))["taskId"]
    await trio.testing.wait_all_tasks_blocked()
    task = await call(on_a, "tasks/get", taskId=task_id)
    assert task["status"] == "input_required"
    keys = sorted(task["inputRequests"])
    assert len(keys) == questions
    return task_id, keys


def answer(name: str) -> dict[str, Any]:
    return {"action": "accept", "content": {"name": name}}


async def test_an_update_taken_elsewhere_is_seen_where_the_task_runs(
    autojump_clock: trio.abc.Clock,
) -> None:
    # The update lands on B; the bus is slow to tell A, which runs the task.
    async with trio.open_nursery() as nursery, cluster(nursery) as (c, on_a, on_b):
        task_id, (first, second) = await started_on_a(on_a, "two_questions", 2)
        seen: list[dict[str, Any]] = []

        async def update_then_get() -> None:
            await call(on_b, "tasks/update", taskId=task_id, inputResponses={first: answer("x")})
            seen.append(await call(on_a, "tasks/get", taskId=task_id))
            seen.append(await call(on_b, "tasks/get", taskId=task_id))

        async with trio.open_nursery() as inner:
            inner.start_soon(update_then_get)
            await trio.testing.wait_all_tasks_blocked()
            nursery.start_soon(c.buses[0].run)  # A hears the bus from now on
        for task in seen:  # after the acknowledgement: the answered question is gone
            assert task["status"] == "input_required"
            assert sorted(task["inputRequests"]) == [second]
        await call(on_a, "tasks/update", taskId=task_id, inputResponses={second: answer("y")})
        await trio.testing.wait_all_tasks_blocked()
        done = await call(on_b, "tasks/get", taskId=task_id)
        assert done["status"] == "completed"
        assert sorted(done["result"]["content"][0]["text"].split()) == ["x", "y"]
        nursery.cancel_scope.cancel()


async def test_an_update_taken_where_the_task_runs_is_seen_elsewhere(
    autojump_clock: trio.abc.Clock,
) -> None:
    # The update lands on A, which runs the task; A's write to the shared record is slow.
    async with trio.open_nursery() as nursery, cluster(nursery) as (c, on_a, on_b):
        nursery.start_soon(c.buses[0].run)
        task_id, (first, second) = await started_on_a(on_a, "two_questions", 2)
        seen: list[dict[str, Any]] = []

        async def update_then_get() -> None:
            await call(on_a, "tasks/update", taskId=task_id, inputResponses={first: answer("x")})
            seen.append(await call(on_b, "tasks/get", taskId=task_id))

        c.stores[0].hold()
        async with trio.open_nursery() as inner:
            inner.start_soon(update_then_get)
            await trio.testing.wait_all_tasks_blocked()
            assert c.stores[0].held_writes >= 1  # the critical write is the one held
            c.stores[0].release()
        assert [(t["status"], sorted(t["inputRequests"])) for t in seen] == [
            ("input_required", [second])
        ]
        nursery.cancel_scope.cancel()


async def test_a_late_write_elsewhere_never_undoes_the_end_of_a_task(
    autojump_clock: trio.abc.Clock,
) -> None:
    # The last answer lands on B, whose writes are slow; A hears it, the task completes.
    async with trio.open_nursery() as nursery, cluster(nursery) as (c, on_a, on_b):
        nursery.start_soon(c.buses[0].run)
        task_id, (key,) = await started_on_a(on_a, "confirm", 1)
        c.stores[1].hold()
        async with trio.open_nursery() as inner:
            inner.start_soon(
                functools.partial(
                    call, on_b, "tasks/update", taskId=task_id, inputResponses={key: answer("z")}
                )
            )
            await trio.testing.wait_all_tasks_blocked()
            c.stores[1].release()
        await trio.testing.wait_all_tasks_blocked()
        for client in (on_a, on_b):
            task = await call(client, "tasks/get", taskId=task_id)
            assert (task["status"], task.get("inputRequests")) == ("completed", None)
        nursery.cancel_scope.cancel()


async def test_an_update_the_running_replica_never_confirms_fails_clearly(
    autojump_clock: trio.abc.Clock,
) -> None:
    # A never hears the bus: B's update is not acknowledged, it fails within the bound,
    # saying what to do; sent again once A hears, it is.
    async with trio.open_nursery() as nursery, cluster(nursery) as (c, on_a, on_b):
        task_id, (key,) = await started_on_a(on_a, "confirm", 1)
        start = trio.current_time()
        with pytest.raises(trimcp.McpError) as refused:
            await call(on_b, "tasks/update", taskId=task_id, inputResponses={key: answer("z")})
        assert trio.current_time() - start == TaskOptions().answer_timeout
        assert refused.value.code == -32603
        assert "did not confirm these answers" in refused.value.message
        assert "at most 5s: TaskOptions.answer_timeout" in refused.value.message
        nursery.start_soon(c.buses[0].run)
        await trio.testing.wait_all_tasks_blocked()  # A hears what was sent meanwhile
        await call(on_b, "tasks/update", taskId=task_id, inputResponses={key: answer("z")})
        await trio.testing.wait_all_tasks_blocked()
        task = await call(on_b, "tasks/get", taskId=task_id)
        assert (task["status"], task["result"]["content"][0]["text"]) == (
            "completed",
            "confirmed by z",
        )
        nursery.cancel_scope.cancel()


async def test_an_answer_to_a_question_not_stored_yet_reaches_the_task(
    autojump_clock: trio.abc.Clock,
) -> None:
    # A shows its client a question it has not stored yet (its write is slow); the client
    # answers it through B, where the stored record does not list it.
    async with trio.open_nursery() as nursery, cluster(nursery) as (c, on_a, on_b):
        nursery.start_soon(c.buses[0].run)
        task_id, (first,) = await started_on_a(on_a, "one_then_another", 1)
        c.stores[0].hold()
        c.second_question.set()
        await trio.testing.wait_all_tasks_blocked()
        shown = await call(on_a, "tasks/get", taskId=task_id)
        (second,) = set(shown["inputRequests"]) - {first}
        stored = await call(on_b, "tasks/get", taskId=task_id)
        assert sorted(stored["inputRequests"]) == [first]  # the write is held
        seen: list[dict[str, Any]] = []

        async def update_then_get() -> None:
            await call(on_b, "tasks/update", taskId=task_id, inputResponses={second: answer("q")})
            seen.append(await call(on_b, "tasks/get", taskId=task_id))

        async with trio.open_nursery() as inner:
            inner.start_soon(update_then_get)
            await trio.testing.wait_all_tasks_blocked()
            c.stores[0].release()
        await trio.testing.wait_all_tasks_blocked()
        (task,) = seen
        assert second not in task.get("inputRequests", {})
        done = await call(on_b, "tasks/get", taskId=task_id)
        assert done["status"] == "completed", done  # the answer reached the task
        assert done["result"]["content"][0]["text"] == "second: q"
        nursery.cancel_scope.cancel()


async def test_an_update_nobody_else_hears_ends_when_the_task_reads_failed(
    autojump_clock: trio.abc.Clock,
) -> None:
    # A, running the task, died: it is gone from the bus (nobody but B hears the update),
    # and its record reads failed once its heartbeat lapses (3 s; set here by hand, as the
    # Redis store does when it reads a task whose runner is not alive). The update is
    # acknowledged then (a task that ended takes no answers) and tasks/get says why.
    # Before, it failed at once saying to send the answers again, to a task as good as
    # over: a 2026 client following the task ended with that error, not the task's.
    async with trio.open_nursery() as nursery, cluster(nursery) as (c, on_a, on_b):
        nursery.start_soon(c.buses[0].run)
        task_id, (key,) = await started_on_a(on_a, "confirm", 1)
        c.buses[0].peers.remove(c.buses[0])

        async def heartbeat_lapses() -> None:
            await trio.sleep(3)
            record = c.shared.records[task_id]
            record.status, record.error = "failed", {"code": -32603, "message": "stopped"}

        nursery.start_soon(heartbeat_lapses)
        start = trio.current_time()
        await call(on_b, "tasks/update", taskId=task_id, inputResponses={key: answer("z")})
        assert 3 <= trio.current_time() - start < TaskOptions().answer_timeout
        task = await call(on_b, "tasks/get", taskId=task_id)
        assert (task["status"], task["error"]["message"]) == ("failed", "stopped")
        nursery.cancel_scope.cancel()
