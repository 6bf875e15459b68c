"""Interop, 2026-07-28: trimcp's client in ``mode="auto"`` against the official SDK's
``MCPServer`` (PyPI ``mcp`` 2.3.0, tests/peers/sdk_modern_server.py) over stdio and
Streamable HTTP. The client probes with ``server/discover`` and speaks 2026-07-28; every
feature goes through the stateless path: tools, progress, per-request logging opt-in,
sampling/elicitation/roots through input_required, resources, templates, prompts,
completion, and ``subscriptions/listen``.

Real subprocesses, so the real clock: every wait is bounded.
"""

from __future__ import annotations

import functools
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
import trio

from trimcp.client import Client, Era, connect_http, connect_stdio
from trimcp.session import RequestContext
from trimcp.types import (
    CreateMessageRequestParams,
    CreateMessageResult,
    ElicitRequestParams,
    ElicitResult,
    LoggingMessageNotificationParams,
    PromptReference,
    ResourceTemplateReference,
    Root,
    TextContent,
    TextResourceContents,
)

PEER = Path(__file__).resolve().parent.parent / "peers" / "sdk_modern_server.py"
TEST_BOUND = 60.0


async def elicit(ctx: RequestContext, params: ElicitRequestParams) -> ElicitResult:
    return ElicitResult(action="accept", content={"name": "Ada", "age": 36})


async def sample(ctx: RequestContext, params: CreateMessageRequestParams) -> CreateMessageResult:
    assert params.system_prompt == "Answer briefly."
    return CreateMessageResult(role="assistant", content=TextContent(text="Paris"), model="m1")


@asynccontextmanager
async def sdk_http_url() -> AsyncIterator[str]:
    async with trio.open_nursery() as nursery:
        command = [sys.executable, str(PEER), "http"]
        run = functools.partial(trio.run_process, command, stdout=subprocess.PIPE, check=False)
        process = await nursery.start(run)
        assert process.stdout is not None
        line = b""
        with trio.fail_after(TEST_BOUND):
            while not line.endswith(b"\n"):
                chunk = await process.stdout.receive_some(64)
                assert chunk, "the SDK server exited before printing its port"
                line += chunk
        try:
            yield f"http://127.0.0.1:{int(line)}/mcp"
        finally:
            process.terminate()


@asynccontextmanager
async def connected(transport: str, **kwargs: Any) -> AsyncIterator[Client]:
    handlers: dict[str, Any] = {
        "elicitation_handler": elicit,
        "sampling_handler": sample,
        "roots": [Root(uri="file:///work", name="work")],
        **kwargs,
    }
    with trio.fail_after(TEST_BOUND):
        if transport == "stdio":
            async with connect_stdio([sys.executable, str(PEER)], **handlers) as client:
                yield client
        else:
            async with sdk_http_url() as url, connect_http(url, **handlers) as client:
                yield client


TRANSPORTS = pytest.mark.parametrize("transport", ["stdio", "http"])


@TRANSPORTS
async def test_auto_negotiates_2026_and_tools_progress_logging_work(transport: str) -> None:
    logs: list[LoggingMessageNotificationParams] = []
    async with connected(transport, on_log_message=logs.append) as client:
        assert client.era is Era.MODERN
        assert client.protocol_version == "2026-07-28"
        assert client.server_info.name == "sdk-modern-peer"
        assert client.instructions == "The SDK's 2026 peer."
        names = [tool.name async for tool in client.iter_tools()]
        assert names[:3] == ["add", "count", "log_levels"]

        added = await client.call_tool("add", {"a": 2, "b": 3})
        assert added.structured_content == {"sum": 5.0}

        updates: list[tuple[float, float | None, str | None]] = []
        counted = await client.call_tool(
            "count", {"steps": 3}, on_progress=lambda *update: updates.append(update)
        )
        assert counted.structured_content == {"result": "counted 3"}
        assert updates == [(1, 3, "step 1"), (2, 3, "step 2"), (3, 3, "step 3")]

        # No log level in _meta: the server must send no log messages.
        await client.call_tool("log_levels", {})
        assert logs == []
        await client.set_logging_level("warning")
        await client.call_tool("log_levels", {})
        assert [log.level for log in logs] == ["warning", "error"]
        await client.ping()


@TRANSPORTS
async def test_sampling_elicitation_and_roots_through_input_required(transport: str) -> None:
    async with connected(transport) as client:
        user = await client.call_tool("ask_user", {})
        assert user.structured_content == {"result": "accepted: Ada, 36"}
        model = await client.call_tool("ask_model", {"question": "Capital of France?"})
        assert model.structured_content == {"result": "m1 says: Paris"}
        roots = await client.call_tool("client_roots", {})
        assert roots.structured_content == {"result": ["file:///work"]}


@TRANSPORTS
async def test_resources_templates_prompts_and_completion(transport: str) -> None:
    async with connected(transport) as client:
        static = await client.read_resource("sdk://static")
        assert static.contents == [
            TextResourceContents(
                uri="sdk://static", text="static text from the SDK peer", mime_type="text/plain"
            )
        ]
        assert static.ttl_ms is not None
        templates = [t.uri_template async for t in client.iter_resource_templates()]
        assert templates == ["sdk://items/{item_id}"]
        apple = await client.read_resource("sdk://items/apple")
        assert isinstance(apple.contents[0], TextResourceContents)
        assert apple.contents[0].text == "A red fruit."
        prompt = await client.get_prompt("greet", {"name": "Bob", "style": "formal"})
        assert prompt.messages[0].content == TextContent(text="Write a formal greeting for Bob.")
        styles = await client.complete(PromptReference(name="greet"), "style", "f")
        assert styles.completion.values == ["formal", "friendly", "funny"]
        items = await client.complete(
            ResourceTemplateReference(uri="sdk://items/{item_id}"), "item_id", "ap"
        )
        assert items.completion.values == ["apple", "apricot"]


@TRANSPORTS
async def test_listen_delivers_list_changes_and_resource_updates(transport: str) -> None:
    async with connected(transport) as client:
        async with client.listen(
            tools_list_changed=True, resource_subscriptions=["sdk://static"]
        ) as subscription:
            assert subscription.acknowledged is not None
            assert subscription.acknowledged.tools_list_changed is True
            await client.call_tool("touch", {"uri": "sdk://static"})
            seen: set[tuple[str, str | None]] = set()
            with trio.fail_after(10):
                async for event in subscription:
                    seen.add((event.method, event.uri))
                    if len(seen) == 2:
                        break
        assert seen == {
            ("notifications/resources/updated", "sdk://static"),
            ("notifications/tools/list_changed", None),
        }
        # The subscription is closed; the client goes on.
        await client.call_tool("add", {"a": 1, "b": 1})
