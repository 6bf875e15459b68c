"""examples/everything_server.py: every fixture exactly as the conformance suite expects it
(tests/conformance/SCENARIOS.md, section 2), checked in memory with trimcp's client; then
its command line, over stdio and over Streamable HTTP (real processes, real clock)."""

from __future__ import annotations

import base64
import io
import signal
import subprocess
import sys
import wave
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
import trio

from tests.examples.helpers import EXAMPLES, load_example
from trimcp import serde
from trimcp.client import Client, connect_http, connect_memory, connect_stdio
from trimcp.session import RequestContext
from trimcp.types import (
    CallToolResult,
    CreateMessageRequestParams,
    CreateMessageResult,
    ElicitRequestFormParams,
    ElicitRequestParams,
    ElicitResult,
    LoggingMessageNotificationParams,
    PromptReference,
    Root,
    TextContent,
)

everything = load_example("everything_server")
SERVER_ARGV = [sys.executable, str(EXAMPLES / "everything_server.py")]
#: Bound of each real-process test (start, talk, stop).
PROCESS_BOUND = 60.0


class Peer:
    """The client side: canned answers to sampling and elicitation, and what arrived."""

    def __init__(self, elicit_action: str = "accept") -> None:
        self.elicit_action = elicit_action
        self.sampling: list[dict[str, Any]] = []
        self.elicitations: list[dict[str, Any]] = []
        self.logs: list[LoggingMessageNotificationParams] = []
        self.updated: list[str] = []
        self._changed = trio.Event()

    def _poke(self) -> None:
        self._changed.set()
        self._changed = trio.Event()

    async def wait_for(self, condition: Callable[[], bool]) -> None:
        with trio.fail_after(10):
            while not condition():
                await self._changed.wait()

    async def sample(
        self, ctx: RequestContext, params: CreateMessageRequestParams
    ) -> CreateMessageResult:
        self.sampling.append(serde.unstructure(params))
        return CreateMessageResult(
            role="assistant",
            content=TextContent(text="This is a test response from the client"),
            model="test-model",
            stop_reason="endTurn",
        )

    async def elicit(self, ctx: RequestContext, params: ElicitRequestParams) -> ElicitResult:
        assert isinstance(params, ElicitRequestFormParams)
        self.elicitations.append(serde.unstructure(params))
        if self.elicit_action != "accept":
            return ElicitResult(action=self.elicit_action)  # type: ignore[arg-type]
        names = set(params.requested_schema.properties)
        content: dict[str, Any] = {name: "x" for name in names}
        if names == {"username", "email"}:
            content = {"username": "testuser", "email": "test@example.com"}
        return ElicitResult(action="accept", content=content)

    def on_log(self, params: LoggingMessageNotificationParams) -> None:
        self.logs.append(params)
        self._poke()

    def on_updated(self, uri: str) -> None:
        self.updated.append(uri)
        self._poke()


@asynccontextmanager
async def client_for(peer: Peer) -> AsyncIterator[Client]:
    async with connect_memory(
        everything.app,
        sampling_handler=peer.sample,
        elicitation_handler=peer.elicit,
        on_log_message=peer.on_log,
        on_resource_updated=peer.on_updated,
    ) as client:
        yield client


def wire(result: CallToolResult) -> dict[str, Any]:
    data: dict[str, Any] = serde.unstructure(result)
    return data


def only_text(result: CallToolResult) -> str:
    [block] = result.content
    assert isinstance(block, TextContent)
    return block.text


async def test_capabilities_and_listings(autojump_clock: trio.abc.Clock) -> None:
    async with client_for(Peer()) as client:
        caps = serde.unstructure(client.server_capabilities)
        assert caps["resources"]["subscribe"] is True
        assert {"tools", "resources", "prompts", "logging", "completions"} <= set(caps)

        tools = {tool.name: serde.unstructure(tool) async for tool in client.iter_tools()}
        # The 2025 scenarios' 15 fixtures, the 14 diagnostics of the 2026 ones, and the
        # task fixtures (tests/tasks check those).
        assert len(tools) >= 29
        assert {name for name in tools if name.startswith("test_input_required_result_")} == {
            f"test_input_required_result_{kind}"
            for kind in (
                "elicitation",
                "sampling",
                "list_roots",
                "request_state",
                "multiple_inputs",
                "multi_round",
                "tampered_state",
                "capabilities",
            )
        }
        task_tools = {
            name
            for name, tool in tools.items()
            if (tool.get("execution") or {}).get("taskSupport") in ("optional", "required")
        }
        assert task_tools == {
            "slow_compute",
            "failing_job",
            "protocol_error_job",
            "confirm_delete",
            "multi_input",
            "test_tool_with_task",
        }
        assert caps["tasks"]["requests"]["tools"]["call"] == {}
        for tool in tools.values():
            assert tool["description"], tool
            assert tool["inputSchema"]["type"] == "object"
        assert tools["json_schema_2020_12_tool"]["inputSchema"] == everything.JSON_SCHEMA_2020_12
        assert tools["json_schema_2020_12_tool"]["description"] == (
            "Tool with JSON Schema 2020-12 features"
        )
        assert tools["test_sampling"]["inputSchema"]["required"] == ["prompt"]
        assert tools["test_elicitation"]["inputSchema"]["required"] == ["message"]

        resources = [serde.unstructure(r) async for r in client.iter_resources()]
        assert [(r["uri"], r["mimeType"]) for r in resources] == [
            ("test://static-text", "text/plain"),
            ("test://static-binary", "image/png"),
            ("test://watched-resource", "text/plain"),
            ("skill://release-notes/SKILL.md", "text/markdown"),
            ("skill://release-notes/references/STYLE.md", "text/markdown"),
        ]
        assert all(r["name"] and r["description"] for r in resources)
        templates = [t.uri_template async for t in client.iter_resource_templates()]
        assert templates == ["test://template/{id}/data"]

        prompts = {p.name: p async for p in client.iter_prompts()}
        assert set(prompts) == {
            "test_simple_prompt",
            "test_prompt_with_arguments",
            "test_prompt_with_embedded_resource",
            "test_prompt_with_image",
            "test_input_required_result_prompt",
        }
        assert all(p.description for p in prompts.values())
        args = prompts["test_prompt_with_arguments"].arguments or []
        assert [(a.name, a.required) for a in args] == [("arg1", True), ("arg2", True)]


async def test_content_tools_answer_exactly(autojump_clock: trio.abc.Clock) -> None:
    png = everything.PNG_BASE64
    async with client_for(Peer()) as client:
        assert wire(await client.call_tool("test_simple_text")) == {
            "content": [{"type": "text", "text": "This is a simple text response for testing."}]
        }
        assert wire(await client.call_tool("test_image_content", {})) == {
            "content": [{"type": "image", "data": png, "mimeType": "image/png"}]
        }
        [audio] = wire(await client.call_tool("test_audio_content", {}))["content"]
        assert audio["type"] == "audio"
        assert audio["mimeType"] == "audio/wav"
        with wave.open(io.BytesIO(base64.b64decode(audio["data"], validate=True))) as clip:
            assert clip.getnframes() > 0
        assert wire(await client.call_tool("test_embedded_resource", {})) == {
            "content": [
                {
                    "type": "resource",
                    "resource": {
                        "uri": "test://embedded-resource",
                        "mimeType": "text/plain",
                        "text": "This is an embedded resource content.",
                    },
                }
            ]
        }
        assert wire(await client.call_tool("test_multiple_content_types", {})) == {
            "content": [
                {"type": "text", "text": "Multiple content types test:"},
                {"type": "image", "data": png, "mimeType": "image/png"},
                {
                    "type": "resource",
                    "resource": {
                        "uri": "test://mixed-content-resource",
                        "mimeType": "application/json",
                        "text": '{"test":"data","value":123}',
                    },
                },
            ]
        }
        assert wire(await client.call_tool("test_error_handling", {})) == {
            "content": [
                {"type": "text", "text": "This tool intentionally returns an error for testing"}
            ],
            "isError": True,
        }
        assert base64.b64decode(png, validate=True).startswith(b"\x89PNG\r\n\x1a\n")


async def test_logging_and_progress(autojump_clock: trio.abc.Clock) -> None:
    peer = Peer()
    async with client_for(peer) as client:
        await client.set_logging_level("debug")
        result = await client.call_tool("test_tool_with_logging", {})
        assert only_text(result) == "Tool with logging executed successfully"
        await peer.wait_for(lambda: len(peer.logs) >= 3)
        assert [(log.level, log.data) for log in peer.logs] == [
            ("info", "Tool execution started"),
            ("info", "Tool processing data"),
            ("info", "Tool execution completed"),
        ]
        steps: list[tuple[float, float | None]] = []
        result = await client.call_tool(
            "test_tool_with_progress", {}, on_progress=lambda p, t, m: steps.append((p, t))
        )
        assert steps == [(0, 100), (50, 100), (100, 100)]
        assert only_text(result) == "Tool with progress executed successfully"
        # The level filters: nothing at info gets through "error".
        await client.set_logging_level("error")
        await client.call_tool("test_tool_with_logging", {})
        await client.ping()
        assert len(peer.logs) == 3


async def test_sampling_request_and_answer(autojump_clock: trio.abc.Clock) -> None:
    peer = Peer()
    async with client_for(peer) as client:
        result = await client.call_tool("test_sampling", {"prompt": "Test prompt for sampling"})
        assert only_text(result) == "LLM response: This is a test response from the client"
    assert peer.sampling == [
        {
            "messages": [
                {"role": "user", "content": {"type": "text", "text": "Test prompt for sampling"}}
            ],
            "maxTokens": 100,
        }
    ]


async def test_elicitation_requests_and_answers(autojump_clock: trio.abc.Clock) -> None:
    peer = Peer()
    async with client_for(peer) as client:
        contact = await client.call_tool(
            "test_elicitation", {"message": "Please provide your information"}
        )
        assert only_text(contact) == (
            'User response: action=accept, content={"email": "test@example.com", '
            '"username": "testuser"}'
        )
        defaults = await client.call_tool("test_elicitation_sep1034_defaults", {})
        assert only_text(defaults).startswith("Elicitation completed: action=accept, content=")
        enums = await client.call_tool("test_elicitation_sep1330_enums", {})
        assert only_text(enums).startswith("Elicitation completed: action=accept")
    first, second, third = peer.elicitations
    assert first == {
        "mode": "form",
        "message": "Please provide your information",
        "requestedSchema": {
            "type": "object",
            "properties": {
                "username": {"type": "string", "description": "User's response"},
                "email": {"type": "string", "description": "User's email address"},
            },
            "required": ["username", "email"],
        },
    }
    assert second["requestedSchema"] == everything.SEP1034_SCHEMA
    props = second["requestedSchema"]["properties"]
    assert {k: v["default"] for k, v in props.items()} == {
        "name": "John Doe",
        "age": 30,
        "score": 95.5,
        "status": "active",
        "verified": True,
    }
    assert props["status"]["default"] in props["status"]["enum"]
    assert third["requestedSchema"] == everything.SEP1330_SCHEMA
    enum_props = third["requestedSchema"]["properties"]
    assert "oneOf" not in enum_props["untitledSingle"]
    assert "enum" not in enum_props["titledSingle"]
    assert len(enum_props["legacyEnum"]["enum"]) == len(enum_props["legacyEnum"]["enumNames"])
    assert "anyOf" not in enum_props["untitledMulti"]["items"]
    assert "enum" not in enum_props["titledMulti"]["items"]
    assert third["requestedSchema"]["required"] == []


@pytest.mark.parametrize("action", ["decline", "cancel"])
async def test_elicitation_refused(action: str, autojump_clock: trio.abc.Clock) -> None:
    async with client_for(Peer(elicit_action=action)) as client:
        result = await client.call_tool("test_elicitation", {"message": "Who are you?"})
    assert only_text(result) == f"User response: action={action}, content=null"


async def test_other_tools(autojump_clock: trio.abc.Clock) -> None:
    async with client_for(Peer()) as client:
        hello = await client.call_tool(
            "json_schema_2020_12_tool", {"name": "Ann", "address": {"city": "Paris"}}
        )
        assert only_text(hello) == "Hello Ann from Paris"
        # In memory there is no SSE stream to close: the answer comes straight back.
        reconnect = await client.call_tool("test_reconnection", {})
        assert only_text(reconnect) == "Reconnection test completed successfully"


async def test_resources_and_subscription(autojump_clock: trio.abc.Clock) -> None:
    peer = Peer()
    async with client_for(peer) as client:

        async def read(uri: str) -> list[dict[str, Any]]:
            contents: list[dict[str, Any]] = serde.unstructure(await client.read_resource(uri))[
                "contents"
            ]
            return contents

        assert await read("test://static-text") == [
            {
                "uri": "test://static-text",
                "mimeType": "text/plain",
                "text": "This is the content of the static text resource.",
            }
        ]
        assert await read("test://static-binary") == [
            {"uri": "test://static-binary", "mimeType": "image/png", "blob": everything.PNG_BASE64}
        ]
        assert await read("test://template/123/data") == [
            {
                "uri": "test://template/123/data",
                "mimeType": "application/json",
                "text": '{"id":"123","templateTest":true,"data":"Data for ID: 123"}',
            }
        ]

        await client.subscribe_resource("test://watched-resource")
        await client.call_tool("update_watched_resource", {"text": "new text"})
        await peer.wait_for(lambda: bool(peer.updated))
        assert peer.updated == ["test://watched-resource"]
        [watched] = await read("test://watched-resource")
        assert watched["text"] == "new text"
        await client.unsubscribe_resource("test://watched-resource")
        await client.call_tool("update_watched_resource", {"text": "Watched resource content"})
        await client.ping()
        assert peer.updated == ["test://watched-resource"]


async def test_prompts_and_completion(autojump_clock: trio.abc.Clock) -> None:
    png = everything.PNG_BASE64
    async with client_for(Peer()) as client:

        async def messages(name: str, arguments: dict[str, str] | None = None) -> Any:
            return serde.unstructure(await client.get_prompt(name, arguments))["messages"]

        assert await messages("test_simple_prompt") == [
            {
                "role": "user",
                "content": {"type": "text", "text": "This is a simple prompt for testing."},
            }
        ]
        assert await messages(
            "test_prompt_with_arguments", {"arg1": "testValue1", "arg2": "testValue2"}
        ) == [
            {
                "role": "user",
                "content": {
                    "type": "text",
                    "text": "Prompt with arguments: arg1='testValue1', arg2='testValue2'",
                },
            }
        ]
        assert await messages(
            "test_prompt_with_embedded_resource", {"resourceUri": "test://example-resource"}
        ) == [
            {
                "role": "user",
                "content": {
                    "type": "resource",
                    "resource": {
                        "uri": "test://example-resource",
                        "mimeType": "text/plain",
                        "text": "Embedded resource content for testing.",
                    },
                },
            },
            {
                "role": "user",
                "content": {"type": "text", "text": "Please process the embedded resource above."},
            },
        ]
        assert await messages("test_prompt_with_image") == [
            {"role": "user", "content": {"type": "image", "data": png, "mimeType": "image/png"}},
            {
                "role": "user",
                "content": {"type": "text", "text": "Please analyze the image above."},
            },
        ]
        ref = PromptReference(name="test_prompt_with_arguments")
        completed = await client.complete(ref, "arg1", "test")
        assert completed.completion.values == ["test", "testing", "tested"]
        nothing = await client.complete(ref, "arg2", "x")
        assert nothing.completion.values == []


# --- the command line, as real processes ----------------------------------------------------


async def test_stdio_is_the_default_transport() -> None:
    with trio.fail_after(PROCESS_BOUND):
        async with connect_stdio(SERVER_ARGV) as client:
            assert client.server_info.name == "trimcp-everything-server"
            result = await client.call_tool("test_simple_text")
            assert only_text(result) == "This is a simple text response for testing."


async def read_line(stream: trio.abc.ReceiveStream) -> str:
    data = b""
    while not data.endswith(b"\n"):
        chunk = await stream.receive_some(1024)
        if not chunk:
            break
        data += chunk
    return data.decode().strip()


async def test_http_transport_serves_polling_progress_and_sampling(tmp_path: Path) -> None:
    stderr = tmp_path / "server.stderr"
    with stderr.open("wb") as sink:
        process = await trio.lowlevel.open_process(
            [*SERVER_ARGV, "--transport", "http", "--port", "0"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=sink,
        )
    assert process.stdout is not None
    try:
        with trio.fail_after(PROCESS_BOUND):
            url = await read_line(process.stdout)
            assert url.startswith("http://127.0.0.1:")
            assert url.endswith("/mcp")
            peer = Peer()
            async with connect_http(url, sampling_handler=peer.sample) as client:
                # The server ends this call's SSE stream before answering; trimcp's HTTP
                # client resumes with Last-Event-ID after the server's retry delay.
                polled = await client.call_tool("test_reconnection", {})
                assert only_text(polled) == "Reconnection test completed successfully"
                steps: list[float] = []
                await client.call_tool(
                    "test_tool_with_progress", {}, on_progress=lambda p, t, m: steps.append(p)
                )
                assert steps == [0, 50, 100]
                sampled = await client.call_tool("test_sampling", {"prompt": "hi"})
                assert only_text(sampled).startswith("LLM response: ")
            # SIGTERM: every session closes (bounded) and the process exits cleanly.
            process.send_signal(signal.SIGTERM)
            assert await process.wait() == 0
    finally:
        if process.returncode is None:
            process.kill()
            with trio.move_on_after(10):
                await process.wait()
        await process.stdout.aclose()
    log = stderr.read_text(errors="replace")
    assert "Traceback" not in log, log


async def test_the_2026_diagnostics_serve_sessions_too(autojump_clock: trio.abc.Clock) -> None:
    """The same handler bodies as the 2026 input_required scenarios, in a 2025 session:
    their questions are requests to the client, answered by its handlers."""
    peer = Peer()

    async with connect_memory(
        everything.app,
        sampling_handler=peer.sample,
        elicitation_handler=peer.elicit,
        roots=[Root(uri="file:///work", name="work")],
    ) as client:
        several = await client.call_tool("test_input_required_result_multiple_inputs")
        assert only_text(several) == (
            "Name: x; Greeting: This is a test response from the client; Roots: 1"
        )
        rounds = await client.call_tool("test_input_required_result_multi_round")
        assert only_text(rounds) == "Multi-round complete for x who likes x"
        prompt = await client.get_prompt("test_input_required_result_prompt")
        assert serde.unstructure(prompt.messages[0].content)["text"] == "Prompt with context: x"
        assert [e["message"] for e in peer.elicitations] == [
            "What is your name?",
            "Step 1: What is your name?",
            "Step 2: What is your favorite color?",
            "What context should the prompt use?",
        ]
