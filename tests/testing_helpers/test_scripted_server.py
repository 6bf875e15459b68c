"""ScriptedServer: scripted answers, progress, delays, cancellation, server requests, and
clear failures when the client strays from the script."""

from __future__ import annotations

import json

import pytest
import trio

from trimcp import McpError
from trimcp.errors import INVALID_PARAMS
from trimcp.session.transport import Outgoing
from trimcp.testing import ScriptedServer, ScriptError
from trimcp.types import CallToolResult, ListToolsResult, Root, TextContent, Tool


def text_result(text: str) -> CallToolResult:
    return CallToolResult(content=[TextContent(text=text)])


async def test_replies_and_records_what_it_received() -> None:
    server = ScriptedServer(name="fake", version="0.1")
    server.expect("tools/list").reply(
        ListToolsResult(tools=[Tool(name="echo", input_schema={"type": "object"})])
    )
    server.expect("tools/call", {"name": "echo", "arguments": {"text": "hi"}}).reply(
        text_result("hi")
    )
    async with server.open_client() as client:
        assert client.server_info.name == "fake"
        assert [tool.name async for tool in client.iter_tools()] == ["echo"]
        result = await client.call_tool("echo", {"text": "hi"})
        assert result.content == [TextContent(text="hi")]
    assert [m["method"] for m in server.requests()] == ["initialize", "tools/list", "tools/call"]
    assert server.notifications() == [{"jsonrpc": "2.0", "method": "notifications/initialized"}]
    assert server.pending == []


async def test_progress_uses_the_requests_token() -> None:
    seen: list[tuple[float, float | None, str | None]] = []
    server = ScriptedServer()
    server.expect("tools/call").progress(1, 2, "half").progress(2, 2).reply(text_result("ok"))
    async with server.open_client() as client:
        await client.call_tool("work", on_progress=lambda p, t, m: seen.append((p, t, m)))
    assert seen == [(1, 2, "half"), (2, 2, None)]


async def test_an_error_answer_raises_mcp_error() -> None:
    server = ScriptedServer()
    server.expect("tools/call").error(INVALID_PARAMS, "bad city", {"field": "city"})
    async with server.open_client() as client:
        with pytest.raises(McpError) as caught:
            await client.call_tool("forecast", {"city": ""})
    assert (caught.value.code, caught.value.message) == (INVALID_PARAMS, "bad city")
    assert caught.value.data == {"field": "city"}


async def test_a_cancelled_call_notifies_and_stops_the_scripted_actions(
    autojump_clock: trio.abc.Clock,
) -> None:
    server = ScriptedServer()
    slow = server.expect("tools/call").delay(60).reply(text_result("too late"))
    cancel = server.expect("notifications/cancelled", {"requestId": 2})
    async with server.open_client() as client:
        with trio.move_on_after(5) as scope:
            await client.call_tool("slow")
        assert scope.cancelled_caught
        await server.wait_done()
    assert cancel.message is not None
    assert slow.finished
    assert not any(b"too late" in data for data in server.sent)


async def test_a_request_to_the_client_gets_its_answer() -> None:
    server = ScriptedServer()
    call = server.expect("tools/call").request("roots/list").reply(text_result("listed"))
    roots = [Root(uri="file:///work", name="work")]
    async with server.open_client(roots=roots) as client:
        await client.call_tool("look")
    assert call.responses[0]["result"] == {"roots": [{"uri": "file:///work", "name": "work"}]}


async def test_hold_orders_the_answers_without_sleeping() -> None:
    release = trio.Event()
    answers: list[str] = []
    server = ScriptedServer(ordered=False)
    server.expect("tools/call", {"name": "first"}).hold(release).reply(text_result("first"))
    server.expect("tools/call", {"name": "second"}).reply(text_result("second"))

    async with server.open_client() as client:

        async def call(name: str) -> None:
            result = await client.call_tool(name)
            assert isinstance(result.content[0], TextContent)
            answers.append(result.content[0].text)
            if name == "second":
                release.set()

        async with trio.open_nursery() as nursery:
            nursery.start_soon(call, "first")
            nursery.start_soon(call, "second")
    assert answers == ["second", "first"]


async def test_malformed_output_is_sent_as_is_and_the_client_survives() -> None:
    server = ScriptedServer()
    server.expect("tools/list").send(b"{oops").reply({"tools": []})
    async with server.open_client() as client:
        assert [tool async for tool in client.iter_tools()] == []
    complaints = [m for m in server.received if "error" in m]
    assert complaints
    assert complaints[0]["error"]["code"] == -32700
    assert server.failures == []


async def test_an_unexpected_request_is_answered_and_fails_the_script() -> None:
    server = ScriptedServer()
    server.expect("tools/call")
    answered: list[McpError] = []

    async def stray() -> None:
        async with server.open_client() as client:
            try:
                await client.list_prompts()
            except McpError as exc:
                answered.append(exc)

    with pytest.raises(ScriptError, match=r"unexpected 'prompts/list'.*expected <expect tools"):
        await stray()
    assert "ScriptedServer: unexpected" in answered[0].message


async def test_an_unmet_expectation_fails_the_script() -> None:
    server = ScriptedServer()
    server.expect("tools/list").reply({"tools": []})
    with pytest.raises(ScriptError, match=r"never received: <expect tools/list>"):
        async with server.open_client():
            pass


async def test_failures_are_noted_on_an_exception_from_the_block() -> None:
    server = ScriptedServer()
    with pytest.raises(McpError) as caught:
        async with server.open_client() as client:
            await client.list_tools()
    assert any("unexpected 'tools/list'" in note for note in caught.value.__notes__)


async def test_params_may_be_a_predicate_and_ignored_methods_are_no_failure() -> None:
    server = ScriptedServer(ignore={"notifications/roots/list_changed"})
    server.expect("tools/call", lambda p: p["arguments"]["n"] > 10).reply(text_result("big"))
    async with server.open_client(roots=[]) as client:
        await client.notify_roots_changed()
        await client.call_tool("size", {"n": 11})
    assert server.notifications("notifications/roots/list_changed")


async def test_wait_done_is_bounded(autojump_clock: trio.abc.Clock) -> None:
    server = ScriptedServer()
    server.expect("tools/list").reply({"tools": []})
    with pytest.raises(ScriptError, match="still pending"):
        async with server.open_client():
            await server.wait_done(timeout=3)


async def test_without_auto_initialize_the_script_owns_the_handshake() -> None:
    server = ScriptedServer(auto_initialize=False, protocol_version="2025-06-18")
    server.expect("initialize", {"protocolVersion": "2025-11-25"}).reply(
        {
            "protocolVersion": "2025-06-18",
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "hand-made", "version": "1"},
        }
    )
    server.expect("notifications/initialized")
    async with server.open_client() as client:
        assert client.protocol_version == "2025-06-18"
        assert client.server_info.name == "hand-made"


async def test_the_raw_transport_for_clients_that_are_not_trimcp_clients() -> None:
    server = ScriptedServer(auto_initialize=False)
    server.expect("anything/custom", {"x": 1}).reply({"y": 2})
    async with server.open_transport() as transport:
        await transport.send(
            [
                Outgoing(
                    json.dumps(
                        {"jsonrpc": "2.0", "id": 7, "method": "anything/custom", "params": {"x": 1}}
                    ).encode()
                )
            ]
        )
        with trio.fail_after(5):
            answer = json.loads(await transport.receive())
    assert answer == {"jsonrpc": "2.0", "id": 7, "result": {"y": 2}}
