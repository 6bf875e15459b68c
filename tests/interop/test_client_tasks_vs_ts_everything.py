"""Interop: trimcp's client runs the TypeScript everything server's task tool
(``simulate-research-query``, pinned ``@modelcontextprotocol/server-everything``) to
completion as a task, over stdio and Streamable HTTP, at 2025-11-25 (the revision that
server speaks): creation, polling with status messages, ``input_required`` answered with the
registered elicitation handler through ``tasks/result``, the final result, listing and
cancelling.

The other direction too: the ``*-async`` tools (``trigger-sampling-request-async``,
``trigger-elicitation-request-async``) send ``sampling/createMessage`` and
``elicitation/create`` with ``params.task``; trimcp's client (declaring
``tasks.requests.sampling.createMessage`` / ``elicitation.create``) answers with a
``CreateTaskResult``, runs the registered handler as a task, and serves the server's
``tasks/get`` polls (one a second) and ``tasks/result``; a handler error fails the task and
the server reports it.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
import trio

from tests.interop.ts_everything.conftest import (  # fixtures: the tests live one level up
    Inbox,
    Peer,
    peer_fixture,  # noqa: F401
    ts_everything_fixture,  # noqa: F401
)
from trimcp.client import Client
from trimcp.errors import McpError
from trimcp.session import RequestContext
from trimcp.types import (
    RELATED_TASK_META_KEY,
    CreateMessageRequestParams,
    CreateMessageResult,
    ElicitRequestParams,
    ElicitResult,
    TextContent,
)

TOOL = "simulate-research-query"
WAIT = 30  # seconds; the tool takes four one-second stages


def text(result: Any) -> str:
    return "".join(block.text for block in result.content if isinstance(block, TextContent))


async def test_task_tool_declares_task_support(peer: Peer) -> None:
    async with peer.connect() as client:
        caps = client.server_capabilities.tasks
        assert caps is not None
        assert caps.requests is not None
        assert caps.requests.tools is not None
        tools = {tool.name: tool async for tool in client.iter_tools()}
        execution = tools[TOOL].execution
        assert execution is not None
        assert execution.task_support in ("optional", "required")


async def test_research_query_runs_to_completion_as_a_task(peer: Peer) -> None:
    async with peer.connect() as client:
        with trio.fail_after(WAIT):
            handle = await client.call_tool_as_task(TOOL, {"topic": "trio"}, ttl=60)
            assert handle.status.status == "working"
            seen = [(task.status, task.status_message) async for task in handle]
            assert seen[-1][0] == "completed"
            result = await handle.result()
        assert "# Research Report: trio" in text(result)
        assert result.meta is not None
        assert result.meta[RELATED_TASK_META_KEY] == {"taskId": handle.task_id}
        listed = [task.task_id for task in (await client.list_tasks()).tasks]
        assert handle.task_id in listed


async def test_research_query_asks_for_clarification_through_tasks_result(peer: Peer) -> None:
    asked: list[Any] = []

    async def clarify(ctx: Any, params: Any) -> ElicitResult:
        asked.append(params)
        return ElicitResult(action="accept", content={"interpretation": "the async library"})

    async with peer.connect(elicitation_handler=clarify) as client:
        with trio.fail_after(WAIT):
            handle = await client.call_tool_as_task(TOOL, {"topic": "trio", "ambiguous": True})
            statuses = [task.status async for task in handle]
            result = await handle.result()
        assert "input_required" in statuses
        assert statuses[-1] == "completed"
        assert len(asked) == 1
        assert asked[0].meta[RELATED_TASK_META_KEY] == {"taskId": handle.task_id}
        assert "the async library" in text(result)


async def test_cancel_a_running_task(peer: Peer) -> None:
    async with peer.connect() as client:
        with trio.fail_after(WAIT):
            handle = await client.call_tool_as_task(TOOL, {"topic": "cancel me"})
            after = await handle.cancel()
            assert after.status == "cancelled"
            assert (await handle.refresh()).status == "cancelled"
            with pytest.raises(McpError):
                await handle.cancel()  # already terminal: -32602


# --- the client runs the server's tasks (the *-async tools) ----------------------------------

SAMPLING_ASYNC = "trigger-sampling-request-async"
ELICITATION_ASYNC = "trigger-elicitation-request-async"


def record_requests(client: Client) -> Inbox[str]:
    """Every server request the client handles, by method (wraps its request handler)."""
    seen: Inbox[str] = Inbox()
    handle = client.handle_request

    async def recording(ctx: RequestContext) -> Any:
        seen.append(ctx.method)
        return await handle(ctx)

    client.handle_request = recording  # type: ignore[method-assign]
    return seen


def created_task_id(report: str) -> str:
    first = report.split("Task created: ", 1)[1]
    return first.split("\n", 1)[0]


async def test_async_tools_are_offered_once_the_client_declares_task_requests(peer: Peer) -> None:
    async def model(ctx: RequestContext, params: CreateMessageRequestParams) -> Any:
        raise AssertionError("not called")

    async with peer.connect(sampling_handler=model) as client:
        tasks = client.negotiated.client_capabilities.tasks
        assert tasks is not None
        assert tasks.requests is not None
        assert tasks.requests.sampling is not None
        assert tasks.requests.elicitation is None
        names = {tool.name async for tool in client.iter_tools()}
        assert SAMPLING_ASYNC in names
        assert ELICITATION_ASYNC not in names  # no elicitation handler: not declared


async def test_sampling_runs_as_a_client_task_polled_by_the_server(peer: Peer) -> None:
    asked: list[CreateMessageRequestParams] = []
    seen: Inbox[str] = Inbox()

    async def model(ctx: RequestContext, params: CreateMessageRequestParams) -> Any:
        asked.append(params)
        # Still working when the server polls first: it sees `working`, then `completed`.
        await seen.wait_for(lambda method: method == "tasks/get", WAIT)
        return CreateMessageResult(
            role="assistant", content=TextContent(text="forty-two"), model="toy-model"
        )

    async with peer.connect(sampling_handler=model) as client:
        seen = record_requests(client)
        with trio.fail_after(WAIT):
            result = await client.call_tool(SAMPLING_ASYNC, {"prompt": "6 x 7?", "maxTokens": 9})
        report = text(result)
        assert report.startswith("[COMPLETED] Async sampling completed!"), report
        assert "Poll 1: working" in report
        assert "Poll 2: completed" in report
        [params] = asked
        assert params.task is not None
        assert params.task.ttl == 300_000
        assert params.max_tokens == 9
        payload = json.loads(report.split("**Result:**\n", 1)[1])
        task_id = created_task_id(report)
        assert payload == {
            "_meta": {RELATED_TASK_META_KEY: {"taskId": task_id}},
            "role": "assistant",
            "content": {"type": "text", "text": "forty-two"},
            "model": "toy-model",
        }
        # The server asked: the request (answered with the task), polls, then the result.
        assert seen.items[0] == "sampling/createMessage"
        assert seen.items[-1] == "tasks/result"
        assert set(seen.items[1:-1]) == {"tasks/get"}
        assert client.task_receiver.live_count() == 0


async def test_elicitation_runs_as_a_client_task(peer: Peer) -> None:
    asked: list[ElicitRequestParams] = []

    async def user(ctx: RequestContext, params: ElicitRequestParams) -> ElicitResult:
        asked.append(params)
        return ElicitResult(action="accept", content={"name": "Ada", "favoriteColor": "Blue"})

    async with peer.connect(elicitation_handler=user) as client:
        with trio.fail_after(WAIT):
            result = await client.call_tool(ELICITATION_ASYNC)
        blocks = [block.text for block in result.content if isinstance(block, TextContent)]
        assert blocks[0] == "[COMPLETED] User provided the requested information!"
        assert blocks[1] == "User inputs:\n- Name: Ada\n- Favorite Color: Blue"
        raw = json.loads(blocks[2].split("Raw result: ", 1)[1])
        assert raw["action"] == "accept"
        assert raw["_meta"] == {RELATED_TASK_META_KEY: {"taskId": created_task_id(blocks[2])}}
        [params] = asked
        assert params.task is not None
        assert params.task.ttl == 600_000


async def test_a_failing_client_task_is_reported_failed_to_the_server(peer: Peer) -> None:
    async def model(ctx: RequestContext, params: CreateMessageRequestParams) -> Any:
        raise McpError(-1, "the user refused to run the model")

    async with peer.connect(sampling_handler=model) as client:
        with trio.fail_after(WAIT):
            result = await client.call_tool(SAMPLING_ASYNC, {"prompt": "no"})
        report = text(result)
        assert report.startswith("[FAILED] the user refused to run the model"), report
        assert client.task_receiver.live_count() == 0
