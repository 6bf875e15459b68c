"""Client middleware: around every request after the handshake, may rewrite params,
answer locally or wrap; cancellation of the caller reaches it."""

from __future__ import annotations

from typing import Any

import pytest
import trio

import trimcp
from trimcp.client.middleware import ClientNext, OutgoingCall
from trimcp.server import Context, Server
from trimcp.types import CallToolResult, TextContent


def make_app() -> Server:
    app = Server("target")

    @app.tool()
    def echo(text: str, ctx: Context) -> str:
        meta = ctx.request_context.params.meta or {}
        return f"{text} {meta.get('example.com/tag', '-')}"

    @app.tool()
    async def slow() -> str:
        await trio.sleep(100)
        return "late"

    return app


async def test_client_middleware_order_rewrite_short_circuit(autojump_clock: Any) -> None:
    seen: list[tuple[str, str, str | None]] = []

    async def outer(call: OutgoingCall, call_next: ClientNext) -> Any:
        seen.append(("outer", call.method, call.target))
        if call.target == "local":
            return CallToolResult(content=[TextContent(text="answered locally")])
        return await call_next(call)

    async def tagger(call: OutgoingCall, call_next: ClientNext) -> Any:
        seen.append(("tagger", call.method, call.target))
        if call.method == "tools/call":
            meta = dict(call.params.meta or {})
            meta["example.com/tag"] = "tagged"
            call.params = type(call.params)(
                name=call.params.name, arguments=call.params.arguments, meta=meta
            )
        return await call_next(call)

    async with trimcp.connect_memory(make_app(), middleware=[outer, tagger]) as client:
        result = await client.call_tool("echo", {"text": "hi"})
        assert result.content[0].text == "hi tagged"  # type: ignore[union-attr]
        local = await client.call_tool("local")
        assert local.content[0].text == "answered locally"  # type: ignore[union-attr]
        await client.list_tools()
    methods = [(tag, method) for tag, method, _ in seen]
    assert ("outer", "initialize") not in methods  # the handshake is not passed through
    assert methods[:2] == [("outer", "tools/call"), ("tagger", "tools/call")]
    assert ("tagger", "tools/list") in methods


async def test_client_middleware_sees_the_callers_cancellation(autojump_clock: Any) -> None:
    events: list[str] = []

    async def observer(call: OutgoingCall, call_next: ClientNext) -> Any:
        try:
            return await call_next(call)
        except trio.Cancelled:
            events.append(f"cancelled {call.target}")
            raise

    async with trimcp.connect_memory(make_app(), middleware=[observer]) as client:
        with trio.move_on_after(1):
            await client.call_tool("slow")
    assert events == ["cancelled slow"]
    with pytest.raises(TypeError):
        trimcp.Client(middleware=[object()], nonsense=1)  # type: ignore[call-arg, list-item]
