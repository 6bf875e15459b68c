"""A 2025-11-25 ``tasks/result`` taken by a replica that does not run the task forwards the
task's questions all the same: it reads them from the shared record (``input_requests``),
asks its client, and sends the answer to the running replica (the same way a 2026
``tasks/update`` does). Before, it only polled until the task ended, and a task waiting
for input never did.

Two TaskManagers stand for two replicas: one MemoryTaskStore shared, and the "bus"
between them a direct call (the real bus is tested with Redis in tests/scale)."""

from __future__ import annotations

from typing import Any

import trio

from trimcp import serde
from trimcp.errors import McpError
from trimcp.tasks.manager import TaskManager, TaskOptions
from trimcp.tasks.store import MemoryTaskStore
from trimcp.types import ElicitResult

OPTIONS = TaskOptions(poll_interval=0.5)


def two_replicas() -> tuple[TaskManager, TaskManager]:
    store = MemoryTaskStore()
    runner, other = TaskManager(store, OPTIONS), TaskManager(store, OPTIONS)

    async def deliver(task_id: str, responses: dict[str, Any]) -> bool:
        return await runner.answer_here(task_id, responses)

    other.answered_elsewhere = deliver
    return runner, other


async def asking_task(handle: Any) -> dict[str, Any]:
    answer = await handle.ask("elicitation/create", {"message": "Name?"}, 60.0)
    return {"content": [{"type": "text", "text": f"hello {answer.content['name']}"}]}


async def test_tasks_result_on_another_replica_forwards_the_question(
    autojump_clock: trio.abc.Clock,
) -> None:
    runner, other = two_replicas()
    asked: list[tuple[str, dict[str, Any]]] = []

    async def forward(method: str, params: dict[str, Any]) -> Any:
        asked.append((method, params))
        return ElicitResult(action="accept", content={"name": "ada"})

    async with runner.open(), other.open():
        record = await runner.create(
            asking_task, owner="u", method="tools/call", protocol_version="2025-11-25", ttl_ms=None
        )
        with trio.fail_after(30):
            done = await other.wait_terminal(record.task_id, "u", forward)
    assert [method for method, _ in asked] == ["elicitation/create"]
    assert asked[0][1]["message"] == "Name?"
    assert done.status == "completed"
    assert serde.unstructure(done.result)["content"][0]["text"] == "hello ada"


async def test_a_question_is_forwarded_once(autojump_clock: trio.abc.Clock) -> None:
    # The answer takes a while to reach the runner; the waiter does not ask again meanwhile.
    runner, other = two_replicas()
    asked: list[str] = []
    slow = trio.Event()

    async def forward(method: str, params: dict[str, Any]) -> Any:
        asked.append(method)
        return ElicitResult(action="accept", content={"name": "bo"})

    deliver = other.answered_elsewhere
    assert deliver is not None

    async def late(task_id: str, responses: dict[str, Any]) -> bool:
        await trio.sleep(3 * OPTIONS.poll_interval)
        slow.set()
        return await deliver(task_id, responses)

    other.answered_elsewhere = late
    async with runner.open(), other.open():
        record = await runner.create(
            asking_task, owner="u", method="tools/call", protocol_version="2025-11-25", ttl_ms=None
        )
        with trio.fail_after(30):
            done = await other.wait_terminal(record.task_id, "u", forward)
    assert slow.is_set()
    assert asked == ["elicitation/create"]
    assert done.status == "completed"


async def test_a_refused_question_is_not_asked_again(autojump_clock: trio.abc.Clock) -> None:
    # The client answers the forwarded question with an error: the task (which cannot get
    # that error from here) keeps waiting until its own timeout; the waiter does not loop.
    runner, other = two_replicas()
    asked: list[str] = []

    async def forward(method: str, params: dict[str, Any]) -> Any:
        asked.append(method)
        raise McpError(-1, "the user closed the dialog")

    async def short_ask(handle: Any) -> dict[str, Any]:
        await handle.ask("elicitation/create", {"message": "Name?"}, 5.0)
        return {"content": []}

    async with runner.open(), other.open():
        record = await runner.create(
            short_ask, owner="u", method="tools/call", protocol_version="2025-11-25", ttl_ms=None
        )
        with trio.fail_after(30):
            done = await other.wait_terminal(record.task_id, "u", forward)
    assert asked == ["elicitation/create"]
    assert done.status == "failed"
