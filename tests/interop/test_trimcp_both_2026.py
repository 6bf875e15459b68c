"""trimcp's client and trimcp's server in 2026-07-28 over Streamable HTTP (in process):
auto mode negotiates 2026, and every feature crosses the stateless path: tools, progress,
the per-request log level, ctx.elicit / ctx.sample / ctx.list_roots through
input_required, resources, templates, prompts, completion, listen, the response cache;
``mode="legacy"`` reaches the same server as a 2025 session.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import trio

import trimcp
from trimcp.client import Era, connect_http
from trimcp.session import RequestContext
from trimcp.transports.http_server import serve_http
from trimcp.types import (
    CreateMessageRequestParams,
    CreateMessageResult,
    ElicitRequestParams,
    ElicitResult,
    LoggingMessageNotificationParams,
    PromptReference,
    Root,
    TextContent,
    TextResourceContents,
)

app = trimcp.Server("both", version="1.0.0")


@app.tool()
async def count(steps: int, ctx: trimcp.Context) -> str:
    for step in range(1, steps + 1):
        await ctx.report_progress(step, steps)
    return f"counted {steps}"


@app.tool()
async def chat(question: str, ctx: trimcp.Context) -> str:
    await ctx.info(f"asked {question}")
    answer = await ctx.elicit(
        "Your name?", {"type": "object", "properties": {"name": {"type": "string"}}}
    )
    sampled = await ctx.sample(question, max_tokens=10)
    roots = await ctx.list_roots()
    name = answer.content["name"] if answer.content else "?"
    reply = sampled.content.text if isinstance(sampled.content, TextContent) else "?"
    return f"{name} / {reply} / {roots[0].uri}"


@app.resource("both://static", mime_type="text/plain")
async def static() -> str:
    return "static text"


@app.resource("both://items/{item}", mime_type="text/plain")
async def item(item: str) -> str:
    return f"item {item}"


@app.prompt()
def greet(name: str, style: str = "friendly") -> str:
    return f"Write a {style} greeting for {name}."


@app.complete_argument(argument="style", prompt="greet")
def styles(value: str) -> list[str]:
    return [s for s in ("formal", "friendly", "funny") if s.startswith(value)]


async def elicit(ctx: RequestContext, params: ElicitRequestParams) -> ElicitResult:
    return ElicitResult(action="accept", content={"name": "Ada"})


async def sample(ctx: RequestContext, params: CreateMessageRequestParams) -> CreateMessageResult:
    return CreateMessageResult(role="assistant", content=TextContent(text="Paris"), model="m")


@asynccontextmanager
async def served() -> AsyncIterator[str]:
    stop = trio.Event()
    async with trio.open_nursery() as nursery:
        port = await nursery.start(
            lambda task_status: serve_http(
                app, port=0, shutdown_trigger=stop.wait, task_status=task_status
            )
        )
        try:
            yield f"http://127.0.0.1:{port}/mcp"
        finally:
            stop.set()


async def test_every_feature_over_the_stateless_path() -> None:
    logs: list[LoggingMessageNotificationParams] = []
    with trio.fail_after(30):
        async with (
            served() as url,
            connect_http(
                url,
                elicitation_handler=elicit,
                sampling_handler=sample,
                roots=[Root(uri="file:///w")],
                on_log_message=logs.append,
            ) as client,
        ):
            assert client.era is Era.MODERN
            assert client.server_info.name == "both"
            updates: list[Any] = []
            counted = await client.call_tool(
                "count", {"steps": 2}, on_progress=lambda *update: updates.append(update)
            )
            assert counted.content == [TextContent(text="counted 2")]
            assert [u[0] for u in updates] == [1, 2]

            chat = await client.call_tool("chat", {"question": "capital?"})
            assert chat.content == [TextContent(text="Ada / Paris / file:///w")]
            assert logs == []  # no log level asked for
            await client.set_logging_level("info")
            await client.call_tool("chat", {"question": "capital?"})
            assert {str(log.data) for log in logs} == {"asked capital?"}

            static = await client.read_resource("both://static")
            assert static.contents == [
                TextResourceContents(
                    uri="both://static", text="static text", mime_type="text/plain"
                )
            ]
            assert [t.uri_template async for t in client.iter_resource_templates()] == [
                "both://items/{item}"
            ]
            got = await client.read_resource("both://items/7")
            assert isinstance(got.contents[0], TextResourceContents)
            assert got.contents[0].text == "item 7"
            prompt = await client.get_prompt("greet", {"name": "Bob"})
            assert prompt.messages[0].content == TextContent(
                text="Write a friendly greeting for Bob."
            )
            done = await client.complete(PromptReference(name="greet"), "style", "f")
            assert done.completion.values == ["formal", "friendly", "funny"]

            async with client.listen(tools_list_changed=True) as subscription:
                assert subscription.acknowledged is not None

                @app.tool()
                def added() -> str:
                    return "new"

                with trio.fail_after(10):
                    event = await subscription.__anext__()
                assert event.method == "notifications/tools/list_changed"
                app.remove_tool("added")


async def test_legacy_mode_reaches_the_same_server() -> None:
    with trio.fail_after(30):
        async with served() as url, connect_http(url, mode="legacy") as client:
            assert client.era is Era.LEGACY
            assert client.protocol_version == "2025-11-25"
            counted = await client.call_tool("count", {"steps": 1})
            assert counted.content == [TextContent(text="counted 1")]
