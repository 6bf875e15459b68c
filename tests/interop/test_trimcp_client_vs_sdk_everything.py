"""Interop: trimcp's ``Client`` drives the official SDK's everything server
(tests/peers/sdk_everything_server.py, an ``MCPServer``) over stdio through every feature:
structured output, progress, tool errors, logging levels, sampling, elicitation (accept and
decline), roots (list and change), resources, templates, subscriptions, prompts,
completion and ping.

A real subprocess, so the real clock: every test is bounded by ``TEST_BOUND`` and every
wait for a notification by ``NOTIFY_WAIT``.
"""

from __future__ import annotations

import base64
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, Unpack

import trio

from trimcp.client import Client, ClientKwargs, connect_stdio
from trimcp.session import RequestContext
from trimcp.types import (
    BlobResourceContents,
    CreateMessageRequestParams,
    CreateMessageResult,
    ElicitRequestFormParams,
    ElicitRequestParams,
    ElicitResult,
    LoggingMessageNotificationParams,
    PromptReference,
    ResourceTemplateReference,
    Root,
    TextContent,
    TextResourceContents,
)

SERVER = [
    sys.executable,
    str(Path(__file__).resolve().parents[1] / "peers" / "sdk_everything_server.py"),
]
TEST_BOUND = 60.0
NOTIFY_WAIT = 10.0


def text(result: Any) -> str:
    return "".join(block.text for block in result.content if isinstance(block, TextContent))


class Inbox:
    """Notifications the client received, with a bounded wait for the next ones."""

    def __init__(self) -> None:
        self.logs: list[LoggingMessageNotificationParams] = []
        self.updated: list[str] = []
        self._changed = trio.Event()

    def _poke(self) -> None:
        self._changed.set()
        self._changed = trio.Event()

    def on_log(self, params: LoggingMessageNotificationParams) -> None:
        self.logs.append(params)
        self._poke()

    def on_updated(self, uri: str) -> None:
        self.updated.append(uri)
        self._poke()

    async def wait_for(self, condition: Callable[[], bool]) -> None:
        with trio.fail_after(NOTIFY_WAIT):
            while not condition():
                await self._changed.wait()


@asynccontextmanager
async def connect(**kwargs: Unpack[ClientKwargs]) -> AsyncIterator[Client]:
    stderr: list[str] = []
    # The session era; the same server in 2026-07-28 is test_client_vs_sdk_2026.py's.
    kwargs.setdefault("mode", "legacy")
    with trio.fail_after(TEST_BOUND):
        async with connect_stdio(SERVER, on_stderr=stderr.append, **kwargs) as client:
            yield client
    assert not [line for line in stderr if "Traceback" in line], stderr


async def test_handshake_tools_progress_errors_and_logging() -> None:
    inbox = Inbox()
    async with connect(on_log_message=inbox.on_log) as client:
        assert client.server_info.name == "sdk-everything-peer"
        assert client.server_info.version == "2.0.0"
        assert client.protocol_version == "2025-11-25"
        assert client.instructions == "The SDK's everything peer."
        caps = client.server_capabilities
        assert caps.logging is not None
        assert caps.completions is not None
        assert caps.resources is not None
        assert caps.resources.subscribe is True
        await client.ping()

        tools = {tool.name: tool async for tool in client.iter_tools()}
        assert set(tools) == {
            "add",
            "count",
            "ask_model",
            "ask_user",
            "client_roots",
            "roots_changes",
            "log_levels",
            "touch",
            "fail",
        }
        assert tools["add"].output_schema is not None

        # Structured output, validated by the client against the listed output schema.
        added = await client.call_tool("add", {"a": 2, "b": 3.5})
        assert added.structured_content == {"sum": 5.5}
        assert not added.is_error

        steps: list[tuple[float, float | None, str | None]] = []
        counted = await client.call_tool(
            "count", {"steps": 3}, on_progress=lambda p, t, m: steps.append((p, t, m))
        )
        assert text(counted) == "counted 3"
        assert steps == [(1, 3, "step 1"), (2, 3, "step 2"), (3, 3, "step 3")]

        failed = await client.call_tool("fail")
        assert failed.is_error
        assert "this tool always fails" in text(failed)

        # Every level before logging/setLevel; only warning and up after it.
        all_levels = await client.call_tool("log_levels")
        assert all_levels.structured_content == {"result": 4}
        await inbox.wait_for(lambda: len(inbox.logs) >= 4)
        await client.set_logging_level("warning")
        filtered = await client.call_tool("log_levels")
        assert filtered.structured_content == {"result": 2}
        await inbox.wait_for(lambda: len(inbox.logs) >= 6)
        assert [log.level for log in inbox.logs] == [
            "debug",
            "info",
            "warning",
            "error",
            "warning",
            "error",
        ]
        assert inbox.logs[0].logger == "sdk-peer"
        assert inbox.logs[0].data == {"level": "debug", "n": 0}


async def test_sampling_elicitation_and_roots() -> None:
    sampled: list[CreateMessageRequestParams] = []
    answers = iter(
        [
            ElicitResult(action="accept", content={"name": "Ada", "age": 36, "subscribe": True}),
            ElicitResult(action="decline"),
        ]
    )
    forms: list[ElicitRequestFormParams] = []

    async def model(ctx: RequestContext, params: CreateMessageRequestParams) -> CreateMessageResult:
        sampled.append(params)
        return CreateMessageResult(
            role="assistant",
            content=TextContent(text="forty-two"),
            model="toy-model",
            stop_reason="endTurn",
        )

    async def user(ctx: RequestContext, params: ElicitRequestParams) -> ElicitResult:
        assert isinstance(params, ElicitRequestFormParams)
        forms.append(params)
        return next(answers)

    roots = [Root(uri="file:///work/project", name="project")]
    async with connect(sampling_handler=model, elicitation_handler=user, roots=roots) as client:
        answer = await client.call_tool("ask_model", {"question": "What is six times seven?"})
        assert text(answer) == "toy-model says: forty-two"
        [request] = sampled
        assert request.max_tokens == 64
        assert request.system_prompt == "Answer briefly."
        assert request.messages[0].content == TextContent(text="What is six times seven?")

        accepted = await client.call_tool("ask_user")
        assert text(accepted) == "accepted: Ada, 36, subscribe=True"
        declined = await client.call_tool("ask_user")
        assert text(declined) == "decline"
        schema = forms[0].requested_schema
        assert set(schema.properties) == {"name", "age", "subscribe"}
        assert schema.required == ["name"]

        listed = await client.call_tool("client_roots")
        assert listed.structured_content == {"result": ["file:///work/project"]}
        await client.set_roots([Root(uri="file:///work/other", name="other")])
        # Notifications and requests travel in order on stdio: the server saw the change
        # before this call, and answers roots/list with the new roots.
        assert (await client.call_tool("roots_changes")).structured_content == {"result": 1}
        relisted = await client.call_tool("client_roots")
        assert relisted.structured_content == {"result": ["file:///work/other"]}


async def test_resources_templates_and_subscriptions() -> None:
    inbox = Inbox()
    async with connect(on_resource_updated=inbox.on_updated) as client:
        resources = {str(r.uri): r async for r in client.iter_resources()}
        assert set(resources) == {"sdk://static", "sdk://logo"}
        assert resources["sdk://logo"].mime_type == "image/png"
        templates = [t async for t in client.iter_resource_templates()]
        assert [t.uri_template for t in templates] == ["sdk://items/{item_id}"]

        [static] = (await client.read_resource("sdk://static")).contents
        assert isinstance(static, TextResourceContents)
        assert static.text == "static text from the SDK peer"
        [logo] = (await client.read_resource("sdk://logo")).contents
        assert isinstance(logo, BlobResourceContents)
        assert base64.b64decode(logo.blob).startswith(b"\x89PNG")
        [item] = (await client.read_resource("sdk://items/apple")).contents
        assert isinstance(item, TextResourceContents)
        assert item.text == "A red fruit."

        await client.subscribe_resource("sdk://static")
        touched = await client.call_tool("touch", {"uri": "sdk://static"})
        assert touched.structured_content == {"result": True}
        await inbox.wait_for(lambda: inbox.updated == ["sdk://static"])
        await client.unsubscribe_resource("sdk://static")
        untouched = await client.call_tool("touch", {"uri": "sdk://static"})
        assert untouched.structured_content == {"result": False}


async def test_prompts_completion_and_ping() -> None:
    async with connect() as client:
        prompts = {p.name: p async for p in client.iter_prompts()}
        assert set(prompts) == {"greet"}
        arguments = {a.name: a.required for a in prompts["greet"].arguments or []}
        assert arguments == {"name": True, "style": False}
        got = await client.get_prompt("greet", {"name": "Ada", "style": "formal"})
        assert got.messages[0].role == "user"
        assert got.messages[0].content == TextContent(text="Write a formal greeting for Ada.")

        styles = await client.complete(PromptReference(name="greet"), "style", "f")
        assert styles.completion.values == ["formal", "friendly", "funny"]
        items = await client.complete(
            ResourceTemplateReference(uri="sdk://items/{item_id}"), "item_id", "ap"
        )
        assert items.completion.values == ["apple", "apricot"]
        assert items.completion.has_more is False
        await client.ping()
