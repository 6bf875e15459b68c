"""The Streamable HTTP client in 2026-07-28: headers on every POST (version, method, name,
x-mcp-header parameters with Base64 where needed), no session, tools with invalid
annotations left out, cancellation by closing the stream, fallback to a 2025 server."""

from __future__ import annotations

import base64
from typing import Any

import pytest
import trio

from tests.http_client.fakeserver import McpApp, Reply, Request, fake_server
from trimcp.client import Era, connect_transport
from trimcp.protocol.modern import encode_header_value as encode_value
from trimcp.protocol.modern import header_parameters, parameter_headers
from trimcp.transports.http_client import open_http_client_transport

V2026 = "2026-07-28"
TOOLS = [
    {
        "name": "sql",
        "inputSchema": {
            "type": "object",
            "properties": {
                "region": {"type": "string", "x-mcp-header": "Region"},
                "priority": {"type": "integer", "x-mcp-header": "Priority"},
                "verbose": {"type": "boolean", "x-mcp-header": "Verbose"},
                "where": {
                    "type": "object",
                    "properties": {"zone": {"type": "string", "x-mcp-header": "Zone"}},
                },
                "query": {"type": "string"},
            },
        },
    },
    {
        "name": "bad",
        "inputSchema": {
            "type": "object",
            "properties": {"score": {"type": "number", "x-mcp-header": "Score"}},
        },
    },
    {"name": "slow", "inputSchema": {"type": "object"}},
    {"name": "über tool", "inputSchema": {"type": "object"}},
]


class ModernApp:
    """A 2026 server: discover, tools, and a slow tool that streams until dropped."""

    def __init__(self) -> None:
        self.slow_started = trio.Event()
        self.slow_ended = trio.Event()

    async def __call__(self, request: Request, reply: Reply) -> None:
        if request.method != "POST":
            await reply.status(405)
            return
        body = request.json()
        method, rid = body.get("method"), body.get("id")
        if rid is None:
            await reply.status(202)
            return
        if method == "server/discover":
            await reply.json(
                {
                    "jsonrpc": "2.0",
                    "id": rid,
                    "result": {
                        "resultType": "complete",
                        "supportedVersions": [V2026],
                        "capabilities": {"tools": {}, "resources": {}},
                        "_meta": {
                            "io.modelcontextprotocol/serverInfo": {"name": "m", "version": "2"}
                        },
                    },
                }
            )
        elif method == "tools/list":
            await reply.json(
                {
                    "jsonrpc": "2.0",
                    "id": rid,
                    "result": {
                        "resultType": "complete",
                        "tools": TOOLS,
                        "ttlMs": 0,
                        "cacheScope": "private",
                    },
                }
            )
        elif method == "tools/call" and body["params"]["name"] == "slow":
            await reply.start_sse()
            self.slow_started.set()
            try:
                await reply.event(
                    {
                        "jsonrpc": "2.0",
                        "method": "notifications/progress",
                        "params": {"progressToken": 1, "progress": 1},
                    }
                )
                while True:  # keep-alives: a write is how the server notices a hang-up
                    await trio.sleep(1)
                    await reply.body(b": keep-alive\n\n")
            finally:
                self.slow_ended.set()
        elif method == "tools/call":
            await reply.json(
                {"jsonrpc": "2.0", "id": rid, "result": {"resultType": "complete", "content": []}}
            )
        elif method == "resources/read":
            await reply.json(
                {
                    "jsonrpc": "2.0",
                    "id": rid,
                    "result": {
                        "resultType": "complete",
                        "contents": [],
                        "ttlMs": 0,
                        "cacheScope": "public",
                    },
                }
            )
        else:
            await reply.json(
                {
                    "jsonrpc": "2.0",
                    "id": rid,
                    "error": {"code": -32601, "message": "Method not found"},
                },
                status=404,
            )


def decoded(value: str) -> str:
    assert value.startswith("=?base64?")
    assert value.endswith("?=")
    return base64.b64decode(value[9:-2]).decode("utf-8")


async def test_2026_requests_carry_the_headers_and_no_session(autojump_clock: Any) -> None:
    app = ModernApp()
    async with (
        fake_server(app) as server,
        open_http_client_transport(server.url) as transport,
        connect_transport(transport) as client,
    ):
        assert client.era is Era.MODERN
        assert client.server_info.name == "m"
        names = [tool.name for tool in (await client.list_tools()).tools]
        assert names == ["sql", "slow", "über tool"]  # "bad" left out (number header)
        await client.call_tool(
            "sql",
            {
                "region": "us-west1",
                "priority": 42,
                "verbose": None,
                "where": {"zone": " z "},
                "query": "SELECT 1",
            },
        )
        await client.call_tool("über tool", {})
        await client.read_resource("file:///a b.txt")
        assert transport.session_id is None
    for request in server.requests:
        assert request.method == "POST"
        assert request.headers["mcp-protocol-version"] == V2026
        assert request.headers["mcp-method"] == request.rpc_method
        assert "mcp-session-id" not in request.headers
    sql, uber = server.of("tools/call")
    assert sql.headers["mcp-name"] == "sql"
    assert sql.headers["mcp-param-region"] == "us-west1"
    assert sql.headers["mcp-param-priority"] == "42"
    assert "mcp-param-verbose" not in sql.headers  # null: omitted
    assert decoded(sql.headers["mcp-param-zone"]) == " z "
    assert not any(name.endswith("query") for name in sql.headers)
    assert decoded(uber.headers["mcp-name"]) == "über tool"
    assert server.of("resources/read")[0].headers["mcp-name"] == "file:///a b.txt"
    assert server.of("GET") == []
    assert server.of("DELETE") == []


async def test_cancelling_a_2026_call_closes_its_stream_without_a_notice(
    autojump_clock: Any,
) -> None:
    app = ModernApp()
    async with (
        fake_server(app) as server,
        open_http_client_transport(server.url) as transport,
        connect_transport(transport) as client,
    ):
        with trio.move_on_after(5) as scope:
            await client.call_tool("slow", {}, on_progress=lambda *_: None)
        assert scope.cancelled_caught
        with trio.fail_after(5):
            await app.slow_ended.wait()  # the server saw the disconnect
    assert server.of("notifications/cancelled") == []


async def test_auto_falls_back_to_initialize_over_http(autojump_clock: Any) -> None:
    app = McpApp()  # a 2025 server: no session id on discover -> 400
    async with (
        fake_server(app) as server,
        open_http_client_transport(server.url) as transport,
        connect_transport(transport) as client,
    ):
        assert client.era is Era.LEGACY
        assert client.protocol_version == "2025-11-25"
        await client.list_tools()
    assert [r.rpc_method for r in server.requests if r.method == "POST"][:2] == [
        "server/discover",
        "initialize",
    ]


def test_value_encoding_follows_the_spec_examples() -> None:
    assert encode_value("us-west1") == "us-west1"
    assert encode_value("us west 1") == "us west 1"
    assert encode_value("Hello, 世界") == "=?base64?SGVsbG8sIOS4lueVjA==?="
    assert encode_value(" padded ") == "=?base64?IHBhZGRlZCA=?="
    assert encode_value("line1\nline2") == "=?base64?bGluZTEKbGluZTI=?="
    assert encode_value("=?base64?literal?=") == "=?base64?PT9iYXNlNjQ/bGl0ZXJhbD89?="
    assert encode_value("\tindented") == "=?base64?CWluZGVudGVk?="
    assert encode_value("") == "=?base64??="


@pytest.mark.parametrize(
    ("properties", "reason"),
    [
        ({"v": {"type": "string", "x-mcp-header": ""}}, "non-empty header token"),
        ({"v": {"type": "object", "x-mcp-header": "V"}}, "needs type"),
        ({"v": {"type": "array", "x-mcp-header": "V"}}, "needs type"),
        ({"v": {"type": "null", "x-mcp-header": "V"}}, "needs type"),
        ({"v": {"type": "number", "x-mcp-header": "V"}}, "needs type"),
        (
            {
                "a": {"type": "string", "x-mcp-header": "R"},
                "b": {"type": "string", "x-mcp-header": "R"},
            },
            "twice",
        ),
        (
            {
                "a": {"type": "string", "x-mcp-header": "MyField"},
                "b": {"type": "string", "x-mcp-header": "myfield"},
            },
            "twice",
        ),
        ({"v": {"type": "string", "x-mcp-header": "My Region"}}, "header token"),
        ({"v": {"type": "string", "x-mcp-header": "Region:Primary"}}, "header token"),
        ({"v": {"type": "string", "x-mcp-header": "Région"}}, "header token"),
        ({"v": {"type": "string", "x-mcp-header": "Region\t1"}}, "header token"),
        (
            {"v": {"type": "array", "items": {"type": "string", "x-mcp-header": "I"}}},
            "not reachable",
        ),
        ({"v": {"anyOf": [{"type": "string", "x-mcp-header": "A"}]}}, "not reachable"),
    ],
)
def test_invalid_annotations_are_refused(properties: dict[str, Any], reason: str) -> None:
    with pytest.raises(ValueError, match=reason):
        header_parameters({"type": "object", "properties": properties})


def test_param_headers_follow_nested_paths_and_types() -> None:
    params = header_parameters(
        {
            "type": "object",
            "properties": {
                "a": {
                    "type": "object",
                    "properties": {"b": {"type": "integer", "x-mcp-header": "B"}},
                },
                "t": {"type": "boolean", "x-mcp-header": "T"},
            },
        }
    )
    assert params == {"b": ("a", "b"), "t": ("t",)}
    assert parameter_headers({"a": {"b": 7}, "t": False}, params) == {
        "Mcp-Param-b": "7",
        "Mcp-Param-t": "false",
    }
    assert parameter_headers({"a": {"b": None}}, params) == {}
    assert parameter_headers(None, params) == {}


class ChangingSchemaApp(ModernApp):
    """tools/list gains an x-mcp-header annotation after the first listing; a call
    without the header is refused with HeaderMismatch, as a 2026 server must."""

    def __init__(self) -> None:
        super().__init__()
        self.listings = 0

    async def __call__(self, request: Request, reply: Reply) -> None:
        body = request.json() if request.method == "POST" else {}
        method, rid = body.get("method"), body.get("id")
        if method == "tools/list":
            self.listings += 1
            region: dict[str, Any] = {"type": "string"}
            if self.listings > 1:
                region["x-mcp-header"] = "Region"
            await reply.json(
                {
                    "jsonrpc": "2.0",
                    "id": rid,
                    "result": {
                        "resultType": "complete",
                        "ttlMs": 60_000,
                        "tools": [
                            {
                                "name": "sql",
                                "inputSchema": {"type": "object", "properties": {"region": region}},
                            }
                        ],
                    },
                }
            )
        elif method == "tools/call" and "mcp-param-region" not in request.headers:
            await reply.json(
                {
                    "jsonrpc": "2.0",
                    "id": rid,
                    "error": {
                        "code": -32020,
                        "message": "Header mismatch: Mcp-Param-Region is missing",
                    },
                },
                status=400,
            )
        else:
            await super().__call__(request, reply)


async def test_a_header_mismatch_relists_the_tools_and_retries_once(autojump_clock: Any) -> None:
    app = ChangingSchemaApp()
    async with (
        fake_server(app) as server,
        open_http_client_transport(server.url) as transport,
        connect_transport(transport) as client,
    ):
        await client.list_tools()  # cached for a minute, without the annotation
        await client.call_tool("sql", {"region": "eu"})
    first, retry = server.of("tools/call")
    assert "mcp-param-region" not in first.headers
    assert retry.headers["mcp-param-region"] == "eu"
    assert app.listings == 2


class DroppingListenApp(ModernApp):
    async def __call__(self, request: Request, reply: Reply) -> None:
        body = request.json() if request.method == "POST" else {}
        if body.get("method") != "subscriptions/listen":
            await super().__call__(request, reply)
            return
        sid = body["id"]
        await reply.start_sse()
        await reply.event(
            {
                "jsonrpc": "2.0",
                "method": "notifications/subscriptions/acknowledged",
                "params": {
                    "_meta": {"io.modelcontextprotocol/subscriptionId": sid},
                    "notifications": {"toolsListChanged": True},
                },
            }
        )
        await reply.event(
            {
                "jsonrpc": "2.0",
                "method": "notifications/tools/list_changed",
                "params": {"_meta": {"io.modelcontextprotocol/subscriptionId": sid}},
            }
        )
        reply.drop()  # the connection goes away without the closing answer


async def test_a_listen_stream_that_drops_is_reported(autojump_clock: Any) -> None:
    from trimcp.client import Subscription, SubscriptionLost

    seen: list[str] = []

    async def read_all(sub: Subscription) -> None:
        async for event in sub:
            seen.append(event.method)

    async with (
        fake_server(DroppingListenApp()) as server,
        open_http_client_transport(server.url) as transport,
        connect_transport(transport) as client,
        client.listen(tools_list_changed=True) as subscription,
    ):
        with pytest.raises(SubscriptionLost, match="ended without an answer"):
            await read_all(subscription)
        # The client goes on after losing the subscription.
        await client.call_tool("sql", {"region": "x"})
    assert seen == ["notifications/tools/list_changed"]
