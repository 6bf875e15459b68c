"""Server middleware: order, what it sees, short-circuits, wrapping, cancellation inside
the request's scope, and the built-ins (timing, logging, rate limits, error masking)."""

from __future__ import annotations

import json
import logging
import re
import time
from collections.abc import Hashable
from functools import partial
from typing import Any

import pytest
import trio
import trio.testing

from tests.auth.tokens import ISSUER, RESOURCE, KeySet, SigningKey
from tests.http_server.test_modern_http import headers_for, meta
from tests.http_server.test_real_socket import RawHttp
from tests.server.helpers import call_tool, connect, text_of
from trimcp.auth import JwtVerifier, ProtectedResource, principal_key
from trimcp.client import connect_http
from trimcp.errors import INTERNAL_ERROR, REQUEST_TIMEOUT, McpError
from trimcp.server import Context, Server
from trimcp.server.middleware import (
    RATE_LIMITED,
    Call,
    ErrorMaskingMiddleware,
    LoggingMiddleware,
    Next,
    RateLimitMiddleware,
    TimingMiddleware,
)
from trimcp.server.serving import add_access_log
from trimcp.session import SessionOptions
from trimcp.transports.http_server import HttpServerConfig, serve_http
from trimcp.types import CallToolResult, TextContent


def make_app(**options: Any) -> Server:
    app = Server("mw", **options)

    @app.tool()
    def add(a: int, b: int) -> int:
        return a + b

    @app.tool()
    async def slow(ctx: Context) -> str:
        await trio.sleep(100)
        return "done"

    @app.tool()
    def crash() -> str:
        raise RuntimeError("disk on fire")

    return app


async def test_order_and_what_middleware_sees(autojump_clock: Any) -> None:
    seen: list[tuple[str, str, str, Any]] = []

    def recorder(tag: str) -> Any:
        async def middleware(call: Call, call_next: Next) -> Any:
            client = call.ctx.client_info.name if call.ctx and call.ctx.client_info else None
            seen.append((tag, call.kind, call.method, client))
            result = await call_next(call)
            seen.append((f"/{tag}", call.kind, call.method, None))
            return result

        return middleware

    app = make_app(middleware=[recorder("outer")])
    app.add_middleware(recorder("inner"))
    assert len(app.middleware) == 2
    async with connect(app) as (client, _):
        result = await call_tool(client, "add", {"a": 1, "b": 2})
        assert result.structured_content == {"result": 3}
    requests = [entry for entry in seen if entry[2] == "tools/call"]
    assert [tag for tag, *_ in requests] == ["outer", "inner", "/inner", "/outer"]
    assert requests[0][3] == "test-client"
    assert ("outer", "request", "initialize", None) in seen
    assert ("outer", "notification", "notifications/initialized", None) in seen


async def test_short_circuit_wrap_and_replace_params(autojump_clock: Any) -> None:
    async def gate(call: Call, call_next: Next) -> Any:
        if call.method == "tools/call" and call.name == "crash":
            raise McpError(-32001, "crash is switched off here")
        if call.method == "tools/call" and (call.params.arguments or {}).get("a") == 0:
            return CallToolResult(content=[TextContent(text="answered by middleware")])
        return await call_next(call)

    async def doubler(call: Call, call_next: Next) -> Any:
        if call.method == "tools/call" and call.name == "add":
            args = dict(call.params.arguments)
            call.params = type(call.params)(name="add", arguments={**args, "b": args["b"] * 2})
        result = await call_next(call)
        if isinstance(result, CallToolResult) and result.structured_content is not None:
            return CallToolResult(content=result.content, structured_content={"result": "wrapped"})
        return result

    app = make_app(middleware=[gate, doubler])
    async with connect(app) as (client, _):
        with pytest.raises(McpError) as info:
            await call_tool(client, "crash")
        assert (info.value.code, info.value.message) == (-32001, "crash is switched off here")
        assert text_of(await call_tool(client, "add", {"a": 0, "b": 1})) == "answered by middleware"
        result = await call_tool(client, "add", {"a": 1, "b": 2})
        assert text_of(result) == "5"  # b doubled before the tool ran
        assert result.structured_content == {"result": "wrapped"}


async def test_middleware_observes_cancellation_by_the_client(autojump_clock: Any) -> None:
    events: list[str] = []

    async def observer(call: Call, call_next: Next) -> Any:
        try:
            return await call_next(call)
        except trio.Cancelled:
            assert call.cancel_scope is not None
            assert call.request is not None
            events.append(f"cancelled {call.name} by peer={call.request.cancelled_by_peer}")
            raise
        finally:
            events.append(f"finally {call.method}")

    app = make_app(middleware=[observer])
    async with connect(app) as (client, _):
        with trio.move_on_after(1):
            await call_tool(client, "slow")
        await trio.testing.wait_all_tasks_blocked()
    assert "cancelled slow by peer=True" in events
    assert "finally tools/call" in events


async def test_middleware_observes_the_handler_timeout(autojump_clock: Any) -> None:
    events: list[str] = []

    async def observer(call: Call, call_next: Next) -> Any:
        try:
            return await call_next(call)
        except trio.Cancelled:
            events.append(call.method)
            raise

    app = make_app(middleware=[observer])
    async with connect(app, server_options=SessionOptions(handler_timeout=5)) as (client, _):
        with pytest.raises(McpError, match="exceeded the handler timeout") as info:
            # The client waits as long as it takes: only the server's timeout can end it.
            await client.send_request("tools/call", {"name": "slow"}, timeout=None)
    assert info.value.code == REQUEST_TIMEOUT
    assert events == ["tools/call"]


async def test_timing_and_logging(autojump_clock: Any, caplog: pytest.LogCaptureFixture) -> None:
    timings: list[tuple[str, str | None, str]] = []
    timing = TimingMiddleware(
        lambda call, seconds, outcome: timings.append((call.method, call.name, outcome))
    )
    app = make_app(middleware=[timing, LoggingMiddleware(include_params=True)])
    with caplog.at_level(logging.INFO, logger="trimcp.requests"):
        async with connect(app) as (client, _):
            await call_tool(client, "add", {"a": 1, "b": 2})
            await call_tool(client, "crash")
            with trio.move_on_after(1):
                await call_tool(client, "slow")
            await trio.testing.wait_all_tasks_blocked()
    assert ("tools/call", "add", "ok") in timings
    assert ("tools/call", "crash", "error") in timings
    assert ("tools/call", "slow", "cancelled") in timings
    records = [r for r in caplog.records if r.name == "trimcp.requests"]
    add = next(r for r in records if r.mcp["name"] == "add")  # type: ignore[attr-defined]
    fields = add.mcp  # type: ignore[attr-defined]
    assert fields["method"] == "tools/call"
    assert fields["outcome"] == "ok"
    assert fields["client"] == "test-client"
    assert fields["params"] == {"name": "add", "arguments": {"a": 1, "b": 2}}
    assert add.getMessage().startswith("tools/call add ok ")
    crash = next(r for r in records if r.mcp["name"] == "crash")  # type: ignore[attr-defined]
    assert crash.levelno == logging.WARNING


async def test_the_log_line_names_the_http_session_and_the_principal(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async def by_header(scope: dict[str, Any]) -> Hashable | None:
        headers: dict[bytes, bytes] = dict(scope["headers"])
        return headers[b"authorization"].decode().removeprefix("Bearer ")

    app = make_app(middleware=[LoggingMiddleware()])
    config = HttpServerConfig(authenticate=by_header)
    with trio.fail_after(30), caplog.at_level(logging.INFO, logger="trimcp.requests"):
        async with trio.open_nursery() as nursery:
            port = await nursery.start(partial(serve_http, app, port=0, config=config))
            async with connect_http(
                f"http://127.0.0.1:{port}/mcp",
                headers={"Authorization": "Bearer alice"},
                mode="2025-11-25",
            ) as client:
                await client.call_tool("add", {"a": 1, "b": 2})
            nursery.cancel_scope.cancel()
    (line,) = [r.getMessage() for r in caplog.records if r.getMessage().startswith("tools/call")]
    found = re.fullmatch(r"tools/call add ok \d+\.\d ms session=(\S{8}) principal=(\S+)", line)
    assert found, line
    assert found.group(2) == principal_key("alice")


def test_info_and_debug_add_one_access_log_around_the_other_middleware() -> None:
    limit = RateLimitMiddleware(2)
    app = make_app(middleware=[limit])
    add_access_log(app, "warning")
    assert list(app.middleware) == [limit]
    add_access_log(app, "info")
    add_access_log(app, "debug")  # (run twice: still one)
    outer, inner = app.middleware
    assert isinstance(outer, LoggingMiddleware)  # outermost: it logs a refused call too
    assert inner is limit


async def test_rate_limit_per_caller(autojump_clock: Any) -> None:
    app = make_app(middleware=[RateLimitMiddleware(2, per=1.0)])
    async with connect(app) as (first, _), connect(app) as (second, _):
        await call_tool(first, "add", {"a": 1, "b": 1})
        await call_tool(first, "add", {"a": 1, "b": 1})
        with pytest.raises(McpError) as info:
            await call_tool(first, "add", {"a": 1, "b": 1})
        assert info.value.code == RATE_LIMITED
        assert info.value.message.startswith("Rate limit exceeded")
        assert 0 < info.value.data["retryAfter"] <= 0.5
        # Another caller has its own bucket.
        await call_tool(second, "add", {"a": 1, "b": 1})
        await trio.sleep(0.5)  # one token back
        await call_tool(first, "add", {"a": 1, "b": 1})
    with pytest.raises(ValueError, match="rate"):
        RateLimitMiddleware(0)


class User:
    """What an ``authenticate`` hook may return: its own user object, a new one per
    request, naming who it is by ``principal_key`` (default equality: by identity)."""

    def __init__(self, name: str) -> None:
        self.principal_key = name


async def _user_object(scope: dict[str, Any]) -> User | None:
    for name, value in scope["headers"]:
        if name == b"authorization":
            return User(value.decode().removeprefix("Bearer "))
    return None


@pytest.mark.parametrize("auth", ["jwt", "hook"])
async def test_rate_limit_is_per_principal_whatever_its_credentials(auth: str) -> None:
    # Real servers over loopback HTTP (2026 requests, no session: the bucket is the
    # principal's). Fails before caller_key used principal_key (hook): the bucket was
    # keyed by the hook's object, a new one per request, so every request had a full
    # bucket. jwt: a stepped-up token of alice (other token, scopes, expiry) shares hers.
    key = SigningKey("limits")
    if auth == "jwt":
        verifier = JwtVerifier(
            issuer=ISSUER, jwks_url="https://as.example.com/jwks", fetch=KeySet(key).fetch
        )
        config = HttpServerConfig(
            auth=ProtectedResource(
                resource=RESOURCE, authorization_servers=[ISSUER], verifier=verifier
            )
        )
    else:
        config = HttpServerConfig(authenticate=_user_object)

    def token(user: str, *, step_up: bool = False) -> str:
        if auth == "hook":
            return user
        if step_up:
            return key.mint(sub=user, scope="mcp admin", exp=int(time.time()) + 900)
        return key.mint(sub=user)

    async def add_as(port: int, token: str) -> Any:
        """One 2026 tools/call on its own connection: the JSON-RPC answer."""
        params = {"name": "add", "arguments": {"a": 1, "b": 1}, "_meta": meta()}
        body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}
        headers = [*headers_for("tools/call", params), ("authorization", f"Bearer {token}")]
        async with await trio.open_tcp_stream("127.0.0.1", port) as stream:
            client = RawHttp(stream, f"127.0.0.1:{port}")
            status, _, raw = await client.request("POST", json.dumps(body).encode(), headers)
        assert status == 200, raw
        return json.loads(raw)

    app = make_app(middleware=[RateLimitMiddleware(1, per=3600.0)])
    with trio.fail_after(30):
        async with trio.open_nursery() as nursery:
            port = await nursery.start(partial(serve_http, app, port=0, config=config))
            assert (await add_as(port, token("alice")))["result"]
            refused = await add_as(port, token("alice", step_up=True))
            assert refused["error"]["code"] == RATE_LIMITED, refused
            assert (await add_as(port, token("bob")))["result"]  # its own bucket
            nursery.cancel_scope.cancel()


async def test_rate_limit_memory_is_bounded() -> None:
    limiter = RateLimitMiddleware(1, max_callers=3)
    for who in range(10):
        limiter._take(who)
    assert len(limiter._buckets) == 3


async def test_error_masking(autojump_clock: Any, caplog: pytest.LogCaptureFixture) -> None:
    async def secret_failure(call: Call, call_next: Next) -> Any:
        if call.name == "add" and call.params.arguments.get("a") == 13:
            raise McpError(-32050, "connection string postgres://admin:pw@db", {"x": 1})
        if call.name == "add" and call.params.arguments.get("a") == 14:
            raise ValueError("internal path /srv/secret")
        return await call_next(call)

    masking = ErrorMaskingMiddleware(mask_tool_errors=True)
    app = make_app(middleware=[masking, secret_failure])
    with caplog.at_level(logging.WARNING, logger="trimcp.server"):
        async with connect(app) as (client, _):
            with pytest.raises(McpError) as info:
                await call_tool(client, "add", {"a": 13, "b": 0})
            assert (info.value.code, info.value.message, info.value.data) == (
                -32050,
                "The request failed",
                None,
            )
            with pytest.raises(McpError) as info:
                await call_tool(client, "add", {"a": 14, "b": 0})
            assert (info.value.code, info.value.message) == (INTERNAL_ERROR, "The request failed")
            # The caller's own mistakes stay visible.
            with pytest.raises(McpError) as info:
                await call_tool(client, "nope")
            assert "Unknown tool" in info.value.message
            result = await call_tool(client, "crash")
            assert result.is_error is True
            assert text_of(result) == "Tool 'crash' failed"
    assert "postgres://admin" in caplog.text
    assert "/srv/secret" in caplog.text
