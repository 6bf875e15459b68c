"""Answer streams that drop: resumption by GET with Last-Event-ID, honouring ``retry``.

The fake server runs in-process on loopback sockets, so the autojump clock drives every
sleep and timeout, and the times the server records are exact.
"""

from __future__ import annotations

from typing import Any

import pytest
import trio

from tests.http_client.fakeserver import McpApp, Reply, Request, fake_server, result
from tests.http_client.helpers import http_session
from trimcp.errors import CONNECTION_CLOSED, INTERNAL_ERROR, McpError

ANSWER = {"content": [{"type": "text", "text": "resumed"}]}


class PollingApp(McpApp):
    """SEP-1699 polling: the call's stream sends a priming event and ends (or drops);
    a GET with Last-Event-ID then carries the answer, as the conformance mock does."""

    def __init__(self, *, retry: int | None = 500, drop: bool = False, closes: int = 1) -> None:
        super().__init__(get=True)
        self.retry = retry
        self.drop = drop
        self.closes = closes  # how many streams end before the answer is sent
        self.pending: Request | None = None
        self.ended_at: list[float] = []
        self.resumes: list[Request] = []

    async def call(self, request: Request, reply: Reply) -> None:
        self.pending = request
        await reply.start_sse()
        await reply.event(id="event-1", retry=self.retry)
        await trio.sleep(0.05)
        self.ended_at.append(trio.current_time())
        if self.drop:
            reply.drop()

    async def get(self, request: Request, reply: Reply) -> None:
        if "last-event-id" not in request.headers:
            await super().get(request, reply)  # the standalone stream: stays open
            return
        self.resumes.append(request)
        await reply.start_sse()
        number = len(self.resumes) + 1
        await reply.event(id=f"event-{number}", retry=self.retry)
        if len(self.resumes) < self.closes:
            self.ended_at.append(trio.current_time())
            return  # ends again without the answer
        assert self.pending is not None
        await reply.event(result(self.pending, ANSWER), id=f"event-{number}b")
        await trio.sleep_forever()  # like the mock: GET streams stay open


@pytest.mark.parametrize("drop", [False, True])
async def test_resume_after_retry_with_last_event_id(autojump_clock: Any, drop: bool) -> None:
    app = PollingApp(drop=drop)
    async with (
        fake_server(app) as server,
        http_session(server.url) as (session, _),
    ):
        answer = await session.send_request("tools/call", {"name": "x", "arguments": {}})
        assert answer.content[0].text == "resumed"
        [resume] = app.resumes
        assert resume.headers["last-event-id"] == "event-1"
        assert resume.headers["mcp-session-id"] == "session-1"
        assert resume.headers["accept"] == "text/event-stream"
        # The conformance window is 450-700 ms after the stream ended; retry says 500.
        delay = resume.time - app.ended_at[0]
        assert delay == pytest.approx(0.5)
        # No GET after the resumption (the standalone GET came before the call).
        gets = server.of("GET")
        assert gets[-1] is resume
        assert len(gets) == 2


async def test_resume_without_retry_waits_the_default(autojump_clock: Any) -> None:
    app = PollingApp(retry=None)
    async with fake_server(app) as server, http_session(server.url) as (session, _):
        await session.send_request("tools/call", {"name": "x", "arguments": {}})
    delay = app.resumes[0].time - app.ended_at[0]
    assert delay == pytest.approx(1.0)


async def test_resume_repeatedly_follows_the_latest_event_id(autojump_clock: Any) -> None:
    app = PollingApp(closes=3, retry=200)
    async with fake_server(app) as server, http_session(server.url) as (session, _):
        answer = await session.send_request("tools/call", {"name": "x", "arguments": {}})
        assert answer.content[0].text == "resumed"
    ids = [request.headers["last-event-id"] for request in app.resumes]
    assert ids == ["event-1", "event-2", "event-3"]


async def test_stream_without_event_id_fails_at_once(autojump_clock: Any) -> None:
    class EndingApp(McpApp):
        async def call(self, request: Request, reply: Reply) -> None:
            await reply.start_sse()
            await reply.event(
                {
                    "jsonrpc": "2.0",
                    "method": "notifications/message",
                    "params": {"level": "info", "data": "x"},
                }
            )

    async with (
        fake_server(EndingApp()) as server,
        http_session(server.url) as (session, _),
    ):
        start = trio.current_time()
        with pytest.raises(McpError, match="ended without an answer") as caught:
            await session.send_request("tools/call", {"name": "x"}, timeout=None)
        assert caught.value.code == CONNECTION_CLOSED
        assert trio.current_time() - start < 1
        await session.send_request("tools/list")  # the session goes on
        assert len(server.of("GET")) == 1  # only the standalone one


async def test_resumption_gives_up_after_bounded_attempts(autojump_clock: Any) -> None:
    class RefusingApp(PollingApp):
        async def get(self, request: Request, reply: Reply) -> None:
            if "last-event-id" in request.headers:
                self.resumes.append(request)
                await reply.start_sse()
                reply.drop()  # the connection breaks: nothing comes back
            await reply.status(405)

    app = RefusingApp(retry=100)
    async with (
        fake_server(app) as server,
        http_session(server.url, max_reconnect_attempts=3) as (session, _),
    ):
        with pytest.raises(McpError, match="could not be resumed after 3 attempts"):
            await session.send_request("tools/call", {"name": "x"}, timeout=None)
    assert len(app.resumes) == 3
    # Back-off: 0.1 s, then 0.2 s, then 0.4 s.
    gaps = [b.time - a.time for a, b in zip(app.resumes, app.resumes[1:], strict=False)]
    assert gaps == pytest.approx([0.2, 0.4])


async def test_resume_refused_with_status_fails_the_request(autojump_clock: Any) -> None:
    class NoResumeApp(PollingApp):
        async def get(self, request: Request, reply: Reply) -> None:
            await reply.status(405)

    async with fake_server(NoResumeApp()) as server, http_session(server.url) as (session, _):
        with pytest.raises(McpError, match="HTTP 405") as caught:
            await session.send_request("tools/call", {"name": "x"}, timeout=None)
        assert caught.value.code == INTERNAL_ERROR


async def test_silent_stream_counts_as_dropped_after_sse_read_timeout(autojump_clock: Any) -> None:
    class SilentApp(PollingApp):
        async def call(self, request: Request, reply: Reply) -> None:
            self.pending = request
            await reply.start_sse()
            await reply.event(id="event-1", retry=10)
            self.ended_at.append(trio.current_time())
            await trio.sleep_forever()

    app = SilentApp()
    async with (
        fake_server(app) as server,
        http_session(server.url, sse_read_timeout=20) as (session, _),
    ):
        answer = await session.send_request("tools/call", {"name": "x"}, timeout=None)
        assert answer.content[0].text == "resumed"
    delay = app.resumes[0].time - app.ended_at[0]
    assert delay == pytest.approx(20.01)


async def test_get_stream_reconnects_with_last_event_id(autojump_clock: Any) -> None:
    class ClosingGetApp(McpApp):
        def __init__(self) -> None:
            super().__init__(get=True)
            self.gets: list[Request] = []

        async def get(self, request: Request, reply: Reply) -> None:
            self.gets.append(request)
            await reply.start_sse()
            if len(self.gets) == 1:
                await reply.event(
                    {"jsonrpc": "2.0", "method": "notifications/tools/list_changed"},
                    id="g-1",
                    retry=250,
                )
                return  # the server closes the connection, not the stream
            await trio.sleep_forever()

    app = ClosingGetApp()
    async with fake_server(app) as server, http_session(server.url) as (_session, _):
        await trio.sleep(1)
        assert len(app.gets) == 2
        assert app.gets[1].headers["last-event-id"] == "g-1"
        assert app.gets[1].time - app.gets[0].time >= 0.25


async def test_a_gateway_error_on_resume_is_retried(autojump_clock: Any) -> None:
    # A balancer whose replicas are all marked down for a moment (one just died) answers
    # the resume 502, then 503: the client tries again, and the next attempt is answered.
    class BalancerApp(PollingApp):
        async def get(self, request: Request, reply: Reply) -> None:
            if "last-event-id" in request.headers and len(self.resumes) < 2:
                self.resumes.append(request)
                await reply.status(502 + len(self.resumes) - 1)
                return
            await super().get(request, reply)

    app = BalancerApp(retry=100)
    async with fake_server(app) as server, http_session(server.url) as (session, _):
        answer = await session.send_request("tools/call", {"name": "x", "arguments": {}})
        assert answer.content[0].text == "resumed"
    assert len(app.resumes) == 3


async def test_gateway_errors_on_every_resume_give_up_bounded(autojump_clock: Any) -> None:
    class DownApp(PollingApp):
        async def get(self, request: Request, reply: Reply) -> None:
            if "last-event-id" in request.headers:
                self.resumes.append(request)
                await reply.status(502)
                return
            await super().get(request, reply)

    app = DownApp(retry=100)
    async with (
        fake_server(app) as server,
        http_session(server.url, max_reconnect_attempts=3) as (session, _),
    ):
        with pytest.raises(McpError, match="could not be resumed after 3 attempts: HTTP 502"):
            await session.send_request("tools/call", {"name": "x"}, timeout=None)
    assert len(app.resumes) == 3
