"""Every message the protocol core produces validates against the peer's revision schema.

A client and a server session talk over a recording memory transport for each revision:
handshake, ping, a tool list and call (with progress), a cancelled request, an error, a
log notification. Each recorded message is then checked against the official JSON Schema
of that revision: the envelope as ``JSONRPCMessage``, requests and notifications as the
sender's request/notification union, results as the result type of their method.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from functools import cache
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import trio
import trio.testing

from tests.support import NullClient, init_params, make_server
from trimcp.errors import McpError
from trimcp.protocol.lifecycle import Role
from trimcp.session import RequestContext, open_session
from trimcp.session.transport import Outgoing
from trimcp.transports.memory import MemoryTransport, memory_transport_pair
from trimcp.types import (
    CallToolResult,
    ClientCapabilities,
    ListToolsResult,
    RootsCapability,
    ServerCapabilities,
    TextContent,
    Tool,
    ToolAnnotations,
    ToolsCapability,
)

SCHEMAS = Path(__file__).resolve().parent.parent / "data" / "schema"
REVISIONS = ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"]
RESULT_TYPES = {
    "initialize": "InitializeResult",
    "ping": "EmptyResult",
    "tools/list": "ListToolsResult",
    "tools/call": "CallToolResult",
}


@cache
def validator(revision: str, definition: str) -> jsonschema.protocols.Validator:
    schema = json.loads((SCHEMAS / revision / "schema.json").read_text())
    defs_key = "$defs" if "$defs" in schema else "definitions"
    root = {defs_key: schema[defs_key], "$ref": f"#/{defs_key}/{definition}"}
    cls = jsonschema.validators.validator_for(schema)
    return cls(root)


class Recorder:
    """Wraps a transport and keeps every message it sends, decoded."""

    def __init__(self, inner: MemoryTransport, sent: list[Any]) -> None:
        self.inner = inner
        self.sent = sent

    async def receive(self) -> bytes:
        return await self.inner.receive()

    async def send(self, messages: Sequence[Outgoing]) -> None:
        self.sent.extend(json.loads(message.data) for message in messages)
        await self.inner.send(messages)

    async def aclose(self) -> None:
        await self.inner.aclose()


def conformance_server() -> Any:
    server = make_server(
        capabilities=ServerCapabilities(tools=ToolsCapability(list_changed=True), logging={}),
        instructions="Be nice.",
    )
    tool = Tool(
        name="echo",
        description="Echo.",
        input_schema={"type": "object", "properties": {"text": {"type": "string"}}},
        annotations=ToolAnnotations(read_only_hint=True),
    )

    @server.request_handler("tools/list")
    async def list_tools(ctx: RequestContext) -> ListToolsResult:
        return ListToolsResult(tools=[tool])

    @server.request_handler("tools/call")
    async def call_tool(ctx: RequestContext) -> CallToolResult:
        if ctx.params.name == "fail":
            raise McpError(-32602, "Unknown tool: fail")
        if ctx.params.name == "hang":
            await trio.sleep_forever()
        await ctx.report_progress(1, 2, "half")
        assert ctx.session is not None
        await ctx.session.send_notification(
            "notifications/message", {"level": "info", "data": "called"}
        )
        return CallToolResult(content=[TextContent(text="hi")])

    return server


async def converse(revision: str) -> tuple[list[Any], list[Any]]:
    client_sent: list[Any] = []
    server_sent: list[Any] = []
    a, b = memory_transport_pair()
    client_transport = Recorder(a, client_sent)
    server_transport = Recorder(b, server_sent)
    caps = ClientCapabilities(roots=RootsCapability(list_changed=True))
    async with (
        open_session(server_transport, role=Role.SERVER, handler=conformance_server()) as server,
        open_session(client_transport, role=Role.CLIENT, handler=NullClient()) as client,
    ):
        await client.initialize(init_params(revision, caps))
        await client.ping()
        await server.ping()
        await client.send_request("tools/list")
        await client.send_request(
            "tools/call", {"name": "echo", "arguments": {"text": "x"}}, on_progress=lambda *_: None
        )
        with pytest.raises(McpError):
            await client.send_request("tools/call", {"name": "fail"})
        with trio.move_on_after(1):
            await client.send_request("tools/call", {"name": "hang"})
        await client.send_notification("notifications/roots/list_changed")
        await trio.testing.wait_all_tasks_blocked()
    return client_sent, server_sent


def check(revision: str, message: Any, sender: str, methods: dict[Any, str]) -> None:
    validator(revision, "JSONRPCMessage").validate(message)
    side = "Client" if sender == "client" else "Server"
    if "method" in message:
        kind = "Request" if "id" in message else "Notification"
        validator(revision, f"{side}{kind}").validate(message)
    elif "result" in message:
        method = methods[message["id"]]
        validator(revision, RESULT_TYPES[method]).validate(message["result"])


@pytest.mark.parametrize("revision", REVISIONS)
async def test_everything_sent_validates(autojump_clock: Any, revision: str) -> None:
    client_sent, server_sent = await converse(revision)
    client_methods = {m["id"]: m["method"] for m in client_sent if "method" in m and "id" in m}
    server_methods = {m["id"]: m["method"] for m in server_sent if "method" in m and "id" in m}
    for message in client_sent:
        check(revision, message, "client", server_methods)
    for message in server_sent:
        check(revision, message, "server", client_methods)
    sent_methods = {m.get("method") for m in client_sent + server_sent}
    assert {
        "initialize",
        "notifications/initialized",
        "ping",
        "tools/list",
        "tools/call",
        "notifications/progress",
        "notifications/message",
        "notifications/cancelled",
        "notifications/roots/list_changed",
    } <= sent_methods
    assert any("error" in m for m in server_sent)


@pytest.mark.parametrize("revision", REVISIONS)
def test_the_checks_can_fail(revision: str) -> None:
    with pytest.raises(jsonschema.ValidationError):
        validator(revision, "ListToolsResult").validate({"tools": [{"name": 5}]})
    with pytest.raises(jsonschema.ValidationError):
        check(revision, {"jsonrpc": "2.0", "method": "tools/call", "id": 1}, "client", {})
