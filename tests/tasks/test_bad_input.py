"""Bad input for tasks: unknown and foreign task ids, tasks/result before completion,
cancel after completion, TTL 0 and huge TTLs, malformed params, poll storms."""

from __future__ import annotations

from typing import Any

import pytest
import trio
import trio.testing

import trimcp
from tests.tasks.helpers import make_app, serve
from trimcp.errors import INTERNAL_ERROR, INVALID_PARAMS, INVALID_REQUEST, McpError, RequestTimeout
from trimcp.protocol.jsonrpc import dump_json
from trimcp.server.tasks import TaskOptions
from trimcp.tasks.store import SMALL_PAYLOAD_BYTES, MemoryTaskStore, TaskRecord
from trimcp.testing import open_test_client
from trimcp.types import (
    CallToolRequestParams,
    CancelTaskRequestParams,
    GetTaskPayloadRequestParams,
    GetTaskRequestParams,
    Implementation,
    TaskMetadata,
)

METHODS = {
    "tasks/get": GetTaskRequestParams,
    "tasks/result": GetTaskPayloadRequestParams,
    "tasks/cancel": CancelTaskRequestParams,
}


@pytest.mark.parametrize("method", sorted(METHODS))
async def test_unknown_task_id(method: str) -> None:
    app = make_app()
    async with serve(app) as client:
        for task_id in ("nope", "", "x" * 10_000, "\u00e9\U0001f600"):
            with pytest.raises(McpError) as error:
                await client.session.send_request(method, METHODS[method](task_id=task_id))
            assert error.value.code == INVALID_PARAMS
            assert error.value.message == "Failed to retrieve task: Task not found"
        # A lone surrogate never reaches the tasks code: the core refuses the message.
        with pytest.raises(McpError) as error:
            await client.session.send_request(method, METHODS[method](task_id="\udc80"))
        assert error.value.code == INVALID_REQUEST


class _CountingStore(MemoryTaskStore):
    """The in-memory store, noting every id it is asked about."""

    def __init__(self) -> None:
        super().__init__()
        self.asked: list[str] = []

    async def get(self, task_id: str) -> TaskRecord | None:
        self.asked.append(task_id)
        return await super().get(task_id)

    async def expired(self, task_id: str) -> bool:
        self.asked.append(task_id)
        return await super().expired(task_id)


async def test_a_task_id_the_server_could_not_have_made_is_never_looked_up() -> None:
    # Task ids are 32 lower-case hex characters (TaskManager mints them): any other is
    # unknown before the store is asked (a Redis store: no GET of a 10 KB key, no
    # second one for its "expired" marker). Before: every id was looked up, twice.
    store = _CountingStore()
    app = make_app(task_store=store)
    async with serve(app) as client:
        for task_id in ("nope", "x" * 10_000, "A" * 32, "0" * 31, "0" * 33):
            with pytest.raises(McpError, match="Task not found"):
                await client.session.send_request(
                    "tasks/get", GetTaskRequestParams(task_id=task_id)
                )
        assert store.asked == []
        with pytest.raises(McpError, match="Task not found"):  # well formed: looked up
            await client.session.send_request("tasks/get", GetTaskRequestParams(task_id="0" * 32))
        assert store.asked == ["0" * 32, "0" * 32]


@pytest.mark.parametrize("method", sorted(METHODS))
async def test_malformed_task_id(method: str) -> None:
    app = make_app()
    async with serve(app) as client:
        for params in ({}, {"taskId": 7}, {"taskId": None}, {"taskId": ["a"]}):
            with pytest.raises(McpError) as error:
                await client.session.send_request(method, params)
            assert error.value.code == INVALID_PARAMS
        await client.ping()  # the session goes on


@pytest.mark.parametrize("method", sorted(METHODS))
async def test_another_principals_task_id_looks_unknown(
    method: str, autojump_clock: trio.abc.Clock
) -> None:
    app = make_app(task_owner=lambda ctx: ctx.client_info.name)
    async with serve(app, client_info=Implementation(name="alice", version="1")) as alice:
        handle = await alice.call_tool_as_task("sleep", {"seconds": 10})
        async with open_test_client(
            app, client_info=Implementation(name="mallory", version="1")
        ) as mallory:
            with pytest.raises(McpError) as error:
                await mallory.session.send_request(method, METHODS[method](task_id=handle.task_id))
            assert error.value.code == INVALID_PARAMS
            assert error.value.message == "Failed to retrieve task: Task not found"
            assert (await mallory.list_tasks()).tasks == []
        # Untouched: Alice's task still runs and completes.
        assert (await handle.result()).content[0].text == "slept 10"  # type: ignore[union-attr]


async def test_tasks_result_before_completion_blocks_within_the_request_timeout(
    autojump_clock: trio.abc.Clock,
) -> None:
    app = make_app()
    async with serve(app) as client:
        handle = await client.call_tool_as_task("sleep", {"seconds": 100})
        start = trio.current_time()
        with pytest.raises(RequestTimeout):
            await client.session.send_request(
                "tasks/result", GetTaskPayloadRequestParams(task_id=handle.task_id), timeout=5
            )
        assert trio.current_time() - start == pytest.approx(5)
        # The server dropped the waiting handler; the task itself goes on.
        await trio.testing.wait_all_tasks_blocked()
        assert app.tasks.live_count() == 1
        raw = await client.session.send_request(
            "tasks/result", GetTaskPayloadRequestParams(task_id=handle.task_id), timeout=None
        )
        assert raw["content"][0]["text"] == "slept 100"
        assert trio.current_time() - start == pytest.approx(100)


async def test_ttl_zero_and_huge_ttls_are_clamped() -> None:
    app = make_app(TaskOptions(min_ttl=2, max_ttl=3600))
    async with serve(app) as client:
        for requested, granted in ((0, 2000), (-5, 2000), (1, 2000), (10**15, 3_600_000)):
            params = CallToolRequestParams(
                name="sleep", arguments={"seconds": 0}, task=TaskMetadata(ttl=requested)
            )
            created = await client.session.send_request("tools/call", params)
            assert created.task.ttl == granted
        # No ttl asked: the default.
        handle = await client.call_tool_as_task("sleep", {"seconds": 0})
        assert handle.status.ttl == round(TaskOptions().default_ttl * 1000)


async def test_bad_ttl_types_are_invalid_params() -> None:
    app = make_app()
    async with serve(app) as client:
        for ttl in ("10", True, 1.5, [1]):
            with pytest.raises(McpError) as error:
                await client.session.send_request(
                    "tools/call",
                    {"name": "sleep", "arguments": {"seconds": 0}, "task": {"ttl": ttl}},
                )
            assert error.value.code == INVALID_PARAMS


def test_task_options_refuse_nonsense() -> None:
    cases: list[dict[str, Any]] = [
        {"min_ttl": 0},
        {"min_ttl": 10, "default_ttl": 5},
        {"default_ttl": 10, "max_ttl": 5},
        {"max_running": 0},
        {"poll_interval": 0},
        {"shutdown_grace": -1},
    ]
    for kwargs in cases:
        with pytest.raises(ValueError, match=r"TaskOptions|must be"):
            TaskOptions(**kwargs)


async def test_too_many_running_tasks_are_refused(autojump_clock: trio.abc.Clock) -> None:
    app = make_app(TaskOptions(max_running=3))
    async with serve(app) as client:
        handles = [await client.call_tool_as_task("sleep", {"seconds": 10}) for _ in range(3)]
        with pytest.raises(McpError, match="Too many running tasks"):
            await client.call_tool_as_task("sleep", {"seconds": 10})
        await handles[0].cancel()
        await trio.testing.wait_all_tasks_blocked()
        await client.call_tool_as_task("sleep", {"seconds": 10})  # room again


async def test_a_full_store_refuses_new_tasks() -> None:
    from trimcp.server.tasks import MemoryTaskStore

    app = make_app(task_store=MemoryTaskStore(max_tasks=2))
    async with serve(app) as client:
        await client.call_tool_as_task("sleep", {"seconds": 0})
        await client.call_tool_as_task("sleep", {"seconds": 0})
        with pytest.raises(McpError, match="at most 2 tasks"):
            await client.call_tool_as_task("sleep", {"seconds": 0})


async def test_one_caller_filling_its_share_leaves_room_for_others() -> None:
    # Two anonymous sessions are two owners: the first one's refusal names the limit,
    # the second still creates tasks.
    from trimcp.server.tasks import TaskBudget

    app = make_app(TaskOptions(budget=TaskBudget(max_tasks_per_owner=2)))
    async with serve(app) as client, open_test_client(app) as other:
        await client.call_tool_as_task("sleep", {"seconds": 0})
        await client.call_tool_as_task("sleep", {"seconds": 0})
        with pytest.raises(McpError, match=r"TaskBudget\.max_tasks_per_owner") as refused:
            await client.call_tool_as_task("sleep", {"seconds": 0})
        assert refused.value.code == INTERNAL_ERROR
        assert refused.value.data == {"limit": "TaskBudget.max_tasks_per_owner", "max": 2}
        await other.call_tool_as_task("sleep", {"seconds": 0})


async def test_task_results_are_kept_within_byte_budgets() -> None:
    # Issue 21: results were kept with no byte bound (300 tasks of 1 MB: +290 MiB for
    # up to 24 h). Measured by the store's own accounting: what fits is kept; a result
    # that does not fails its task with an error naming the limit, never silently.
    from trimcp.server.tasks import MemoryTaskStore, TaskBudget

    budget = TaskBudget(max_result_bytes=300_000, max_owner_bytes=1_000_000)
    app = make_app(TaskOptions(budget=budget))

    @app.tool(task_support="optional")
    async def blob(size: int) -> str:
        """Return ``size`` bytes of text."""
        return "x" * size

    store = app.tasks.store
    assert isinstance(store, MemoryTaskStore)
    async with serve(app) as client:
        handles, kept = [], []
        for _ in range(5):  # one after the other: 4 x ~200 kB fit 1 MB, the 5th does not
            handles.append(await client.call_tool_as_task("blob", {"size": 200_000}))
            kept.append(await handles[-1].wait())
        assert [task.status for task in kept] == ["completed"] * 4 + ["failed"]
        assert "TaskBudget.max_owner_bytes" in (kept[4].status_message or "")
        with pytest.raises(McpError, match=r"TaskBudget\.max_owner_bytes") as refused:
            await handles[4].result()
        assert refused.value.data == {"limit": "TaskBudget.max_owner_bytes", "max": 1_000_000}
        big = await client.call_tool_as_task("blob", {"size": 400_000})
        assert (await big.wait()).status == "failed"
        with pytest.raises(McpError, match=r"TaskBudget\.max_result_bytes"):
            await big.result()
        held = sum(len(dump_json(r.result)) for r in store._records.values() if r.result)
        assert held <= 1_000_000
        assert store.total_bytes >= held
        assert store.total_bytes <= 1_000_000 + 2 * SMALL_PAYLOAD_BYTES


async def test_poll_storm_is_answered_and_does_not_slow_the_task(
    autojump_clock: trio.abc.Clock,
) -> None:
    app = make_app()
    async with serve(app, max_buffered=256) as client:
        handle = await client.call_tool_as_task("sleep", {"seconds": 10})
        start = trio.current_time()
        answers: list[str] = []

        async def poll(count: int) -> None:
            for _ in range(count):
                got = await client.session.send_request(
                    "tasks/get", GetTaskRequestParams(task_id=handle.task_id)
                )
                answers.append(got.status)

        async with trio.open_nursery() as nursery:
            for _ in range(100):
                nursery.start_soon(poll, 50)
            # ...and many blocked tasks/result waiters at once.
            results: list[Any] = []

            async def wait_result() -> None:
                results.append(
                    await client.session.send_request(
                        "tasks/result",
                        GetTaskPayloadRequestParams(task_id=handle.task_id),
                        timeout=None,
                    )
                )

            for _ in range(200):
                nursery.start_soon(wait_result)
        assert len(answers) == 5000
        assert set(answers) <= {"working", "completed"}
        assert len(results) == 200
        assert trio.current_time() - start == pytest.approx(10)
        assert len(app.tasks.store) == 1  # type: ignore[arg-type]
        assert app.tasks.live_count() == 0


async def test_task_augmented_call_to_a_server_without_task_support_is_not_sent() -> None:
    # A server with no task tools declares no tasks capability: a tools/call with `task`
    # is refused before it is sent (it would get a plain CallToolResult back).
    app = trimcp.Server("plain")
    calls: list[str] = []

    @app.tool()
    async def hello() -> str:
        calls.append("hello")
        return "hi"

    async with open_test_client(app) as client:
        params = CallToolRequestParams(name="hello", task=TaskMetadata(ttl=1000))
        with pytest.raises(trimcp.LocalProtocolError) as refused:
            await client.session.send_request("tools/call", params)
        assert "Cannot send tools/call as a task" in str(refused.value)
        assert "tasks.requests.tools.call" in str(refused.value)
        assert calls == []
        assert (await client.call_tool("hello")).content[0].text == "hi"  # type: ignore[union-attr]
