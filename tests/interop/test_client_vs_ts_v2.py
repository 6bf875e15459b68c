"""Interop, 2026-07-28: trimcp's client in ``mode="auto"`` against a server built on the
official TypeScript SDK v2 (``@modelcontextprotocol/server`` 2.4.0 from npm, pinned with a
lock by tests/interop/ts_v2/setup.sh; the fixture is tests/interop/ts_v2/server.cjs),
over stdio and Streamable HTTP: tools, progress, per-request logging opt-in,
sampling/elicitation/roots through input_required, resources, templates, prompts,
completion, and (HTTP, where the fixture's notifier lives) ``subscriptions/listen``. The
same server also serves the 2025 era: ``mode="legacy"`` gets 2025-11-25 from it.

Real subprocesses, so the real clock: every wait is bounded.
"""

from __future__ import annotations

import functools
import subprocess
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest
import trio

from tests.interop.ts_v2.conftest import (  # the fixture: the tests live one level up
    node_argv,
    node_env,
    ts_v2_fixture,  # noqa: F401
)
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

TEST_BOUND = 60.0


def argv(ts_v2: dict[str, str], *extra: str) -> list[str]:
    return node_argv(ts_v2, "server.cjs", *extra)


def env(ts_v2: dict[str, str]) -> dict[str, str]:
    return node_env(ts_v2)


async def elicit(ctx: RequestContext, params: ElicitRequestParams) -> ElicitResult:
    return ElicitResult(action="accept", content={"name": "Ada"})


async def sample(ctx: RequestContext, params: CreateMessageRequestParams) -> CreateMessageResult:
    return CreateMessageResult(role="assistant", content=TextContent(text="Paris"), model="m1")


@asynccontextmanager
async def http_url(ts_v2: dict[str, str]) -> AsyncIterator[str]:
    async with trio.open_nursery() as nursery:
        run = functools.partial(
            trio.run_process,
            argv(ts_v2, "http"),
            stdout=subprocess.PIPE,
            env=env(ts_v2),
            check=False,
        )
        process = await nursery.start(run)
        assert process.stdout is not None
        line = b""
        with trio.fail_after(TEST_BOUND):
            while not line.endswith(b"\n"):
                chunk = await process.stdout.receive_some(64)
                assert chunk, "the TypeScript server exited before printing its port"
                line += chunk
        try:
            yield f"http://127.0.0.1:{int(line)}/mcp"
        finally:
            process.terminate()


@asynccontextmanager
async def connected(ts_v2: dict[str, str], transport: str, **kwargs: Any) -> AsyncIterator[Client]:
    handlers: dict[str, Any] = {
        "elicitation_handler": elicit,
        "sampling_handler": sample,
        "roots": [Root(uri="file:///work")],
        **kwargs,
    }
    with trio.fail_after(TEST_BOUND):
        if transport == "stdio":
            stderr: list[str] = []
            async with connect_stdio(
                argv(ts_v2), env=env(ts_v2), on_stderr=stderr.append, **handlers
            ) as client:
                yield client
            assert not [line for line in stderr if "Error" in line], stderr
        else:
            async with http_url(ts_v2) as url, connect_http(url, **handlers) as client:
                yield client


TRANSPORTS = pytest.mark.parametrize("transport", ["stdio", "http"])


@TRANSPORTS
async def test_every_feature_in_2026(ts_v2: dict[str, str], transport: str) -> None:
    logs: list[LoggingMessageNotificationParams] = []
    async with connected(ts_v2, transport, on_log_message=logs.append) as client:
        assert client.era is Era.MODERN
        assert client.protocol_version == "2026-07-28"
        assert client.server_info.name == "ts-v2-peer"
        assert client.instructions == "The TypeScript v2 peer."
        names = [tool.name async for tool in client.iter_tools()]
        assert names == [
            "add",
            "count",
            "log_levels",
            "ask_user",
            "ask_model",
            "client_roots",
            "touch",
        ]
        assert (await client.call_tool("add", {"a": 2, "b": 3})).content == [TextContent(text="5")]

        updates: list[tuple[float, float | None, str | None]] = []
        await client.call_tool("count", {"steps": 3}, on_progress=lambda *u: updates.append(u))
        assert updates == [(1, 3, "step 1"), (2, 3, "step 2"), (3, 3, "step 3")]

        await client.call_tool("log_levels", {})
        assert logs == []  # no level in _meta: no log messages
        await client.set_logging_level("warning")
        await client.call_tool("log_levels", {})
        assert [log.level for log in logs] == ["warning", "error"]

        user = await client.call_tool("ask_user", {})
        assert user.content == [TextContent(text="hello Ada")]
        model = await client.call_tool("ask_model", {"question": "Capital of France?"})
        assert model.content == [TextContent(text="m1 says: Paris")]
        roots = await client.call_tool("client_roots", {})
        assert roots.content == [TextContent(text="file:///work")]

        static = await client.read_resource("ts://static")
        assert static.contents == [
            TextResourceContents(uri="ts://static", text="static text from the TS peer")
        ]
        templates = [t.uri_template async for t in client.iter_resource_templates()]
        assert templates == ["ts://items/{id}"]
        apple = await client.read_resource("ts://items/apple")
        assert apple.contents == [TextResourceContents(uri="ts://items/apple", text="item apple")]
        prompt = await client.get_prompt("greet", {"name": "Bob", "style": "formal"})
        assert prompt.messages[0].content == TextContent(text="Write a formal greeting for Bob.")
        styles = await client.complete(PromptReference(name="greet"), "style", "f")
        assert styles.completion.values == ["formal", "friendly", "funny"]
        items = await client.complete(ResourceTemplateReference(uri="ts://items/{id}"), "id", "ap")
        assert items.completion.values == ["apple", "apricot"]
        await client.ping()


async def test_listen_over_http(ts_v2: dict[str, str]) -> None:
    async with (
        connected(ts_v2, "http") as client,
        client.listen(tools_list_changed=True) as subscription,
    ):
        assert subscription.acknowledged is not None
        assert subscription.acknowledged.tools_list_changed is True
        await client.call_tool("touch", {"uri": "ts://static"})
        with trio.fail_after(10):
            event = await subscription.__anext__()
        assert event.method == "notifications/tools/list_changed"


@TRANSPORTS
async def test_the_same_server_in_legacy_mode(ts_v2: dict[str, str], transport: str) -> None:
    async with connected(ts_v2, transport, mode="legacy") as client:
        assert client.era is Era.LEGACY
        assert client.protocol_version == "2025-11-25"
        assert (await client.call_tool("add", {"a": 1, "b": 1})).content == [TextContent(text="2")]
