"""Interop: trimcp's client runs the TypeScript everything server's task tool
(``simulate-research-query``, pinned ``@modelcontextprotocol/server-everything``) to
completion as a task, over stdio and Streamable HTTP, at 2025-11-25 (the revision that
server speaks): creation, polling with status messages, ``input_required`` answered with the
registered elicitation handler through ``tasks/result``, the final result, listing and
cancelling.

Not covered: the ``*-async`` tools, which make the *client* run tasks (trimcp's client is a
task requestor only).
"""

from __future__ import annotations

from typing import Any

import pytest
import trio

from tests.interop.ts_everything.conftest import (  # fixtures: the tests live one level up
    Peer,
    peer_fixture,  # noqa: F401
    ts_everything_fixture,  # noqa: F401
)
from trimcp.errors import McpError
from trimcp.types import RELATED_TASK_META_KEY, ElicitResult, TextContent

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
