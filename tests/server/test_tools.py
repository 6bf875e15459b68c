"""Tools end to end: listing, calling, validation per revision, results, errors, runtime changes."""

from __future__ import annotations

import base64
import dataclasses
import logging
import threading
from typing import Any, TypedDict

import attrs
import pytest
import trio
import trio.testing

from tests.server.helpers import ScriptedClient, call_tool, connect, text_of, wire
from trimcp.errors import INVALID_PARAMS, McpError
from trimcp.server import Audio, Context, Image, Server, ToolError
from trimcp.types import (
    CallToolResult,
    EmbeddedResource,
    ImageContent,
    ResourceLink,
    TextContent,
    ToolAnnotations,
)


@attrs.frozen
class Forecast:
    city: str
    temperatures: list[float]


class Stats(TypedDict):
    count: int
    mean: float


@dataclasses.dataclass
class Pair:
    left: int
    right: int


def build_app() -> Server:
    app = Server("tools-test", "1.2.3")

    @app.tool(
        title="Weather",
        annotations=ToolAnnotations(read_only_hint=True),
        icons=[{"src": "https://example.com/i.png", "mimeType": "image/png"}],
        meta={"team": "sky"},
        task_support="optional",
    )
    async def forecast(city: str, days: int = 2) -> Forecast:
        """Forecast the weather.

        Args:
            city: Where.
            days: How many days.
        """
        return Forecast(city=city, temperatures=[20.0] * days)

    @app.tool
    def add(a: int, b: int) -> int:
        return a + b

    @app.tool()
    def echo(text: str) -> str:
        return text

    @app.tool(description="Nothing back")
    async def nothing() -> None:
        return None

    @app.tool()
    def names() -> list[str]:
        return ["a", "b"]

    @app.tool()
    def stats(values: list[float]) -> Stats:
        return {"count": len(values), "mean": sum(values) / len(values)}

    @app.tool()
    def pair(p: Pair) -> Pair:
        return Pair(p.right, p.left)

    @app.tool()
    def untyped(x: int):  # type: ignore[no-untyped-def]
        return {"x": x}

    @app.tool(output_schema=None)
    def plain_number() -> int:
        return 7

    @app.tool(output_schema={"type": "object", "properties": {"ok": {"type": "boolean"}}})
    def explicit() -> dict[str, bool]:
        return {"ok": True}

    return app


async def test_tools_list_shows_definitions(autojump_clock: Any) -> None:
    async with connect(build_app()) as (client, _):
        result = wire(await client.send_request("tools/list"))
    tools = {tool["name"]: tool for tool in result["tools"]}
    assert list(tools) == [
        "forecast",
        "add",
        "echo",
        "nothing",
        "names",
        "stats",
        "pair",
        "untyped",
        "plain_number",
        "explicit",
    ]
    assert tools["forecast"] == {
        "name": "forecast",
        "title": "Weather",
        "description": "Forecast the weather.",
        "inputSchema": {
            "type": "object",
            "properties": {
                "city": {"type": "string", "description": "Where."},
                "days": {"type": "integer", "description": "How many days.", "default": 2},
            },
            "required": ["city"],
        },
        "outputSchema": {
            "type": "object",
            "properties": {
                "city": {"type": "string"},
                "temperatures": {"type": "array", "items": {"type": "number"}},
            },
            "required": ["city", "temperatures"],
        },
        "annotations": {"readOnlyHint": True},
        "execution": {"taskSupport": "optional"},
        "icons": [{"src": "https://example.com/i.png", "mimeType": "image/png"}],
        "_meta": {"team": "sky"},
    }
    assert tools["add"]["outputSchema"] == {
        "type": "object",
        "properties": {"result": {"type": "integer"}},
        "required": ["result"],
    }
    assert "outputSchema" not in tools["echo"]
    assert "outputSchema" not in tools["nothing"]
    assert tools["nothing"]["description"] == "Nothing back"
    assert tools["nothing"]["inputSchema"] == {"type": "object", "properties": {}}
    assert "outputSchema" not in tools["untyped"]
    assert "outputSchema" not in tools["plain_number"]
    assert tools["explicit"]["outputSchema"]["properties"] == {"ok": {"type": "boolean"}}
    assert tools["stats"]["outputSchema"]["required"] == ["count", "mean"]


async def test_results_of_each_return_shape(autojump_clock: Any) -> None:
    async with connect(build_app()) as (client, _):
        result = await call_tool(client, "forecast", {"city": "Oslo", "days": 1})
        assert wire(result) == {
            "content": [{"type": "text", "text": '{"city": "Oslo", "temperatures": [20.0]}'}],
            "structuredContent": {"city": "Oslo", "temperatures": [20.0]},
        }
        result = await call_tool(client, "add", {"a": 2, "b": 3})
        assert wire(result) == {
            "content": [{"type": "text", "text": "5"}],
            "structuredContent": {"result": 5},
        }
        assert wire(await call_tool(client, "echo", {"text": "hi"})) == {
            "content": [{"type": "text", "text": "hi"}]
        }
        assert wire(await call_tool(client, "nothing")) == {"content": []}
        assert (await call_tool(client, "names")).structured_content == {"result": ["a", "b"]}
        result = await call_tool(client, "stats", {"values": [1, 3]})
        assert result.structured_content == {"count": 2, "mean": 2.0}
        result = await call_tool(client, "pair", {"p": {"left": 1, "right": 2}})
        assert result.structured_content == {"left": 2, "right": 1}
        result = await call_tool(client, "untyped", {"x": 1})
        assert wire(result) == {"content": [{"type": "text", "text": '{"x": 1}'}]}
        assert wire(await call_tool(client, "plain_number")) == {
            "content": [{"type": "text", "text": "7"}]
        }
        assert (await call_tool(client, "explicit")).structured_content == {"ok": True}


async def test_content_returns(autojump_clock: Any) -> None:
    app = Server("content")
    link = ResourceLink(uri="file:///a.txt", name="a")

    @app.tool()
    def blob() -> bytes:
        return b"\x00\x01"

    @app.tool()
    def picture() -> Image:
        return Image(b"PNG", "image/png")

    @app.tool()
    def mixed() -> list[Any]:
        return ["one", TextContent(text="two"), link, Audio(b"RIFF"), b"x"]

    @app.tool()
    def raw() -> CallToolResult:
        return CallToolResult(content=[], is_error=True)

    async with connect(app) as (client, _):
        result = await call_tool(client, "blob")
        (block,) = result.content
        assert isinstance(block, EmbeddedResource)
        assert wire(block.resource) == {
            "uri": "tool://blob/result",
            "blob": base64.b64encode(b"\x00\x01").decode(),
            "mimeType": "application/octet-stream",
        }
        (image,) = (await call_tool(client, "picture")).content
        assert image == ImageContent(data=base64.b64encode(b"PNG").decode(), mime_type="image/png")
        result = await call_tool(client, "mixed")
        assert [b.type for b in result.content] == [
            "text",
            "text",
            "resource_link",
            "audio",
            "resource",
        ]
        assert result.structured_content is None  # list[Any] of content: not structured
        assert wire(await call_tool(client, "raw")) == {"content": [], "isError": True}


@pytest.mark.parametrize("version", ["2024-11-05", "2025-03-26"])
async def test_older_clients_get_no_structured_content(autojump_clock: Any, version: str) -> None:
    async with connect(build_app(), version=version) as (client, _):
        listed = wire(await client.send_request("tools/list"))
        assert all("outputSchema" not in tool for tool in listed["tools"])
        result = await call_tool(client, "add", {"a": 2, "b": 3})
        assert wire(result) == {"content": [{"type": "text", "text": "5"}]}


async def test_invalid_arguments_are_a_tool_error_on_2025_11_25(autojump_clock: Any) -> None:
    async with connect(build_app(), version="2025-11-25") as (client, _):
        result = await call_tool(client, "add", {"a": 1, "b": "two"})
        assert result.is_error is True
        assert (
            text_of(result) == "Invalid arguments for tool 'add': b: expected an integer, "
            "got string"
        )
        result = await call_tool(client, "pair", {"p": {"left": 1}})
        assert result.is_error is True
        assert "p.right: required property missing" in text_of(result)
        result = await call_tool(client, "add", None)
        assert "a: required argument missing" in text_of(result)


@pytest.mark.parametrize("version", ["2024-11-05", "2025-03-26", "2025-06-18"])
async def test_invalid_arguments_are_32602_before_2025_11_25(
    autojump_clock: Any, version: str
) -> None:
    async with connect(build_app(), version=version) as (client, _):
        with pytest.raises(McpError) as info:
            await call_tool(client, "add", {"a": 1, "b": "two"})
    assert info.value.code == INVALID_PARAMS
    assert info.value.data == {"path": "b", "reason": "expected an integer, got string"}
    assert "Invalid arguments for tool 'add'" in info.value.message


async def test_unknown_tool_is_32602(autojump_clock: Any) -> None:
    async with connect(build_app()) as (client, _):
        with pytest.raises(McpError) as info:
            await call_tool(client, "nope")
    assert info.value.code == INVALID_PARAMS
    assert info.value.message == "Unknown tool: nope"


async def test_tool_errors(autojump_clock: Any, caplog: pytest.LogCaptureFixture) -> None:
    app = Server("errors")

    @app.tool()
    def refuse(reason: str) -> str:
        raise ToolError(f"cannot: {reason}")

    @app.tool()
    def crash() -> str:
        raise RuntimeError("secret database password in here")

    @app.tool()
    def protocol() -> str:
        raise McpError(-32042, "go elsewhere", {"url": "https://x"})

    @app.tool()
    async def grouped() -> str:
        async with trio.open_nursery() as nursery:

            async def fail() -> None:
                raise ToolError("from a child task")

            nursery.start_soon(fail)
        return "unreachable"

    @app.tool()
    def lies() -> int:
        return "not an int"  # type: ignore[return-value]

    async with connect(app) as (client, _):
        result = await call_tool(client, "refuse", {"reason": "no"})
        assert wire(result) == {
            "content": [{"type": "text", "text": "cannot: no"}],
            "isError": True,
        }
        with caplog.at_level(logging.ERROR, logger="trimcp.server"):
            result = await call_tool(client, "crash")
        assert result.is_error is True
        # The model sees what went wrong (the spec's intent), the log the traceback.
        assert text_of(result) == (
            "Tool 'crash' failed: RuntimeError: secret database password in here"
        )
        assert "Traceback" in caplog.text
        assert "secret database password" in caplog.text
        with pytest.raises(McpError) as info:
            await call_tool(client, "protocol")
        assert (info.value.code, info.value.data) == (-32042, {"url": "https://x"})
        result = await call_tool(client, "grouped")
        assert text_of(result) == "from a child task"
        result = await call_tool(client, "lies")
        assert result.is_error is True
        assert "does not match its return type" in caplog.text
        assert "does not match its return type" in text_of(result)


async def test_tool_error_details_can_be_masked(
    autojump_clock: Any, caplog: pytest.LogCaptureFixture
) -> None:
    app = Server("masked", mask_error_details=True)

    @app.tool()
    def crash() -> str:
        raise RuntimeError("secret database password in here")

    @app.tool()
    def bare() -> str:
        raise KeyError

    @app.tool()
    def refuse() -> str:
        raise ToolError("meant for the model")

    async with connect(app) as (client, _):
        with caplog.at_level(logging.ERROR, logger="trimcp.server"):
            result = await call_tool(client, "crash")
        assert result.is_error is True
        assert text_of(result) == "Tool 'crash' failed with an internal error"
        assert "secret database password" in caplog.text
        # ToolError is always the tool's own message to the model.
        assert text_of(await call_tool(client, "refuse")) == "meant for the model"
    app.mask_error_details = False
    async with connect(app) as (client, _):
        assert text_of(await call_tool(client, "bare")) == "Tool 'bare' failed: KeyError"


async def test_context_injection_and_progress(autojump_clock: Any) -> None:
    app = Server("ctx")
    seen: list[Any] = []

    @app.tool()
    async def by_annotation(n: int, context: Context) -> str:
        seen.append((context.request_id, context.client_info, context.protocol_version))
        for step in range(1, n + 1):
            await context.report_progress(step, n, f"step {step}")
        return "done"

    @app.tool()
    async def by_name(ctx) -> str:  # type: ignore[no-untyped-def]
        return type(ctx).__name__

    progress: list[tuple[float, float | None, str | None]] = []

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        progress.append((value, total, message))

    async with connect(app) as (client, _):
        listed = wire(await client.send_request("tools/list"))
        assert all(t["inputSchema"]["properties"].keys() <= {"n"} for t in listed["tools"])
        result = await client.send_request(
            "tools/call", {"name": "by_annotation", "arguments": {"n": 2}}, on_progress=on_progress
        )
        assert text_of(result) == "done"
        assert text_of(await call_tool(client, "by_name")) == "Context"
    (request_id, client_info, version) = seen[0]
    assert isinstance(request_id, int)
    assert client_info.name == "test-client"
    assert version == "2025-11-25"
    assert progress == [(1, 2, "step 1"), (2, 2, "step 2")]


async def test_cancelling_a_call_cancels_the_tool(autojump_clock: Any) -> None:
    app = Server("cancel")
    events: list[str] = []

    @app.tool()
    async def slow() -> str:
        events.append("started")
        try:
            await trio.sleep(100)
        finally:
            events.append("finally")
        return "late"

    async with connect(app) as (client, _):
        with trio.move_on_after(1):
            await call_tool(client, "slow")
        await trio.testing.wait_all_tasks_blocked()
        assert events == ["started", "finally"]


async def test_sync_tools_inline_and_in_a_thread() -> None:
    # No autojump clock: it would jump past the request timeout while the thread runs.
    app = Server("threads")
    main_thread = threading.get_ident()

    @app.tool()
    def inline() -> bool:
        return threading.get_ident() == main_thread

    @app.tool(run_sync_in_thread=True)
    def threaded() -> bool:
        return threading.get_ident() == main_thread

    with pytest.raises(TypeError, match="sync functions"):

        @app.tool(run_sync_in_thread=True)
        async def not_sync() -> None: ...

    async with connect(app) as (client, _):
        assert (await call_tool(client, "inline")).structured_content == {"result": True}
        assert (await call_tool(client, "threaded")).structured_content == {"result": False}


async def test_tools_change_at_runtime_and_sessions_are_told(autojump_clock: Any) -> None:
    app = Server("runtime")

    @app.tool()
    def first() -> str:
        return "first"

    assert first() == "first"  # the handle calls the function
    recorder = ScriptedClient()
    async with connect(app, recorder) as (client, _):

        async def names() -> list[str]:
            result = await client.send_request("tools/list")
            return [tool.name for tool in result.tools]

        def second() -> str:
            return "second"

        handle = app.add_tool(second, name="second")
        await trio.testing.wait_all_tasks_blocked()
        assert recorder.methods() == ["notifications/tools/list_changed"]
        assert await names() == ["first", "second"]

        handle.disable()
        handle.disable()  # no change, no notification
        await trio.testing.wait_all_tasks_blocked()
        assert await names() == ["first"]
        with pytest.raises(McpError) as info:
            await call_tool(client, "second")
        assert info.value.code == INVALID_PARAMS

        handle.enable()
        await trio.testing.wait_all_tasks_blocked()
        assert text_of(await call_tool(client, "second")) == "second"

        app.remove_tool("first")
        await trio.testing.wait_all_tasks_blocked()
        assert await names() == ["second"]
        assert recorder.methods() == ["notifications/tools/list_changed"] * 4
        assert app.get_tool("first") is None


def test_registration_errors() -> None:
    app = Server("bad")

    @app.tool()
    def taken() -> None: ...

    with pytest.raises(ValueError, match="already registered"):
        app.add_tool(taken.fn)
    with pytest.raises(ValueError, match="Invalid tool name"):
        app.add_tool(taken.fn, name="has space")
    with pytest.raises(KeyError):
        app.remove_tool("missing")


class _Shout:
    async def __call__(self, text: str) -> str:
        return text.upper()


async def test_every_function_shape_is_called_and_a_str_is_one_text_block(
    autojump_clock: Any,
) -> None:
    # How a tool is called is decided at registration (a coroutine function is awaited
    # directly); an async callable object, a sync function and a sync function returning
    # an awaitable are still called as before, and a str is one text block in both eras.
    app = Server("shapes")

    @app.tool()
    async def coroutine(text: str) -> str:
        return text

    @app.tool()
    def plain(text: str) -> str:
        return text * 2

    async def later(text: str) -> str:
        return f"later {text}"

    def deferred(text: str) -> Any:
        return later(text)

    app.add_tool(_Shout(), name="shout")
    app.add_tool(deferred, name="deferred")
    for version in ("2025-03-26", "2025-11-25"):
        async with connect(app, version=version) as (client, _):
            for name, text in [
                ("coroutine", "a"),
                ("plain", "aa"),
                ("shout", "A"),
                ("deferred", "later a"),
            ]:
                result = await call_tool(client, name, {"text": "a"})
                assert wire(result) == {"content": [{"type": "text", "text": text}]}
