"""The 2024-11-05 HTTP+SSE transport: fallback from Streamable HTTP, and used directly."""

from __future__ import annotations

import json
from typing import Any

import pytest
import trio

from tests.http_client.fakeserver import Reply, Request, fake_server, init_result
from tests.http_client.helpers import http_session
from tests.support import NullClient, init_params
from trimcp.errors import (
    CONNECTION_CLOSED,
    INTERNAL_ERROR,
    MADE_HERE,
    McpError,
    SessionClosed,
    made_here,
)
from trimcp.protocol.lifecycle import Role
from trimcp.session import open_session
from trimcp.transports.http_client import (
    HttpClientError,
    HttpStatusError,
    open_legacy_sse_client_transport,
)


class LegacyApp:
    """An HTTP+SSE server: GET opens the stream (endpoint event first), POSTs to the
    endpoint get 202 and their answers go out on the stream. POST to the stream URL: 405."""

    def __init__(self, endpoint: str = "/messages?session_id=abc", *, post_status: int = 202):
        self.endpoint = endpoint
        self.post_status = post_status
        self.stream: Reply | None = None
        self.lock = trio.Lock()
        self.end_stream = trio.Event()

    async def __call__(self, request: Request, reply: Reply) -> None:
        if request.method == "GET":
            await reply.start_sse()
            if self.endpoint:
                await reply.event(self.endpoint, event="endpoint")
            self.stream = reply
            await self.end_stream.wait()
            return
        if not request.target.startswith("/messages"):
            await reply.status(405)
            return
        if self.post_status != 202:
            await reply.status(self.post_status, b"nope")
            return
        await reply.status(202)
        message = request.json()
        if "id" not in message or "method" not in message:
            return
        answer = self.answer(message)
        if answer is None:
            return
        assert self.stream is not None
        async with self.lock:
            await self.stream.event(json.dumps(answer), event="message")

    def answer(self, message: dict[str, Any]) -> dict[str, Any] | None:
        method = message["method"]
        if method == "initialize":
            value = init_result("2024-11-05")
        elif method == "tools/list":
            value = {"tools": [{"name": "old", "inputSchema": {"type": "object"}}]}
        else:
            value = {}
        return {"jsonrpc": "2.0", "id": message["id"], "result": value}


async def test_fallback_to_http_sse(autojump_clock: Any) -> None:
    app = LegacyApp()
    async with (
        fake_server(app) as server,
        http_session(server.url) as (session, transport),
    ):
        assert transport.kind == "http+sse"
        assert session.negotiated is not None
        assert session.negotiated.protocol_version == "2024-11-05"
        tools = await session.send_request("tools/list")
        assert [tool.name for tool in tools.tools] == ["old"]
        posts = server.of("POST")
        assert posts[0].target == "/mcp"  # the Streamable HTTP attempt
        assert [p.target for p in posts[1:]] == ["/messages?session_id=abc"] * 3
        assert [p.rpc_method for p in posts[1:]] == [
            "initialize",
            "notifications/initialized",
            "tools/list",
        ]
        assert server.of("GET")[0].headers["accept"] == "text/event-stream"
    assert server.of("DELETE") == []


@pytest.mark.parametrize("status", [400, 404, 405])
async def test_every_fallback_status(autojump_clock: Any, status: int) -> None:
    class App(LegacyApp):
        async def __call__(self, request: Request, reply: Reply) -> None:
            if request.method == "POST" and request.target == "/mcp":
                await reply.status(status)
                return
            await super().__call__(request, reply)

    async with (
        fake_server(App()) as server,
        http_session(server.url) as (_, transport),
    ):
        assert transport.kind == "http+sse"


async def test_no_fallback_for_500(autojump_clock: Any) -> None:
    class App(LegacyApp):
        async def __call__(self, request: Request, reply: Reply) -> None:
            await reply.status(500)

    async with (
        fake_server(App()) as server,
        http_session(server.url, initialize=False) as (session, _),
    ):
        with pytest.raises(McpError, match="HTTP 500"):
            await session.initialize(init_params())
        assert server.of("GET") == []


async def test_fallback_disabled(autojump_clock: Any) -> None:
    async with (
        fake_server(LegacyApp()) as server,
        http_session(server.url, initialize=False, legacy_fallback=False) as (session, _),
    ):
        with pytest.raises(McpError, match="HTTP 405") as caught:
            await session.initialize(init_params())
        assert caught.value.code == INTERNAL_ERROR
        assert server.of("GET") == []


async def test_fallback_to_nothing_reports_both(autojump_clock: Any) -> None:
    class NothingApp(LegacyApp):
        async def __call__(self, request: Request, reply: Reply) -> None:
            await reply.status(404, b"not here")

    async with (
        fake_server(NothingApp()) as server,
        http_session(server.url, initialize=False) as (session, _),
    ):
        with pytest.raises(McpError, match=r"HTTP 404 .* no HTTP\+SSE transport") as caught:
            await session.initialize(init_params())
        assert caught.value.code == CONNECTION_CLOSED
        assert made_here(caught.value)
        assert {**caught.value.data, MADE_HERE: None} == {"httpStatus": 404, MADE_HERE: None}
        await trio.testing.wait_all_tasks_blocked()
        assert not session.closed  # nothing else went wrong; the caller decides


async def test_cross_origin_endpoint_is_refused(autojump_clock: Any) -> None:
    app = LegacyApp(endpoint="http://evil.example/messages")
    async with (
        fake_server(app) as server,
        http_session(server.url, initialize=False) as (session, _),
    ):
        with pytest.raises(McpError, match="not on the origin"):
            await session.initialize(init_params())
        assert all(r.target != "/messages" for r in server.requests)


async def test_direct_legacy_transport(autojump_clock: Any) -> None:
    app = LegacyApp(endpoint="messages?session_id=xyz")  # relative to the stream URL
    async with fake_server(app) as server:
        url = f"http://127.0.0.1:{server.port}/sse"
        async with (
            open_legacy_sse_client_transport(url, headers={"Authorization": "Bearer t"}) as t,
            open_session(t, role=Role.CLIENT, handler=NullClient()) as session,
        ):
            assert t.kind == "http+sse"
            await session.initialize(init_params())
            await session.send_request("tools/list")
        assert next(r.target for r in server.of("POST")) == "/messages?session_id=xyz"
        assert all(r.headers["authorization"] == "Bearer t" for r in server.requests)
        assert server.of("DELETE") == []


async def test_direct_legacy_transport_without_endpoint_times_out(autojump_clock: Any) -> None:
    async with fake_server(LegacyApp(endpoint="")) as server:
        start = trio.current_time()
        with pytest.raises(HttpClientError, match=r"no endpoint event .* within 9 s"):
            async with open_legacy_sse_client_transport(server.url, timeout=9):
                pass
        assert trio.current_time() - start == pytest.approx(9)


async def test_direct_legacy_transport_not_an_event_stream(autojump_clock: Any) -> None:
    class JsonApp(LegacyApp):
        async def __call__(self, request: Request, reply: Reply) -> None:
            await reply.json({"hello": 1})

    async with fake_server(JsonApp()) as server:
        with pytest.raises(HttpStatusError, match="expected an event stream"):
            async with open_legacy_sse_client_transport(server.url):
                pass


async def test_stream_end_ends_the_session(autojump_clock: Any) -> None:
    class SilentApp(LegacyApp):
        def answer(self, message: dict[str, Any]) -> dict[str, Any] | None:
            if message["method"] == "tools/call":
                self.end_stream.set()  # the server goes away instead of answering
                return None
            return super().answer(message)

    app = SilentApp()
    async with (
        fake_server(app) as server,
        http_session(server.url) as (session, _),
    ):
        with pytest.raises(SessionClosed):
            await session.send_request("tools/call", {"name": "x"}, timeout=None)
        await session.wait_closed()


async def test_failed_post_fails_the_request(autojump_clock: Any) -> None:
    app = LegacyApp()
    async with (
        fake_server(app) as server,
        http_session(server.url) as (session, _),
    ):
        app.post_status = 500
        with pytest.raises(McpError, match="HTTP 500") as caught:
            await session.send_request("tools/list", timeout=None)
        assert caught.value.data["body"] == "nope"
