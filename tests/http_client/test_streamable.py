"""Streamable HTTP client against in-process fake servers: answers, headers, streams, pool."""

from __future__ import annotations

from typing import Any

import pytest
import trio

from tests.http_client.fakeserver import (
    McpApp,
    Reply,
    Request,
    fake_server,
    result,
)
from tests.http_client.helpers import http_session
from tests.support import NullClient
from trimcp.errors import INTERNAL_ERROR, McpError


async def test_json_answers_and_headers(autojump_clock: Any) -> None:
    app = McpApp()
    async with (
        fake_server(app) as server,
        http_session(server.url) as (session, transport),
    ):
        tools = await session.send_request("tools/list")
        assert [tool.name for tool in tools.tools] == ["echo"]
        assert transport.session_id == "session-1"
        assert transport.protocol_version == "2025-11-25"
        assert transport.kind == "streamable-http"
        init, note, listing = (
            server.of("initialize")[0],
            server.of("notifications/initialized")[0],
            server.of("tools/list")[0],
        )
        for request in (init, note, listing):
            assert request.headers["accept"] == "application/json, text/event-stream"
            assert request.headers["content-type"] == "application/json"
        # The initialize POST carries neither header; everything after it carries both.
        assert "mcp-session-id" not in init.headers
        assert "mcp-protocol-version" not in init.headers
        for request in server.requests[1:]:
            assert request.headers["mcp-session-id"] == "session-1"
            assert request.headers["mcp-protocol-version"] == "2025-11-25"
        # initialized reached the server before the next request (202 awaited in order).
        assert server.requests.index(note) < server.requests.index(listing)


async def test_negotiated_older_version_is_the_header(autojump_clock: Any) -> None:
    app = McpApp()
    async with (
        fake_server(app) as server,
        http_session(server.url, version="2025-03-26") as (session, _transport),
    ):
        await session.send_request("tools/list")
        assert server.of("tools/list")[0].headers["mcp-protocol-version"] == "2025-03-26"


class SseApp(McpApp):
    """Answers tools/call on an SSE stream: a progress notification, a log, the result."""

    async def call(self, request: Request, reply: Reply) -> None:
        message = request.json()
        token = message["params"].get("_meta", {}).get("progressToken")
        await reply.start_sse()
        await reply.event(id="p0", retry=3000)  # a priming event: id, empty data
        await reply.event(
            {
                "jsonrpc": "2.0",
                "method": "notifications/progress",
                "params": {"progressToken": token, "progress": 1, "total": 2},
            },
            id="p1",
        )
        await reply.body(b": keep-alive comment\n\n")
        await reply.event(
            {
                "jsonrpc": "2.0",
                "method": "notifications/message",
                "params": {"level": "info", "data": "working"},
            },
            event="message",
        )
        await reply.event(result(request, {"content": [{"type": "text", "text": "ok"}]}), id="p2")
        await reply.end()


async def test_sse_answer_with_notifications(autojump_clock: Any) -> None:
    app = SseApp()
    client = NullClient()
    async with (
        fake_server(app) as server,
        http_session(server.url, handler=client) as (session, _),
    ):
        seen: list[float] = []
        answer = await session.send_request(
            "tools/call",
            {"name": "echo", "arguments": {}},
            on_progress=lambda progress, total, message: seen.append(progress),
        )
        assert answer.content[0].text == "ok"
        assert seen == [1]
        await trio.testing.wait_all_tasks_blocked()
        assert [method for method, _ in client.notifications] == ["notifications/message"]
        # No reconnection: the answer arrived, the stream ended.
        assert len(server.of("GET")) <= 1


async def test_batch_in_json_body_is_split(autojump_clock: Any) -> None:
    class BatchApp(McpApp):
        async def call(self, request: Request, reply: Reply) -> None:
            note = {
                "jsonrpc": "2.0",
                "method": "notifications/message",
                "params": {"level": "info", "data": "x"},
            }
            await reply.json([note, result(request, {"content": []})])

    client = NullClient()
    async with (
        fake_server(BatchApp()) as server,
        http_session(server.url, handler=client) as (session, _),
    ):
        answer = await session.send_request("tools/call", {"name": "echo"})
        assert answer.content == []
        await trio.testing.wait_all_tasks_blocked()
        assert [m for m, _ in client.notifications] == ["notifications/message"]


async def test_get_stream_carries_server_messages(autojump_clock: Any) -> None:
    app = McpApp(get=True)
    client = NullClient()
    async with (
        fake_server(app) as server,
        http_session(server.url, handler=client) as (_session, _),
    ):
        await trio.testing.wait_all_tasks_blocked()
        [get] = server.of("GET")
        assert get.headers["accept"] == "text/event-stream"
        assert get.headers["mcp-session-id"] == "session-1"
        assert get.headers["mcp-protocol-version"] == "2025-11-25"
        await app.get_replies[0].event(
            {"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}, id="g1"
        )
        await trio.testing.wait_all_tasks_blocked()
        assert [m for m, _ in client.notifications] == ["notifications/tools/list_changed"]


async def test_get_405_is_not_retried(autojump_clock: Any) -> None:
    app = McpApp(get=False)
    async with (
        fake_server(app) as server,
        http_session(server.url) as (session, _),
    ):
        await trio.sleep(60)
        await session.send_request("tools/list")
        assert len(server.of("GET")) == 1


async def test_no_get_stream_without_session(autojump_clock: Any) -> None:
    app = McpApp(sessions=False, get=True)
    async with (
        fake_server(app) as server,
        http_session(server.url) as (session, transport),
    ):
        await session.send_request("tools/list")
        assert transport.session_id is None
        assert server.of("GET") == []
        # No session, nothing to delete.
        assert server.of("DELETE") == []


async def test_connections_are_kept_alive(autojump_clock: Any) -> None:
    app = McpApp()
    async with (
        fake_server(app) as server,
        http_session(server.url) as (session, transport),
    ):
        for _ in range(20):
            await session.send_request("tools/list")
        assert transport.pool.opened <= 2
        assert server.connections <= 3  # + the DELETE at most


async def test_max_connections_bounds_requests_in_flight(autojump_clock: Any) -> None:
    release = trio.Event()

    class SlowApp(McpApp):
        async def call(self, request: Request, reply: Reply) -> None:
            await release.wait()
            await super().call(request, reply)

    app = SlowApp()
    answers: list[Any] = []
    async with (
        fake_server(app) as server,
        http_session(server.url, max_connections=2) as (session, _),
    ):

        async def call(n: int) -> None:
            answers.append(
                await session.send_request("tools/call", {"name": "echo", "arguments": {"n": n}})
            )

        async with trio.open_nursery() as nursery:
            for n in range(6):
                nursery.start_soon(call, n)
            await trio.testing.wait_all_tasks_blocked()
            assert len(server.of("tools/call")) == 2
            release.set()
        assert len(answers) == 6
        assert server.max_active <= 3  # two calls + nothing else waiting on the server


async def test_unexpected_content_type_fails_the_request(autojump_clock: Any) -> None:
    class TextApp(McpApp):
        async def call(self, request: Request, reply: Reply) -> None:
            await reply.status(200, b"hello", {"content-type": "text/plain"})

    async with fake_server(TextApp()) as server, http_session(server.url) as (session, _):
        with pytest.raises(McpError, match="text/plain") as caught:
            await session.send_request("tools/call", {"name": "echo"})
        assert caught.value.code == INTERNAL_ERROR
        await session.send_request("tools/list")


async def test_server_request_on_answer_stream_with_one_connection(autojump_clock: Any) -> None:
    """The client's reply to a server request is POSTed while the call holds the only
    request slot: replies are not requests, so they never wait for a slot."""

    class AskingApp(McpApp):
        def __init__(self) -> None:
            super().__init__()
            self.reply_seen = trio.Event()
            self.replies: list[Any] = []

        async def __call__(self, request: Request, reply: Reply) -> None:
            if request.method == "POST" and "result" in request.json():
                self.replies.append(request.json())
                self.reply_seen.set()
                await reply.status(202)
                return
            await super().__call__(request, reply)

        async def call(self, request: Request, reply: Reply) -> None:
            await reply.start_sse()
            await reply.event({"jsonrpc": "2.0", "id": "s1", "method": "ping"})
            await self.reply_seen.wait()
            await reply.event(result(request, {"content": []}))
            await reply.end()

    app = AskingApp()
    async with (
        fake_server(app) as server,
        http_session(server.url, max_connections=1) as (session, _),
    ):
        with trio.fail_after(10):
            answer = await session.send_request("tools/call", {"name": "echo"})
        assert answer.content == []
        assert app.replies == [{"jsonrpc": "2.0", "id": "s1", "result": {}}]
