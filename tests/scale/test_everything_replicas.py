"""examples/everything_server.py as replicas: what a client sees does not depend on the
replica its request lands on.

Two ``python examples/everything_server.py --transport http --store redis://...``
processes on one Redis; trimcp's client talks to each straight (no balancer: the test
picks the replica).
"""

from __future__ import annotations

import pytest
import trio

from tests.scale.peers import EVERYTHING_SERVER, Cluster, cluster_fixture
from trimcp import connect_http

WAIT = 30.0

cluster = cluster_fixture(count=2, app=EVERYTHING_SERVER, script=True)


async def _tools(url: str, mode: str) -> set[str]:
    async with connect_http(url, mode=mode) as client:
        return {tool.name for tool in (await client.list_tools()).tools}


async def _prompts(url: str, mode: str) -> set[str]:
    async with connect_http(url, mode=mode) as client:
        return {prompt.name for prompt in (await client.list_prompts()).prompts}


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_a_dynamic_tool_shows_on_every_replica(cluster: Cluster, mode: str) -> None:
    a, b = (replica.url for replica in cluster.replicas)
    with trio.fail_after(WAIT):
        before = await _tools(a, mode)
        assert before == await _tools(b, mode)
        shown = "test_dynamic_tool" not in before
        async with connect_http(a, mode=mode) as client:
            await client.call_tool("test_trigger_tool_change", {})
        for url in (a, b):  # the trigger ran on a: b lists the same tools
            assert ("test_dynamic_tool" in await _tools(url, mode)) is shown
        async with connect_http(b, mode=mode) as client:
            if shown:  # and calls it
                answer = await client.call_tool("test_dynamic_tool", {})
                assert answer.is_error is not True
            await client.call_tool("test_trigger_tool_change", {})
        for url in (a, b):
            assert await _tools(url, mode) == before
        async with connect_http(b, mode=mode) as client:
            await client.call_tool("test_trigger_prompt_change", {})
        prompts = await _prompts(a, mode)
        assert prompts == await _prompts(b, mode)
        async with connect_http(a, mode=mode) as client:
            await client.call_tool("test_trigger_prompt_change", {})
        assert await _prompts(b, mode) == await _prompts(a, mode) != prompts
