"""Every typed request of the client against a recording low-level server in memory."""

from __future__ import annotations

import json
from typing import Any

import pytest
import trio
import trio.testing

import trimcp
from tests.client.helpers import RecordingServer, client_and_server
from trimcp.cli.wiretap import WireTap
from trimcp.client import connect_memory, connect_transport
from trimcp.errors import (
    INVALID_PARAMS,
    LocalProtocolError,
    McpError,
    RequestTimeout,
    SessionClosed,
)
from trimcp.session import RequestContext, SessionOptions, serve_session
from trimcp.transports.memory import memory_transport_pair
from trimcp.types import (
    CallToolRequestParams,
    CallToolResult,
    CompleteResult,
    Completion,
    EmptyResult,
    GetPromptResult,
    Implementation,
    PromptMessage,
    PromptReference,
    ReadResourceResult,
    ResourceTemplateReference,
    ServerCapabilities,
    TextContent,
    TextResourceContents,
    ToolsCapability,
)


async def test_handshake_exposes_what_the_server_said() -> None:
    server = RecordingServer(instructions="use the tools wisely")
    async with connect_memory(server) as client:
        assert client.server_info == Implementation(name="test-server", version="1.0.0")
        assert client.server_capabilities == server.capabilities
        assert client.instructions == "use the tools wisely"
        assert client.protocol_version == "2025-11-25"
        assert client.session.negotiated is not None
        assert client.initialize_result.server_info.name == "test-server"
    (init,) = server.params_of("initialize")
    assert init.client_info == Implementation(name="trimcp", version=trimcp.__version__)
    assert init.protocol_version == "2025-11-25"


async def test_offered_version_and_client_info_are_used() -> None:
    server = RecordingServer()
    info = Implementation(name="my-app", version="9.9")
    async with connect_memory(server, protocol_version="2025-06-18", client_info=info) as client:
        assert client.protocol_version == "2025-06-18"
    (init,) = server.params_of("initialize")
    assert init.client_info == info


def test_unsupported_version_is_refused_before_connecting() -> None:
    with pytest.raises(ValueError, match="1999-01-01"):
        trimcp.client.Client(protocol_version="1999-01-01")


async def test_ping() -> None:
    # A no-op ping() would pass a bare `await client.ping()`: check the wire both ways.
    client_end, server_end = memory_transport_pair()
    wire: list[str] = []
    async with trio.open_nursery() as nursery:
        await nursery.start(serve_session, server_end, RecordingServer())
        async with connect_transport(WireTap(client_end, wire.append)) as client:
            wire.clear()
            await client.ping()
            await client.ping(timeout=5)
        nursery.cancel_scope.cancel()
    sent = [json.loads(line[3:]) for line in wire if line.startswith("-> ")]
    received = [json.loads(line[3:]) for line in wire if line.startswith("<- ")]
    pings = [message for message in sent if message.get("method") == "ping"]
    assert len(pings) == 2
    for ping in pings:
        assert {"id": ping["id"], "jsonrpc": "2.0", "result": {}} in received


async def test_call_tool_sends_name_arguments_and_meta() -> None:
    server = RecordingServer()

    @server.request_handler("tools/call")
    async def call(ctx: RequestContext) -> CallToolResult:
        return CallToolResult(content=[TextContent(text=f"called {ctx.params.name}")])

    async with connect_memory(server) as client:
        result = await client.call_tool("echo", {"text": "hi"}, meta={"trace": "abc"})
    assert result.content == [TextContent(text="called echo")]
    (params,) = server.params_of("tools/call")
    assert params == CallToolRequestParams(
        name="echo", arguments={"text": "hi"}, meta={"trace": "abc"}
    )


async def test_a_tool_error_is_a_result_and_a_protocol_error_raises() -> None:
    server = RecordingServer()

    @server.request_handler("tools/call")
    async def call(ctx: RequestContext) -> CallToolResult:
        if ctx.params.name == "bad":
            raise McpError(INVALID_PARAMS, "no such tool")
        return CallToolResult(content=[TextContent(text="boom")], is_error=True)

    async with connect_memory(server) as client:
        result = await client.call_tool("failing")
        assert result.is_error is True
        with pytest.raises(McpError) as info:
            await client.call_tool("bad")
        assert info.value.code == INVALID_PARAMS
        assert info.value.message == "no such tool"


def progress_server(steps: int, step_time: float) -> RecordingServer:
    server = RecordingServer()
    server.cancelled = False  # type: ignore[attr-defined]

    @server.request_handler("tools/call")
    async def call(ctx: RequestContext) -> CallToolResult:
        try:
            for i in range(steps):
                await trio.sleep(step_time)
                await ctx.report_progress(i + 1, steps, f"step {i + 1}")
        except trio.Cancelled:
            server.cancelled = True  # type: ignore[attr-defined]
            raise
        return CallToolResult(content=[TextContent(text="done")])

    return server


async def test_call_tool_progress_callback(autojump_clock: Any) -> None:
    updates: list[tuple[float, float | None, str | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        updates.append((progress, total, message))

    async with connect_memory(progress_server(3, 1)) as client:
        await client.call_tool("work", on_progress=on_progress)
    assert updates == [(1, 3, "step 1"), (2, 3, "step 2"), (3, 3, "step 3")]


async def test_call_tool_timeout_cancels_the_server_handler(autojump_clock: Any) -> None:
    server = progress_server(1, 100)
    async with connect_memory(server) as client:
        with pytest.raises(RequestTimeout):
            await client.call_tool("work", timeout=3)
        await trio.testing.wait_all_tasks_blocked()
        assert server.cancelled  # type: ignore[attr-defined]


async def test_progress_can_extend_the_timeout(autojump_clock: Any) -> None:
    # Five steps of 2 s with a 3 s timeout: only done because each progress resets it.
    async with connect_memory(progress_server(5, 2)) as client:
        result = await client.call_tool(
            "work", timeout=3, on_progress=lambda *_: None, reset_timeout_on_progress=True
        )
        assert result.content == [TextContent(text="done")]
        with pytest.raises(RequestTimeout):
            await client.call_tool("work", timeout=3, on_progress=lambda *_: None)


async def test_default_timeout_comes_from_the_session_options(autojump_clock: Any) -> None:
    options = SessionOptions(request_timeout=7)
    async with connect_memory(progress_server(1, 100), options=options) as client:
        start = trio.current_time()
        with pytest.raises(RequestTimeout):
            await client.call_tool("work")
        assert trio.current_time() - start == pytest.approx(7)


async def test_cancelling_the_caller_cancels_the_server_handler(autojump_clock: Any) -> None:
    server = progress_server(1, 100)
    async with connect_memory(server) as client:
        with trio.move_on_after(2) as scope:
            await client.call_tool("work", timeout=None)
        assert scope.cancelled_caught
        await trio.testing.wait_all_tasks_blocked()
        assert server.cancelled  # type: ignore[attr-defined]
        await client.ping()  # the session goes on


async def test_read_subscribe_unsubscribe() -> None:
    server = RecordingServer()

    @server.request_handler("resources/read")
    async def read(ctx: RequestContext) -> ReadResourceResult:
        return ReadResourceResult(
            contents=[TextResourceContents(uri=ctx.params.uri, text="data", mime_type="text/plain")]
        )

    @server.request_handler("resources/subscribe")
    @server.request_handler("resources/unsubscribe")
    async def subscription(ctx: RequestContext) -> EmptyResult:
        return EmptyResult()

    async with connect_memory(server) as client:
        result = await client.read_resource("file:///a.txt")
        assert result.contents == [
            TextResourceContents(uri="file:///a.txt", text="data", mime_type="text/plain")
        ]
        await client.subscribe_resource("file:///a.txt")
        await client.unsubscribe_resource("file:///a.txt")
    assert [p.uri for p in server.params_of("resources/subscribe")] == ["file:///a.txt"]
    assert [p.uri for p in server.params_of("resources/unsubscribe")] == ["file:///a.txt"]


async def test_get_prompt() -> None:
    server = RecordingServer()

    @server.request_handler("prompts/get")
    async def get(ctx: RequestContext) -> GetPromptResult:
        who = (ctx.params.arguments or {})["name"]
        return GetPromptResult(
            description="greeting",
            messages=[PromptMessage(role="user", content=TextContent(text=f"Greet {who}"))],
        )

    async with connect_memory(server) as client:
        result = await client.get_prompt("greet", {"name": "Ada"})
    assert result.messages[0].content == TextContent(text="Greet Ada")
    assert server.params_of("prompts/get")[0].name == "greet"


async def test_complete_sends_ref_argument_and_context() -> None:
    server = RecordingServer()

    @server.request_handler("completion/complete")
    async def complete(ctx: RequestContext) -> CompleteResult:
        return CompleteResult(completion=Completion(values=["Paris", "Parma"], has_more=False))

    async with connect_memory(server) as client:
        result = await client.complete(PromptReference(name="trip"), "city", "Par")
        assert result.completion.values == ["Paris", "Parma"]
        await client.complete(
            ResourceTemplateReference(uri="weather://{country}/{city}"),
            "city",
            "Pa",
            context_arguments={"country": "FR"},
        )
    first, second = server.params_of("completion/complete")
    assert first.ref == PromptReference(name="trip")
    assert (first.argument.name, first.argument.value, first.context) == ("city", "Par", None)
    assert second.ref == ResourceTemplateReference(uri="weather://{country}/{city}")
    assert second.context.arguments == {"country": "FR"}


async def test_set_logging_level() -> None:
    server = RecordingServer()

    @server.request_handler("logging/setLevel")
    async def set_level(ctx: RequestContext) -> EmptyResult:
        return EmptyResult()

    async with connect_memory(server) as client:
        await client.set_logging_level("warning")
    assert server.params_of("logging/setLevel")[0].level == "warning"


async def test_a_capability_the_server_lacks_is_refused_locally() -> None:
    server = RecordingServer(capabilities=ServerCapabilities(tools=ToolsCapability()))
    async with connect_memory(server) as client:
        with pytest.raises(LocalProtocolError, match="prompts"):
            await client.get_prompt("greet")
        with pytest.raises(LocalProtocolError, match="resources"):
            await client.read_resource("file:///x")
    assert server.params_of("prompts/get") == []


async def test_requests_after_close_raise_session_closed() -> None:
    async with client_and_server(RecordingServer()) as (client, _server):
        await client.aclose()
        assert client.session.closed
        with pytest.raises(SessionClosed):
            await client.ping()
