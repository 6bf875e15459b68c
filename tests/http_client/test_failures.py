"""Failures the HTTP client turns into prompt, clear errors: statuses, expiry, hangs, size."""

from __future__ import annotations

import re
from typing import Any

import pytest
import trio

from tests.http_client.fakeserver import McpApp, Reply, Request, error, fake_server, result
from tests.http_client.helpers import http_session
from trimcp.errors import (
    CONNECTION_CLOSED,
    INTERNAL_ERROR,
    MADE_HERE,
    McpError,
    SessionClosed,
    made_here,
)
from trimcp.session import SessionOptions
from trimcp.transports.http_client import open_http_client_transport

CALL = {"name": "echo", "arguments": {}}


class ExpiringApp(McpApp):
    """Forgets every session as soon as a call arrives on it (HTTP 404)."""

    def __init__(self, *, expire_times: int = 1) -> None:
        super().__init__()
        self.expire_times = expire_times

    async def call(self, request: Request, reply: Reply) -> None:
        if self.expire_times:
            self.expire_times -= 1
            self.live.clear()
            await reply.status(404, b"session not found")
            return
        await super().call(request, reply)


async def test_404_reinitializes_once_and_resends(autojump_clock: Any) -> None:
    app = ExpiringApp()
    async with (
        fake_server(app) as server,
        http_session(server.url) as (session, transport),
    ):
        answer = await session.send_request("tools/call", CALL)
        assert answer.content[0].text == "{}"
        assert transport.session_id == "session-2"
        assert transport.reinitializations == 1
        inits = server.of("initialize")
        assert len(inits) == 2
        assert inits[0].body == inits[1].body  # the stored request, replayed
        assert "mcp-session-id" not in inits[1].headers
        assert len(server.of("notifications/initialized")) == 2
        calls = server.of("tools/call")
        assert [c.headers["mcp-session-id"] for c in calls] == ["session-1", "session-2"]
        await session.send_request("tools/list")  # the new session goes on


async def test_404_again_after_reinitializing_ends_the_session(autojump_clock: Any) -> None:
    app = ExpiringApp(expire_times=2)
    async with (
        fake_server(app) as server,
        http_session(server.url) as (session, transport),
    ):
        with pytest.raises(McpError, match="HTTP 404") as caught:
            await session.send_request("tools/call", CALL)
        assert caught.value.code == CONNECTION_CLOSED
        await session.wait_closed()
        with pytest.raises(SessionClosed):
            await session.send_request("tools/list")
        assert transport.reinitializations == 1


async def test_404_without_reinitialize_surfaces_and_closes(autojump_clock: Any) -> None:
    app = ExpiringApp()
    async with (
        fake_server(app) as server,
        http_session(server.url, reinitialize=False) as (session, _),
    ):
        with pytest.raises(McpError, match="ended the session") as caught:
            await session.send_request("tools/call", CALL)
        assert caught.value.code == CONNECTION_CLOSED
        await session.wait_closed()
        assert len(server.of("initialize")) == 1
    assert server.of("DELETE") == []  # the session is gone already


async def test_404_for_concurrent_requests_reinitializes_once(autojump_clock: Any) -> None:
    gate = trio.Event()

    class GatedApp(ExpiringApp):
        async def call(self, request: Request, reply: Reply) -> None:
            if "session-1" in request.headers.get("mcp-session-id", ""):
                await gate.wait()
                self.live.discard("session-1")
                await reply.status(404)
                return
            await McpApp.call(self, request, reply)

    app = GatedApp()
    async with (
        fake_server(app) as server,
        http_session(server.url) as (session, transport),
    ):
        answers: list[Any] = []

        async def call() -> None:
            answers.append(await session.send_request("tools/call", CALL))

        async with trio.open_nursery() as nursery:
            for _ in range(3):
                nursery.start_soon(call)
            await trio.testing.wait_all_tasks_blocked()
            gate.set()
        assert len(answers) == 3
        assert len(server.of("initialize")) == 2
        assert transport.reinitializations == 1


async def test_500_fails_that_request_only(autojump_clock: Any) -> None:
    class FlakyApp(McpApp):
        async def call(self, request: Request, reply: Reply) -> None:
            if request.json()["params"]["arguments"].get("fail"):
                await reply.status(500, b"boom", {"content-type": "text/plain"})
                return
            await trio.sleep(1)
            await super().call(request, reply)

    async with (
        fake_server(FlakyApp()) as server,
        http_session(server.url) as (session, _),
    ):
        outcome: dict[str, Any] = {}

        async def good() -> None:
            outcome["good"] = await session.send_request("tools/call", CALL)

        async with trio.open_nursery() as nursery:
            nursery.start_soon(good)
            start = trio.current_time()
            with pytest.raises(McpError, match="HTTP 500") as caught:
                await session.send_request(
                    "tools/call", {"name": "echo", "arguments": {"fail": True}}, timeout=None
                )
            assert trio.current_time() == start  # promptly, no timeout involved
            assert caught.value.code == INTERNAL_ERROR
            # Made up here from the status: marked so through its trip as an error response.
            assert made_here(caught.value)
            expected = {"httpStatus": 500, "body": "boom", MADE_HERE: None}
            assert {**caught.value.data, MADE_HERE: None} == expected
        assert outcome["good"].content[0].text == "{}"


async def test_jsonrpc_error_in_a_4xx_body_is_passed_on(autojump_clock: Any) -> None:
    class StrictApp(McpApp):
        async def call(self, request: Request, reply: Reply) -> None:
            body = {"jsonrpc": "2.0", "id": None, "error": {"code": -32602, "message": "bad"}}
            await reply.json(body, status=400)

    async with (
        fake_server(StrictApp()) as server,
        http_session(server.url) as (session, _),
    ):
        with pytest.raises(McpError, match="bad") as caught:
            await session.send_request("tools/call", CALL)
        assert caught.value.code == -32602


async def test_jsonrpc_error_answer_is_a_normal_answer(autojump_clock: Any) -> None:
    class ErrorApp(McpApp):
        async def call(self, request: Request, reply: Reply) -> None:
            await reply.json(error(request, -32601, "no such tool"))

    async with (
        fake_server(ErrorApp()) as server,
        http_session(server.url) as (session, _),
    ):
        with pytest.raises(McpError, match="no such tool"):
            await session.send_request("tools/call", CALL)


async def test_redirect_is_not_followed(autojump_clock: Any) -> None:
    class MovedApp(McpApp):
        async def call(self, request: Request, reply: Reply) -> None:
            await reply.status(307, b"", {"location": "http://elsewhere.example/mcp"})

    async with (
        fake_server(MovedApp()) as server,
        http_session(server.url) as (session, _),
    ):
        with pytest.raises(
            McpError, match=re.escape("redirect to http://elsewhere.example/mcp not followed")
        ):
            await session.send_request("tools/call", CALL)


async def test_202_for_a_request_fails_it(autojump_clock: Any) -> None:
    class AcceptingApp(McpApp):
        async def call(self, request: Request, reply: Reply) -> None:
            await reply.status(202)

    async with (
        fake_server(AcceptingApp()) as server,
        http_session(server.url) as (session, _),
    ):
        with pytest.raises(McpError, match="sent no answer"):
            await session.send_request("tools/call", CALL, timeout=None)


async def test_hung_server_fails_the_request_after_sse_read_timeout(autojump_clock: Any) -> None:
    class HungApp(McpApp):
        async def call(self, request: Request, reply: Reply) -> None:
            await trio.sleep_forever()

    async with (
        fake_server(HungApp()) as server,
        http_session(server.url, sse_read_timeout=40) as (session, _),
    ):
        start = trio.current_time()
        with pytest.raises(McpError, match=r"no response .* within 40 s") as caught:
            await session.send_request("tools/call", CALL, timeout=None)
        assert caught.value.code == CONNECTION_CLOSED
        assert trio.current_time() - start == pytest.approx(40)


async def test_hung_notification_is_bounded_by_timeout(autojump_clock: Any) -> None:
    class HungNotesApp(McpApp):
        async def __call__(self, request: Request, reply: Reply) -> None:
            if request.rpc_method == "notifications/initialized":
                await trio.sleep_forever()
            await super().__call__(request, reply)

    async with (
        fake_server(HungNotesApp()) as server,
        http_session(server.url, timeout=7) as (session, _),
    ):
        start = trio.current_time()
        await session.send_request("tools/list")  # waited behind the hung notification
        assert trio.current_time() - start == pytest.approx(7)


async def test_endless_body_for_a_notification_is_bounded(autojump_clock: Any) -> None:
    class StreamingNotesApp(McpApp):
        async def __call__(self, request: Request, reply: Reply) -> None:
            if request.rpc_method == "notifications/initialized":
                await reply.start_sse()
                while True:
                    await reply.body(b": still here\n\n")
                    await trio.sleep(1)
            await super().__call__(request, reply)

    async with (
        fake_server(StreamingNotesApp()) as server,
        http_session(server.url, timeout=7) as (session, _),
    ):
        start = trio.current_time()
        await session.send_request("tools/list")
        assert trio.current_time() - start == pytest.approx(7)


async def test_connection_refused_fails_requests(autojump_clock: Any) -> None:
    listener = trio.socket.socket()
    await listener.bind(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    listener.close()  # nothing listens there now
    async with open_http_client_transport(f"http://127.0.0.1:{port}/mcp") as transport:
        from tests.support import NullClient, init_params
        from trimcp.protocol.lifecycle import Role
        from trimcp.session import open_session

        async with open_session(transport, role=Role.CLIENT, handler=NullClient()) as session:
            with pytest.raises(McpError, match="cannot connect") as caught:
                await session.initialize(init_params())
            assert caught.value.code == CONNECTION_CLOSED


async def test_oversized_sse_event_fails_the_request(autojump_clock: Any) -> None:
    class BigApp(McpApp):
        async def call(self, request: Request, reply: Reply) -> None:
            await reply.start_sse()
            await reply.event(result(request, {"content": [{"type": "text", "text": "x" * 5000}]}))

    async with (
        fake_server(BigApp()) as server,
        http_session(server.url, max_message_bytes=4096) as (session, _),
    ):
        with pytest.raises(McpError, match="exceeded the 4096-byte limit"):
            await session.send_request("tools/call", CALL, timeout=None)
        await session.send_request("tools/list")  # the session goes on


async def test_oversized_json_body_fails_the_request(autojump_clock: Any) -> None:
    class BigApp(McpApp):
        async def call(self, request: Request, reply: Reply) -> None:
            await reply.json(result(request, {"content": [{"type": "text", "text": "x" * 5000}]}))

    async with (
        fake_server(BigApp()) as server,
        http_session(server.url, max_message_bytes=4096) as (session, _),
    ):
        with pytest.raises(McpError, match="larger than the 4096-byte limit"):
            await session.send_request("tools/call", CALL, timeout=None)
        await session.send_request("tools/list")


async def test_oversized_event_on_the_get_stream_is_skipped(autojump_clock: Any) -> None:
    app = McpApp(get=True)
    async with (
        fake_server(app) as server,
        http_session(server.url, max_message_bytes=4096) as (session, _),
    ):
        await trio.testing.wait_all_tasks_blocked()
        stream = app.get_replies[0]
        big = {"jsonrpc": "2.0", "method": "notifications/message", "params": {"data": "x" * 5000}}
        await stream.event(big)
        await stream.event({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
        await trio.testing.wait_all_tasks_blocked()
        await session.send_request("tools/list")
        # The engine told the server about the dropped message (an error with id null).
        reports = [r.json() for r in server.of("POST") if "error" in r.json()]
        assert reports
        assert reports[0]["id"] is None


async def test_delete_on_close(autojump_clock: Any) -> None:
    app = McpApp()
    async with fake_server(app) as server:
        async with http_session(server.url) as (session, _):
            await session.send_request("tools/list")
        [delete] = server.of("DELETE")
        assert delete.headers["mcp-session-id"] == "session-1"
        assert delete.headers["mcp-protocol-version"] == "2025-11-25"
        assert app.live == set()


@pytest.mark.parametrize("status", [405, 500])
async def test_delete_refused_is_fine(autojump_clock: Any, status: int) -> None:
    class NoDeleteApp(McpApp):
        async def delete(self, request: Request, reply: Reply) -> None:
            await reply.status(status)

    async with fake_server(NoDeleteApp()) as server:
        async with http_session(server.url) as (session, _):
            await session.send_request("tools/list")
        assert len(server.of("DELETE")) == 1


async def test_hung_delete_is_bounded(autojump_clock: Any) -> None:
    class HungDeleteApp(McpApp):
        async def delete(self, request: Request, reply: Reply) -> None:
            await trio.sleep_forever()

    async with fake_server(HungDeleteApp()) as server:
        options = SessionOptions(close_timeout=60)  # let the transport's own bound act
        async with http_session(server.url, options=options, delete_timeout=3) as (session, _):
            await session.send_request("tools/list")
            start = trio.current_time()
        assert trio.current_time() - start == pytest.approx(3)
        assert len(server.of("DELETE")) == 1


async def test_cancelled_call_sends_cancel_and_frees_its_connection(autojump_clock: Any) -> None:
    class SlowApp(McpApp):
        async def call(self, request: Request, reply: Reply) -> None:
            await reply.start_sse()
            await reply.event(id="s1")
            await trio.sleep_forever()

    async with (
        fake_server(SlowApp()) as server,
        http_session(server.url, max_connections=1) as (session, _),
    ):
        with trio.move_on_after(5) as scope:
            await session.send_request("tools/call", CALL)
        assert scope.cancelled_caught
        await trio.testing.wait_all_tasks_blocked()
        [cancel] = server.of("notifications/cancelled")
        assert cancel.json()["params"]["requestId"] == server.of("tools/call")[0].json()["id"]
        # With one connection slot, this only goes through if the cancelled POST let go.
        await session.send_request("tools/list")


class Refusing:
    """An ``auth`` whose every login fails (as after a detected issuer mix-up), or whose
    every token is refused again (``grant``: the login succeeds, the server says 401)."""

    def __init__(self, *, grant: bool = False) -> None:
        self.grant = grant
        self.logins = 0

    def session(self, url: str, spawn: Any) -> Refusing:
        return self

    async def authorization(self) -> str | None:
        return f"Bearer t{self.logins}" if self.logins else None

    async def challenge(self, status: int, challenge: str | None, used: str | None) -> None:
        from trimcp.auth import AuthorizationFailed

        self.logins += 1
        if not self.grant:
            raise AuthorizationFailed("the authorization server's issuer is not the one asked")


async def always_401(request: Request, reply: Reply) -> None:
    await reply.status(401, b"", {"www-authenticate": 'Bearer resource_metadata="x"'})


@pytest.mark.parametrize("grant", [False, True])
async def test_an_authorization_failure_on_discover_ends_connecting_without_a_fallback(
    autojump_clock: Any, grant: bool
) -> None:
    # mode auto: server/discover first. Its authorization failing is the answer: trying
    # initialize instead would run the whole authorization again (a second registration).
    from trimcp.client import connect_http

    auth = Refusing(grant=grant)
    async with fake_server(always_401) as server:
        with pytest.raises(McpError) as caught:
            async with connect_http(server.url, auth=auth):
                pass  # pragma: no cover
        assert [r.rpc_method for r in server.requests] == ["server/discover"] * len(server.requests)
    assert "authorization failed" in caught.value.message
    assert caught.value.data["httpStatus"] == 401
    # One login when it fails; when every token is refused, a bounded number of rounds.
    assert auth.logins == (4 if grant else 1)
