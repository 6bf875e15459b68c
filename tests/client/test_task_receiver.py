"""The client running tasks for the server (2025-11-25, trimcp.client.task_receiver): a raw
server session sends task-augmented ``sampling/createMessage`` / ``elicitation/create`` and
``tasks/*`` to trimcp's client over memory streams, under the autojump clock.

Covered: the handle answered at once and the handler run in the background; ``tasks/result``
blocking until the end, then the result with the related-task ``_meta``; ``tasks/get``,
``tasks/list``, status notifications; cancel (the handler's scope is cancelled, its
``finally`` runs; cancelling again is ``-32602``); unknown ids; TTL expiry (of a running task
and of a finished one); the bound on running tasks; a failing handler; the client closing
and the server going away with tasks running (bounded, nothing left running); a ``task`` the
client did not declare is ignored, as the spec says.
"""

from __future__ import annotations

import functools
import random
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any, Unpack

import attrs
import pytest
import trio
import trio.testing

from tests.client.helpers import RecordingServer, client_and_server
from tests.support import RawPeer
from trimcp import serde
from trimcp.client import Client, ClientKwargs
from trimcp.client.task_receiver import TaskReceiver
from trimcp.errors import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    REQUEST_TIMEOUT,
    LocalProtocolError,
    McpError,
)
from trimcp.protocol.lifecycle import Role
from trimcp.server.tasks import TaskOptions
from trimcp.session import RequestContext, Session, open_session, serve_session
from trimcp.transports.memory import memory_transport_pair
from trimcp.types import (
    RELATED_TASK_META_KEY,
    CancelTaskResult,
    CreateMessageRequestParams,
    CreateMessageResult,
    CreateTaskResult,
    ElicitationSchema,
    ElicitRequestFormParams,
    ElicitRequestParams,
    ElicitResult,
    GetTaskResult,
    ListTasksResult,
    SamplingMessage,
    StringSchema,
    TaskMetadata,
    TaskStatusNotificationParams,
    TextContent,
)

SAMPLING = CreateMessageRequestParams(
    messages=[SamplingMessage(role="user", content=TextContent(text="hi"))],
    max_tokens=10,
    task=TaskMetadata(ttl=60_000),
)
ELICITATION = ElicitRequestFormParams(
    message="Your name?",
    requested_schema=ElicitationSchema(properties={"name": StringSchema()}, required=["name"]),
    task=TaskMetadata(ttl=60_000),
)
ANSWER = CreateMessageResult(role="assistant", content=TextContent(text="42"), model="toy")


class Model:
    """A sampling handler that answers when released, and records how it ended."""

    def __init__(self) -> None:
        self.release = trio.Event()
        self.started = 0
        self.ended: list[str] = []

    async def __call__(
        self, ctx: RequestContext, params: CreateMessageRequestParams
    ) -> CreateMessageResult:
        self.started += 1
        try:
            await self.release.wait()
        except trio.Cancelled:
            self.ended.append("cancelled")
            raise
        self.ended.append("answered")
        return ANSWER


class StatusServer(RecordingServer):
    """Records the client's ``notifications/tasks/status``."""

    def __init__(self) -> None:
        super().__init__()
        self.statuses: list[TaskStatusNotificationParams] = []

        @self.notification_handler("notifications/tasks/status")
        async def status(session: Session, params: TaskStatusNotificationParams) -> None:
            self.statuses.append(params)


@asynccontextmanager
async def pair(
    server: RecordingServer | None = None, **kwargs: Unpack[ClientKwargs]
) -> AsyncIterator[tuple[Client, Session]]:
    async with client_and_server(server or RecordingServer(), **kwargs) as (client, session):
        yield client, session


async def create(session: Session, params: Any = SAMPLING) -> str:
    method = "elicitation/create" if isinstance(params, ElicitRequestFormParams) else None
    created = await session.send_request(method or "sampling/createMessage", params)
    assert isinstance(created, CreateTaskResult)
    return created.task.task_id


async def get(session: Session, task_id: str) -> GetTaskResult:
    got = await session.send_request("tasks/get", {"taskId": task_id})
    assert isinstance(got, GetTaskResult)
    return got


async def test_the_handle_comes_at_once_and_tasks_result_blocks_until_the_end(
    autojump_clock: trio.testing.MockClock,
) -> None:
    model = Model()
    server = StatusServer()
    async with pair(server, sampling_handler=model) as (client, session):
        created = await session.send_request("sampling/createMessage", SAMPLING)
        assert isinstance(created, CreateTaskResult)
        task = created.task
        assert (task.status, task.ttl) == ("working", 60_000)
        assert task.poll_interval == 1000
        await trio.testing.wait_all_tasks_blocked()
        assert model.started == 1
        assert (await get(session, task.task_id)).status == "working"

        results: list[Any] = []

        async def fetch() -> None:
            results.append(await session.send_request("tasks/result", {"taskId": task.task_id}))

        async with trio.open_nursery() as nursery:
            nursery.start_soon(fetch)
            await trio.sleep(30)  # the mock clock: tasks/result still waits
            assert results == []
            model.release.set()
        [result] = results
        assert result == {
            "role": "assistant",
            "content": {"type": "text", "text": "42"},
            "model": "toy",
            "_meta": {RELATED_TASK_META_KEY: {"taskId": task.task_id}},
        }
        assert (await get(session, task.task_id)).status == "completed"
        listed = await session.send_request("tasks/list", {})
        assert isinstance(listed, ListTasksResult)
        assert [t.task_id for t in listed.tasks] == [task.task_id]
        # A finished task answers tasks/result again, at once.
        again = await session.send_request("tasks/result", {"taskId": task.task_id})
        assert again == result
        await trio.testing.wait_all_tasks_blocked()
        assert [s.status for s in server.statuses] == ["completed"]
        assert client.task_receiver.live_count() == 0


async def test_elicitation_runs_as_a_task_too(autojump_clock: trio.testing.MockClock) -> None:
    async def user(ctx: RequestContext, params: ElicitRequestParams) -> ElicitResult:
        return ElicitResult(action="accept", content={"name": "Ada"})

    async with pair(elicitation_handler=user) as (_client, session):
        task_id = await create(session, ELICITATION)
        result = await session.send_request("tasks/result", {"taskId": task_id})
        assert result["action"] == "accept"
        assert result["content"] == {"name": "Ada"}
        assert result["_meta"] == {RELATED_TASK_META_KEY: {"taskId": task_id}}


async def test_cancel_cancels_the_handlers_scope(autojump_clock: trio.testing.MockClock) -> None:
    model = Model()
    server = StatusServer()
    async with pair(server, sampling_handler=model) as (client, session):
        task_id = await create(session)
        await trio.testing.wait_all_tasks_blocked()
        cancelled = await session.send_request("tasks/cancel", {"taskId": task_id})
        assert isinstance(cancelled, CancelTaskResult)
        assert cancelled.status == "cancelled"
        await trio.testing.wait_all_tasks_blocked()
        assert model.ended == ["cancelled"]
        assert client.task_receiver.live_count() == 0
        assert (await get(session, task_id)).status == "cancelled"
        with pytest.raises(McpError, match="already in terminal status 'cancelled'") as again:
            await session.send_request("tasks/cancel", {"taskId": task_id})
        assert again.value.code == INVALID_PARAMS
        with pytest.raises(McpError, match="cancelled before it produced a result"):
            await session.send_request("tasks/result", {"taskId": task_id})
        assert [s.status for s in server.statuses] == ["cancelled"]


async def test_cancel_while_tasks_result_waits_ends_the_wait(
    autojump_clock: trio.testing.MockClock,
) -> None:
    model = Model()
    async with pair(sampling_handler=model) as (_client, session):
        task_id = await create(session)
        errors: list[McpError] = []

        async def fetch() -> None:
            with pytest.raises(McpError) as caught:
                await session.send_request("tasks/result", {"taskId": task_id})
            errors.append(caught.value)

        async with trio.open_nursery() as nursery:
            nursery.start_soon(fetch)
            await trio.testing.wait_all_tasks_blocked()
            await session.send_request("tasks/cancel", {"taskId": task_id})
        [error] = errors
        assert error.code == INTERNAL_ERROR
        assert model.ended == ["cancelled"]


@pytest.mark.parametrize("method", ["tasks/get", "tasks/result", "tasks/cancel"])
async def test_an_unknown_task_id_is_invalid_params(
    method: str, autojump_clock: trio.testing.MockClock
) -> None:
    async with pair(sampling_handler=Model()) as (_client, session):
        with pytest.raises(McpError, match="Failed to retrieve task: Task not found") as caught:
            await session.send_request(method, {"taskId": "no-such-task"})
        assert caught.value.code == INVALID_PARAMS


async def test_a_task_running_past_its_ttl_is_cancelled_and_then_forgotten(
    autojump_clock: trio.testing.MockClock,
) -> None:
    model = Model()
    async with pair(sampling_handler=model) as (client, session):
        task_id = await create(session, attrs.evolve(SAMPLING, task=TaskMetadata(ttl=5_000)))
        start = trio.current_time()
        with pytest.raises(McpError, match="ran past its TTL of 5000 ms") as caught:
            await session.send_request("tasks/result", {"taskId": task_id})
        assert caught.value.code == REQUEST_TIMEOUT
        assert trio.current_time() - start == pytest.approx(5.0)
        assert model.ended == ["cancelled"]
        assert client.task_receiver.live_count() == 0
        # Its record expired with its TTL: a later poll is told so.
        with pytest.raises(McpError, match="Task has expired") as expired:
            await get(session, task_id)
        assert expired.value.code == INVALID_PARAMS


async def test_a_finished_task_is_kept_until_its_ttl(
    autojump_clock: trio.testing.MockClock,
) -> None:
    model = Model()
    model.release.set()
    async with pair(sampling_handler=model) as (_client, session):
        task_id = await create(session, attrs.evolve(SAMPLING, task=TaskMetadata(ttl=10_000)))
        await trio.testing.wait_all_tasks_blocked()
        await trio.sleep(9)
        assert (await get(session, task_id)).status == "completed"
        await trio.sleep(2)
        with pytest.raises(McpError, match="Task has expired"):
            await get(session, task_id)


@pytest.mark.parametrize(
    ("asked", "granted"), [(0, 1_000), (10**12, 86_400_000), (None, 3_600_000)]
)
async def test_ttls_are_clamped(
    asked: int | None, granted: int, autojump_clock: trio.testing.MockClock
) -> None:
    async with pair(sampling_handler=Model()) as (_client, session):
        params = attrs.evolve(SAMPLING, task=TaskMetadata(ttl=asked))
        created = await session.send_request("sampling/createMessage", params)
        assert created.task.ttl == granted


async def test_tasks_over_the_bound_are_refused(autojump_clock: trio.testing.MockClock) -> None:
    model = Model()
    options = TaskOptions(max_running=2, shutdown_grace=0)
    async with pair(sampling_handler=model, task_options=options) as (client, session):
        first = await create(session)
        await create(session)
        with pytest.raises(McpError, match="already runs 2 tasks for the server") as caught:
            await create(session)
        assert caught.value.code == INTERNAL_ERROR
        assert client.task_receiver.live_count() == 2
        # Room again once one ends.
        await session.send_request("tasks/cancel", {"taskId": first})
        await create(session)
        assert model.started == 3


async def test_a_failing_handler_fails_the_task_with_its_error(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async def refuse(ctx: RequestContext, params: CreateMessageRequestParams) -> Any:
        raise McpError(-1, "the user said no")

    async with pair(sampling_handler=refuse) as (_client, session):
        task_id = await create(session)
        with pytest.raises(McpError, match="the user said no") as caught:
            await session.send_request("tasks/result", {"taskId": task_id})
        assert caught.value.code == -1
        got = await get(session, task_id)
        assert (got.status, got.status_message) == ("failed", "the user said no")


async def test_closing_the_client_cancels_running_tasks(
    autojump_clock: trio.testing.MockClock,
) -> None:
    model = Model()
    with trio.fail_after(10):  # bounded: no grace by default
        async with pair(sampling_handler=model) as (client, session):
            for _ in range(3):
                await create(session)
            await trio.testing.wait_all_tasks_blocked()
            assert client.task_receiver.live_count() == 3
        assert model.ended == ["cancelled"] * 3
        assert client.task_receiver.live_count() == 0
        assert not client.task_receiver.running


async def test_closing_gives_running_tasks_their_grace(
    autojump_clock: trio.testing.MockClock,
) -> None:
    model = Model()
    options = TaskOptions(shutdown_grace=3)
    async with pair(sampling_handler=model, task_options=options) as (_client, session):
        await create(session)
        await trio.testing.wait_all_tasks_blocked()
        start = trio.current_time()
    assert model.ended == ["cancelled"]
    assert trio.current_time() - start == pytest.approx(3.0)


async def test_the_server_going_away_cancels_running_tasks(
    autojump_clock: trio.testing.MockClock,
) -> None:
    model = Model()
    async with pair(sampling_handler=model) as (client, session):
        await create(session)
        await trio.testing.wait_all_tasks_blocked()
        await session.aclose()
        with trio.fail_after(5):
            await client.session.wait_closed()
        await trio.testing.wait_all_tasks_blocked()
        assert model.ended == ["cancelled"]
        assert client.task_receiver.live_count() == 0


async def test_a_server_session_does_not_send_a_task_the_client_did_not_declare(
    autojump_clock: trio.testing.MockClock,
) -> None:
    # Attached by hand, without the task runner: sampling is declared, tasks are not.
    model = Model()
    model.release.set()
    client = Client(sampling_handler=model)
    client_end, server_end = memory_transport_pair()
    async with trio.open_nursery() as nursery:
        serve = functools.partial(serve_session, server_end, RecordingServer())
        session: Session = await nursery.start(serve)
        async with open_session(client_end, role=Role.CLIENT, handler=client) as own:
            await client.attach(own)
            assert client.negotiated.client_capabilities.tasks is None
            # The server's core refuses before sending (the answer would be a plain result).
            with pytest.raises(
                LocalProtocolError, match=r"tasks\.requests\.sampling\.createMessage"
            ):
                await session.send_request("sampling/createMessage", SAMPLING)
            assert model.started == 0
        nursery.cancel_scope.cancel()


async def test_a_task_the_client_did_not_declare_runs_as_a_plain_request(
    autojump_clock: trio.testing.MockClock,
) -> None:
    # A raw server that sends `task` anyway: the client answers the plain result at once,
    # as the spec says a receiver that did not declare the capability must.
    model = Model()
    model.release.set()
    client = Client(sampling_handler=model, mode="2025-11-25")
    client_end, server_end = memory_transport_pair()
    peer = RawPeer(server_end)

    async def handshake() -> None:
        init = await peer.receive()
        result = {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "serverInfo": {"name": "raw", "version": "0"},
        }
        await peer.send({"jsonrpc": "2.0", "id": init["id"], "result": result})
        assert (await peer.receive())["method"] == "notifications/initialized"

    async with trio.open_nursery() as nursery:
        nursery.start_soon(handshake)
        async with open_session(client_end, role=Role.CLIENT, handler=client) as own:
            await client.attach(own)
            assert client.negotiated.client_capabilities.tasks is None
            reply = await peer.request(7, "sampling/createMessage", serde.unstructure(SAMPLING))
            assert reply["id"] == 7
            assert "task" not in reply["result"]
            assert reply["result"]["model"] == ANSWER.model
            assert model.ended == ["answered"]
            assert client.task_receiver.live_count() == 0


async def test_finished_tasks_kept_are_bounded(autojump_clock: trio.testing.MockClock) -> None:
    model = Model()
    model.release.set()
    client = Client(sampling_handler=model)
    client.task_receiver = TaskReceiver(max_kept=2)
    client_end, server_end = memory_transport_pair()
    async with trio.open_nursery() as nursery:
        serve = functools.partial(serve_session, server_end, RecordingServer())
        session: Session = await nursery.start(serve)
        async with (
            open_session(client_end, role=Role.CLIENT, handler=client) as own,
            client.open_task_runner(own),
        ):
            await client.attach(own)
            kept = [await create(session), await create(session)]
            await trio.testing.wait_all_tasks_blocked()
            with pytest.raises(McpError, match="this client keeps no more tasks") as caught:
                await create(session)
            assert caught.value.code == INTERNAL_ERROR
            for task_id in kept:  # the finished ones are still there, with their result
                assert (await get(session, task_id)).status == "completed"
            await trio.sleep(3601)  # their TTL (the default hour) passed: room again
            await create(session)
        nursery.cancel_scope.cancel()


async def test_a_cancelled_tasks_result_leaves_the_task_running(
    autojump_clock: trio.testing.MockClock,
) -> None:
    model = Model()
    async with pair(sampling_handler=model) as (client, session):
        task_id = await create(session)
        with trio.move_on_after(5):  # the server gives up waiting: notifications/cancelled
            await session.send_request("tasks/result", {"taskId": task_id})
        await trio.testing.wait_all_tasks_blocked()
        assert model.ended == []
        assert client.task_receiver.live_count() == 1
        model.release.set()
        result = await session.send_request("tasks/result", {"taskId": task_id})
        assert result["model"] == "toy"


async def test_a_handler_that_crashes_fails_its_task_with_an_internal_error(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async def broken(ctx: RequestContext, params: CreateMessageRequestParams) -> Any:
        raise RuntimeError("bug in the application")

    async with pair(sampling_handler=broken) as (_client, session):
        task_id = await create(session)
        with pytest.raises(McpError, match="Internal error") as caught:
            await session.send_request("tasks/result", {"taskId": task_id})
        assert caught.value.code == INTERNAL_ERROR
        assert (await get(session, task_id)).status == "failed"


@pytest.mark.parametrize("raised", [SystemExit, KeyboardInterrupt, GeneratorExit])
async def test_a_handler_raising_a_base_exception_fails_its_task_and_the_client_goes_on(
    raised: type[BaseException], autojump_clock: trio.testing.MockClock
) -> None:
    # The one outcome mapping (trimcp.session.outcome) for the client's tasks too: what
    # handler code raises fails that task; the client's runner and session go on.
    calls: list[str] = []

    async def once_broken(ctx: RequestContext, params: CreateMessageRequestParams) -> Any:
        calls.append("called")
        if len(calls) == 1:
            raise raised
        return ANSWER

    async with pair(sampling_handler=once_broken) as (client, session):
        broken = await create(session)
        with pytest.raises(McpError, match="Internal error") as caught:
            await session.send_request("tasks/result", {"taskId": broken})
        assert caught.value.code == INTERNAL_ERROR
        assert (await get(session, broken)).status == "failed"
        fine = await create(session)
        result = await session.send_request("tasks/result", {"taskId": fine})
        assert result["content"] == {"type": "text", "text": "42"}
        assert client.task_receiver.running


async def test_many_tasks_created_and_cancelled_at_random_leave_none_running(
    autojump_clock: trio.testing.MockClock,
) -> None:
    chance = random.Random(13)
    model = Model()
    options = TaskOptions(max_running=500, shutdown_grace=0)
    async with pair(sampling_handler=model, task_options=options) as (client, session):
        ids = [await create(session) for _ in range(300)]
        await trio.testing.wait_all_tasks_blocked()
        cancelled = set(chance.sample(ids, 150))
        async with trio.open_nursery() as nursery:
            for task_id in cancelled:
                nursery.start_soon(session.send_request, "tasks/cancel", {"taskId": task_id})
        model.release.set()
        await trio.testing.wait_all_tasks_blocked()
        assert client.task_receiver.live_count() == 0
        statuses = {task_id: (await get(session, task_id)).status for task_id in ids}
        assert {statuses[task_id] for task_id in cancelled} == {"cancelled"}
        assert {statuses[task_id] for task_id in set(ids) - cancelled} == {"completed"}
        assert model.ended.count("cancelled") == 150
        assert model.ended.count("answered") == 150


async def test_without_its_runner_a_client_declares_no_tasks() -> None:
    client = Client(sampling_handler=Model())
    assert not client.task_receiver.running
    # Without the runner (attach on a session opened by hand): nothing about tasks declared.
    assert client.task_receiver.declare(client.handlers.capabilities(), "2025-11-25").tasks is None
