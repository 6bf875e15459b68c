"""SIGKILL of a replica while a piece of outstanding work is on it: every call ends exactly
once for its client, and the surviving replica keeps serving (issue 31, item 3).

Two ``trimcp run`` replicas on one redis-server (each row starts its own pair; the kill
is for real: ``SIGKILL``, no goodbye in Redis), addressed directly, or behind nginx where
the row is about where a retry lands. Each row waits until its work is outstanding on the
replica it kills (an acknowledgement, a header, a question the client was asked), never
for a time; every wait is bounded by ``fail_after``.

- **listen**: a 2026 ``subscriptions/listen`` stream held on A ends with one
  :class:`~trimcp.client.SubscriptionLost` (docs: "raises SubscriptionLost when the
  stream drops"); a listen on B hears what is raised afterwards.
- **resume**: a 2025 call running on A whose stream the client resumed on B (``GET`` with
  ``Last-Event-ID``; B follows A's stream): the call ends with one JSON-RPC error naming
  A, on B's stream or on the client's next resume, and never a second answer.
- **MRTR**: a 2026 tool asks for input (``input_required``) on A; A dies while the
  client answers; the retry, through nginx, lands on B, which answers it once.
- **task input**: a task (2025-11-25 and 2026-07-28) waiting for input on A, followed
  from B; A dies while the client answers (``tasks/result`` forwarding the question on
  B, or ``tasks/update`` on B): the task ends once, failed, saying its replica stopped.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest
import trio

from tests.http_server.test_real_socket import sse_messages
from tests.scale.peers import BUS_APP, Cluster, RedisServer, open_cluster
from tests.scale.raw_session import (
    open_resume,
    open_session,
    post,
    read_events,
    resume,
    start_slow_call,
)
from tests.scale.test_cut_calls import heartbeat
from tests.scale.test_principals import LegacySession
from tests.scale.test_resume_elsewhere import resume_until_answered
from trimcp import connect_http
from trimcp.client import SubscriptionLost
from trimcp.errors import McpError
from trimcp.session import RequestContext
from trimcp.stores.redis_tasks import RUNNER_STOPPED
from trimcp.types import ElicitRequestParams, ElicitResult, TextContent

#: Bounds every row: a replica's death is noticed within about 4 s (its heartbeat).
WAIT = 60.0

T = TypeVar("T")


@pytest.fixture
def bus_cluster(
    scale_tools: dict[str, str], redis_server: RedisServer, tmp_path: Path
) -> Iterator[Cluster]:
    """Two replicas of tests/scale/bus_app.py (listen, input rounds, tasks with input)."""
    nginx = scale_tools["SCALE_NGINX"]
    with open_cluster(
        nginx, redis_server, tmp_path, count=2, app=BUS_APP, marks_variable="BUS_MARKS"
    ) as opened:
        yield opened


@pytest.fixture
def slow_cluster(
    scale_tools: dict[str, str], redis_server: RedisServer, tmp_path: Path
) -> Iterator[Cluster]:
    """Two replicas of tests/scale/replica_app.py (``slow``: a call with progress)."""
    with open_cluster(scale_tools["SCALE_NGINX"], redis_server, tmp_path, count=2) as opened:
        yield opened


async def in_thread(fn: Callable[..., T], *args: Any) -> T:
    """A blocking call (raw HTTP, stopping a process) off the Trio thread. Abandoned if
    the test's bound passes (each socket read is bounded by its own timeout too)."""
    return await trio.to_thread.run_sync(lambda: fn(*args), abandon_on_cancel=True)


def _text(result: object) -> str:
    content = getattr(result, "content", None)
    assert isinstance(content, list)
    block = content[0]
    assert isinstance(block, TextContent)
    return block.text


# --- listen ------------------------------------------------------------------------------


async def test_a_listen_stream_on_a_killed_replica_ends_once(bus_cluster: Cluster) -> None:
    a, b = bus_cluster.replicas
    ends: list[object] = []
    heard: list[str | None] = []
    with trio.fail_after(WAIT):
        async with connect_http(b.url) as raiser:
            async with (
                connect_http(a.url) as listener,
                listener.listen(resource_subscriptions=["bus://7"]) as sub,
            ):
                await raiser.call_tool("touch", {"n": 7})  # raised on B, heard on A
                heard.append((await sub.__anext__()).uri)
                await in_thread(a.kill)
                try:
                    async for event in sub:
                        heard.append(event.uri)
                    ends.append("the stream ended gracefully")
                except SubscriptionLost as lost:
                    ends.append(lost)
            assert heard == ["bus://7"]
            assert len(ends) == 1
            assert isinstance(ends[0], SubscriptionLost), ends
            # B goes on: a listen there hears what is raised from now on.
            async with (
                connect_http(b.url) as again,
                again.listen(resource_subscriptions=["bus://7"]) as sub,
            ):
                await raiser.call_tool("touch", {"n": 7})
                assert (await sub.__anext__()).uri == "bus://7"


# --- a resumed stream ----------------------------------------------------------------------


def _answers(events: list[dict[str, str]]) -> list[dict[str, Any]]:
    messages = [json.loads(event["data"]) for event in events if event.get("data")]
    return [m for m in messages if m.get("id") == 7]


async def test_a_stream_followed_on_b_when_a_dies_ends_once_with_an_error_naming_a(
    slow_cluster: Cluster,
) -> None:
    a, b = slow_cluster.replicas
    with trio.fail_after(WAIT):
        session = await in_thread(open_session, a.port)
        # The call's next progress is a minute away: A runs it, B will have nothing to
        # replay, so B follows A's stream.
        priming, last = await in_thread(start_slow_call, a.port, session, "followed", 3, 60.0, 1)
        owner = priming.split(".", 1)[0]  # the replica whose stream it is: A
        connection, response = await in_thread(open_resume, b.port, session, last)
        try:
            assert response.status == 200  # B accepted the id: it follows A's stream now
            await in_thread(a.kill)
            events = await in_thread(read_events, response)
        finally:
            connection.close()
        answers = _answers(events)
        if not answers:  # B stopped following (A missed a beat): resume, as clients do
            assert "retry" in events[-1], events
            data = [event for event in events if event.get("data")]
            resumed, _ = await in_thread(
                resume_until_answered, b.port, session, data[-1]["id"] if data else last
            )
            answers = [m for m in resumed if m.get("id") == 7]
        (answer,) = answers
        assert "result" not in answer, answer
        assert answer["error"]["code"] == -32603
        assert answer["error"]["data"]["replica"] == owner, answer
        assert "stopped" in answer["error"]["message"]
        # Written once: resumed again from the same place, the stream holds that one end.
        again = await in_thread(resume, b.port, session, last)
        assert _answers(again) == [answer]
        # B goes on: the session's next call is answered there.
        legacy = LegacySession(session)
        call = {"name": "echo", "arguments": {"text": "after"}}
        assert _text_of(await legacy.call(b.url, None, "tools/call", call)) == "after"


def _text_of(result: dict[str, Any]) -> str:
    text: str = result["content"][0]["text"]
    return text


# --- an input round (MRTR) -----------------------------------------------------------------


def _replica_of(cluster: Cluster, tag: str) -> int:
    """The index of the replica that asked the question of call ``tag``."""
    pid = int((cluster.marks / f"{tag}.asked").read_text())
    return next(n for n, r in enumerate(cluster.replicas) if r.process.pid == pid)


async def test_an_input_round_whose_replica_dies_is_answered_once_by_the_survivor(
    bus_cluster: Cluster,
) -> None:
    asked: list[int] = []

    async def kill_then_answer(ctx: RequestContext, params: ElicitRequestParams) -> ElicitResult:
        # The round is outstanding: A answered input_required, the client holds the
        # sealed state and answers now. A dies first; the retry goes through nginx.
        victim = _replica_of(bus_cluster, "round")
        asked.append(victim)
        await in_thread(bus_cluster.replicas[victim].kill)
        return ElicitResult(action="accept", content={"name": "Bo"})

    with trio.fail_after(WAIT):
        async with connect_http(bus_cluster.nginx.url, elicitation_handler=kill_then_answer) as c:
            assert c.protocol_version == "2026-07-28"
            answer = _text(await c.call_tool("ask_marked", {"tag": "round"}))
            (victim,) = asked
            survivor = bus_cluster.replicas[1 - victim]
            assert answer == f"hello Bo {survivor.process.pid}"
            # The survivor goes on serving.
            assert _text(await c.call_tool("whoami", {})) == str(survivor.process.pid)


# --- a task waiting for input --------------------------------------------------------------


async def _not_on_a(ctx: RequestContext, params: ElicitRequestParams) -> ElicitResult:
    raise AssertionError("the question goes to the client following the task on B")


async def test_a_2026_task_waiting_for_input_whose_replica_dies_ends_once(
    bus_cluster: Cluster,
) -> None:
    a, b = bus_cluster.replicas
    asked: list[str] = []

    async def kill_then_answer(ctx: RequestContext, params: ElicitRequestParams) -> ElicitResult:
        # The task waits for this answer on A; the client answers through B (2025: on
        # B's tasks/result, which forwarded the question; 2026: with tasks/update on B).
        asked.append(params.message)
        await in_thread(a.kill)
        return ElicitResult(action="accept", content={"name": "Ada"})

    with trio.fail_after(WAIT):
        async with connect_http(a.url, elicitation_handler=_not_on_a) as on_a:
            created = await on_a.call_tool_as_task("ask_in_task", {"tag": "task"})
            async for task in created:  # (its own polls)
                if task.status == "input_required":
                    break
            assert _replica_of(bus_cluster, "task") == 0  # A runs it, waiting for input
        async with connect_http(b.url, elicitation_handler=kill_then_answer) as on_b:
            handle = await on_b.get_task(created.task_id)
            with pytest.raises(McpError) as ended:
                await handle.result()
            assert asked == ["Your name?"]
            assert (ended.value.code, ended.value.message) == (-32603, RUNNER_STOPPED)
            await _names_a_dead_replica(bus_cluster, ended.value.data)
            assert (await handle.refresh()).status == "failed"
            # B goes on serving.
            assert _text(await on_b.call_tool("whoami", {})) == str(b.process.pid)


async def _names_a_dead_replica(cluster: Cluster, data: object) -> None:
    """``data`` names a replica, and that replica's heartbeat is gone (so it is not B)."""
    assert isinstance(data, dict), data
    assert await in_thread(heartbeat, cluster.redis.url, data["replica"]) is None


def _request(port: int, session: str, message: dict[str, Any]) -> dict[str, Any]:
    """One request of a raw 2025 session; its answer (read to the end of its stream)."""
    with post(port, message, session) as response:
        assert response.status == 200
        body = response.read()  # (to the end of the body: the replica keeps the connection)
    answers: list[dict[str, Any]] = [m for m in sse_messages(body) if m.get("id") == message["id"]]
    (answer,) = answers
    return answer


def _answer_on_b(
    port: int, session: str, task_id: str, before_answering: Callable[[], None]
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """``tasks/result`` on B: answer the question it forwards (after
    ``before_answering``), read its stream to the end. The questions, and the answers
    to ``tasks/result``."""
    questions: list[dict[str, Any]] = []
    answers: list[dict[str, Any]] = []
    request = {"jsonrpc": "2.0", "id": 50, "method": "tasks/result", "params": {"taskId": task_id}}
    with post(port, request, session) as response:
        assert response.status == 200
        while not questions and (events := read_events(response, 1)):
            if data := events[0].get("data"):
                message = json.loads(data)
                if message.get("method") == "elicitation/create":
                    questions.append(message)
                elif message.get("id") == 50:
                    answers.append(message)
        assert questions, f"no question forwarded: {answers}"
        before_answering()
        accept = {"action": "accept", "content": {"name": "Ada"}}
        reply = {"jsonrpc": "2.0", "id": questions[0]["id"], "result": accept}
        with post(port, reply, session) as answered:
            answered.read()
            assert answered.status == 202
        for event in read_events(response):
            if data := event.get("data"):
                message = json.loads(data)
                if message.get("method") == "elicitation/create":
                    questions.append(message)
                elif message.get("id") == 50:
                    answers.append(message)
    return questions, answers


async def test_a_2025_task_waiting_for_input_whose_replica_dies_ends_once(
    bus_cluster: Cluster,
) -> None:
    a, b = bus_cluster.replicas
    with trio.fail_after(WAIT):
        session = await in_thread(open_session, a.port, {"elicitation": {}})
        call = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {"name": "ask_in_task", "arguments": {"tag": "task"}, "task": {}},
        }
        task_id = (await in_thread(_request, a.port, session, call))["result"]["task"]["taskId"]
        get = {"jsonrpc": "2.0", "id": 2, "method": "tasks/get", "params": {"taskId": task_id}}
        while True:  # another process: polled, within the bound
            task = (await in_thread(_request, a.port, session, get))["result"]
            if task["status"] == "input_required":
                break
            await trio.sleep(0.05)
        assert _replica_of(bus_cluster, "task") == 0  # A runs it, waiting for input
        # The session's tasks/result on B forwards the question; A dies before the answer.
        questions, answers = await in_thread(_answer_on_b, b.port, session, task_id, a.kill)
        assert [q["params"]["message"] for q in questions] == ["Your name?"]
        (answer,) = answers
        assert "result" not in answer, answer
        assert (answer["error"]["code"], answer["error"]["message"]) == (-32603, RUNNER_STOPPED)
        await _names_a_dead_replica(bus_cluster, answer["error"].get("data"))
        # B goes on serving the session.
        whoami = {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "whoami"}}
        answer = await in_thread(_request, b.port, session, whoami)
        assert _text_of(answer["result"]) == str(b.process.pid)
