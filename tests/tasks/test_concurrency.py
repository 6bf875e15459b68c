"""Structured-concurrency proofs for tasks, under the autojump clock.

Each task runs in the server's task nursery, in its own cancel scope: cancel at every
state, the TTL as a deadline, a client that goes away, shutdown with tasks running, and a
thousand tasks cancelled at random.
"""

from __future__ import annotations

import random
from typing import Any

import pytest
import trio
import trio.testing

import trimcp
from tests.tasks import helpers
from tests.tasks.helpers import make_app, serve
from trimcp.errors import INVALID_PARAMS, McpError
from trimcp.server.tasks import TaskOptions
from trimcp.testing import open_test_client
from trimcp.types import (
    CancelTaskRequestParams,
    ElicitResult,
    GetTaskRequestParams,
)


async def _get(client: Any, task_id: str) -> Any:
    return await client.session.send_request("tasks/get", GetTaskRequestParams(task_id=task_id))


async def _cancel(client: Any, task_id: str) -> Any:
    return await client.session.send_request(
        "tasks/cancel", CancelTaskRequestParams(task_id=task_id)
    )


async def test_cancel_while_working_cancels_the_scope(autojump_clock: trio.abc.Clock) -> None:
    app = make_app()
    before = helpers.cancelled.get("sleep", 0)
    async with serve(app) as client:
        handle = await client.call_tool_as_task("sleep", {"seconds": 1000})
        await trio.sleep(5)
        after = await handle.cancel()
        # The status is "cancelled" before the answer is sent.
        assert after.status == "cancelled"
        await trio.testing.wait_all_tasks_blocked()
        assert helpers.cancelled["sleep"] == before + 1
        assert app.tasks.live_count() == 0
        assert (await handle.refresh()).status == "cancelled"
        with pytest.raises(McpError, match="cancelled before it produced a result"):
            await handle.result()


async def test_cancel_while_input_required(autojump_clock: trio.abc.Clock) -> None:
    app = make_app()
    async with serve(app) as client:
        handle = await client.call_tool_as_task("ask_name")
        with trio.fail_after(10):
            async for task in handle:  # polls only: no tasks/result, nobody answers
                if task.status == "input_required":
                    break
        assert (await _cancel(client, handle.task_id)).status == "cancelled"
        await trio.testing.wait_all_tasks_blocked()
        assert app.tasks.live_count() == 0
        assert app.tasks.pending_inputs(handle.task_id) == ()


async def test_cancel_while_the_client_is_answering_stops_its_handler(
    autojump_clock: trio.abc.Clock,
) -> None:
    app = make_app()
    handler_cancelled = trio.Event()
    asked = trio.Event()

    async def slow_user(ctx: Any, params: Any) -> ElicitResult:
        asked.set()
        try:
            await trio.sleep_forever()
        finally:
            handler_cancelled.set()

    async with serve(app, elicitation_handler=slow_user) as client:
        handle = await client.call_tool_as_task("ask_name")
        async with trio.open_nursery() as nursery:
            result_error: list[McpError] = []

            async def wait_result() -> None:
                try:
                    await handle.result()
                except McpError as exc:
                    result_error.append(exc)

            nursery.start_soon(wait_result)
            await asked.wait()
            await _cancel(client, handle.task_id)
            with trio.fail_after(5):
                await handler_cancelled.wait()
        assert result_error
        assert "cancelled" in result_error[0].message
        assert app.tasks.live_count() == 0


@pytest.mark.parametrize("tool", ["sleep", "fail"])
async def test_cancel_after_the_end_is_refused(tool: str, autojump_clock: trio.abc.Clock) -> None:
    app = make_app()
    async with serve(app) as client:
        handle = await client.call_tool_as_task(tool, {"seconds": 1} if tool == "sleep" else {})
        final = await handle.wait()
        with pytest.raises(McpError) as refused:
            await handle.cancel()
        assert refused.value.code == INVALID_PARAMS
        assert f"already in terminal status '{final.status}'" in refused.value.message
        # ...and the recorded outcome is unchanged.
        assert (await _get(client, handle.task_id)).status == final.status


async def test_cancel_twice_is_refused_the_second_time(autojump_clock: trio.abc.Clock) -> None:
    app = make_app()
    async with serve(app) as client:
        handle = await client.call_tool_as_task("sleep", {"seconds": 100})
        await handle.cancel()
        with pytest.raises(McpError, match="already in terminal status 'cancelled'"):
            await _cancel(client, handle.task_id)


async def test_ttl_is_the_deadline_of_the_work(autojump_clock: trio.abc.Clock) -> None:
    app = make_app(TaskOptions(min_ttl=1))
    before = helpers.cancelled.get("sleep", 0)
    async with serve(app) as client:
        handle = await client.call_tool_as_task("sleep", {"seconds": 1000}, ttl=10)
        assert handle.status.ttl == 10_000
        await trio.sleep(9)
        assert (await handle.refresh()).status == "working"
        await trio.sleep(2)
        await trio.testing.wait_all_tasks_blocked()
        assert helpers.cancelled["sleep"] == before + 1
        assert app.tasks.live_count() == 0
        # Past its TTL the task may be deleted: the server says it expired.
        with pytest.raises(McpError, match="Task has expired") as expired:
            await _get(client, handle.task_id)
        assert expired.value.code == INVALID_PARAMS


async def test_finished_tasks_are_kept_until_their_ttl(autojump_clock: trio.abc.Clock) -> None:
    app = make_app()
    async with serve(app) as client:
        handle = await client.call_tool_as_task("sleep", {"seconds": 1}, ttl=60)
        await handle.wait()
        await trio.sleep(50)
        assert (await handle.result()).content[0].text == "slept 1"  # type: ignore[union-attr]
        await trio.sleep(10)
        with pytest.raises(McpError, match="expired"):
            await _get(client, handle.task_id)


def _one_user(ctx: trimcp.Context) -> str:
    """Both sessions are the same user's: without authorization a task belongs to the
    session that created it, so these tests say who owns it."""
    return "the one user"


async def test_a_client_that_disconnects_does_not_stop_its_task(
    autojump_clock: trio.abc.Clock,
) -> None:
    app = make_app(task_owner=_one_user)
    async with app.tasks.open():
        async with open_test_client(app) as first:
            handle = await first.call_tool_as_task("sleep", {"seconds": 100})
            task_id = handle.task_id
        # The first client is gone; its task goes on in the server's nursery.
        assert app.tasks.live_count() == 1
        await trio.sleep(50)
        async with open_test_client(app) as second:
            again = await second.get_task(task_id)
            assert again.status.status == "working"
            result = await again.result()
            assert result.content[0].text == "slept 100"  # type: ignore[union-attr]


async def test_input_asked_after_the_creator_left_is_answered_by_the_next_client(
    autojump_clock: trio.abc.Clock,
) -> None:
    app = make_app(task_owner=_one_user)
    async with app.tasks.open():
        async with open_test_client(app, elicitation_handler=_never_answers) as first:
            task_id = (await first.call_tool_as_task("ask_name")).task_id
        async with open_test_client(app, elicitation_handler=helpers.answer_elicitation) as second:
            result = await (await second.get_task(task_id)).result()
            assert result.content[0].text == "hello Ada"  # type: ignore[union-attr]


async def test_shutdown_gives_a_grace_period_then_cancels_and_records(
    autojump_clock: trio.abc.Clock,
) -> None:
    app = make_app(TaskOptions(shutdown_grace=10))
    with trio.fail_after(11):  # bounded by the grace period
        async with (
            app.tasks.open(),
            open_test_client(app, elicitation_handler=_never_answers) as client,
        ):
            quick = (await client.call_tool_as_task("sleep", {"seconds": 5})).task_id
            slow = (await client.call_tool_as_task("sleep", {"seconds": 500})).task_id
            waiting = (await client.call_tool_as_task("ask_name")).task_id
    assert app.tasks.live_count() == 0
    store = app.tasks.store
    records = {task_id: await store.get(task_id) for task_id in (quick, slow, waiting)}
    quick_record = records[quick]
    assert quick_record is not None
    assert quick_record.status == "completed"
    for task_id in (slow, waiting):
        record = records[task_id]
        assert record is not None
        assert record.status == "cancelled"
        assert record.status_message == "The server shut down before the task finished"


async def test_no_new_tasks_once_shutdown_began(autojump_clock: trio.abc.Clock) -> None:
    app = make_app(TaskOptions(shutdown_grace=10))
    async with serve(app) as client:
        pass
    async with open_test_client(app) as client:  # serves (and owns the runner) again
        handle = await client.call_tool_as_task("sleep", {"seconds": 1})
        assert (await handle.result()).content[0].text == "slept 1"  # type: ignore[union-attr]
    with pytest.raises(McpError, match="not running tasks"):
        await app.tasks.create(
            _never, owner=None, method="tools/call", protocol_version=None, ttl_ms=None
        )


async def _never_answers(ctx: Any, params: Any) -> ElicitResult:
    raise AssertionError("must not be asked")


async def _never(handle: Any) -> None:
    raise AssertionError("must not run")


async def test_serve_session_owns_the_runner_when_nothing_else_does(
    autojump_clock: trio.abc.Clock,
) -> None:
    # stdio-style: the session's end is the server's end; tasks get the grace period.
    app = make_app(TaskOptions(shutdown_grace=1))
    async with open_test_client(app) as client:
        task_id = (await client.call_tool_as_task("sleep", {"seconds": 100})).task_id
    record = await app.tasks.store.get(task_id)
    assert record is not None
    assert record.status == "cancelled"
    assert app.tasks.live_count() == 0


async def test_a_thousand_tasks_cancelled_at_random_leave_nothing_running(
    autojump_clock: trio.abc.Clock,
) -> None:
    app = make_app(TaskOptions(max_running=1000))
    rng = random.Random(1686)
    before = helpers.cancelled.get("sleep", 0)
    async with serve(app, max_buffered=2048) as client:
        handles = []
        for _ in range(1000):
            seconds = rng.randint(0, 100)
            handles.append(await client.call_tool_as_task("sleep", {"seconds": seconds}))
        assert app.tasks.live_count() > 0
        refused = 0
        codes: list[int] = []
        picked = rng.sample(handles, 600)

        async def cancel_later(handle: Any, delay: float) -> None:
            nonlocal refused
            await trio.sleep(delay)
            try:
                await handle.cancel()
            except McpError as exc:
                codes.append(exc.code)
                refused += 1

        async with trio.open_nursery() as nursery:
            for handle in picked:
                nursery.start_soon(cancel_later, handle, rng.uniform(0, 120))
        await trio.sleep(101)
        await trio.testing.wait_all_tasks_blocked()
        assert app.tasks.live_count() == 0
        assert set(codes) <= {INVALID_PARAMS}  # only "already ended" refusals
        statuses = [(await _get(client, handle.task_id)).status for handle in handles]
        assert set(statuses) <= {"completed", "cancelled"}
        assert statuses.count("cancelled") == 600 - refused
        assert helpers.cancelled["sleep"] - before == 600 - refused
