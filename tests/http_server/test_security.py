"""ROBUSTNESS 10-14: hostile headers, media types, body size, session ids, principals, limits."""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any

import pytest
import trio
import trio.testing

from tests.http_server.helpers import (
    ACCEPT_BOTH,
    init_request,
    post_headers,
    running_app,
    tool_call,
)
from trimcp.http.security import (
    accepts,
    host_allowed,
    origin_allowed,
    split_host,
)
from trimcp.transports.http_server import HttpRejection, HttpServerConfig

LOCAL = ("localhost", "127.0.0.1", "[::1]")

# --- 10. Host and Origin -------------------------------------------------------------------


@pytest.mark.parametrize(
    "host",
    [
        "localhost",
        "localhost:8000",
        "127.0.0.1",
        "127.0.0.1:1",
        "[::1]",
        "[::1]:8080",
        "LOCALHOST:9",
    ],
)
def test_local_hosts_pass(host: str) -> None:
    assert host_allowed(host, LOCAL)


@pytest.mark.parametrize(
    "host",
    [
        None,
        "",
        "evil.example.com",
        "localhost.evil.com",
        "evil.com:8000",
        "127.0.0.1.nip.io",
        "::1",
        "[::1",
        "[::2]",
        "[0:0:0:0:0:0:0:1]",
        "[::1]x",
        "localhost:abc",
        "localhost:",
        "localhost.",
        "user@localhost",
        "localhost/x",
        "127.0.0.1 ",
        "[::1]:80:80",
        "[::ffff:127.0.0.1]",
        "0.0.0.0",
    ],
)
def test_hostile_hosts_fail(host: str | None) -> None:
    assert not host_allowed(host, LOCAL)


def test_host_entries_with_ports_and_wildcard() -> None:
    assert host_allowed("example.com:8443", ["example.com:8443"])
    assert not host_allowed("example.com:8444", ["example.com:8443"])
    assert host_allowed("anything", ["*"])
    assert split_host("[::1]:8000") == ("[::1]", "8000")


@pytest.mark.parametrize(
    ("origin", "ok"),
    [
        ("http://localhost:3000", True),
        ("https://127.0.0.1", True),
        ("http://[::1]:5173", True),
        ("http://evil.example.com", False),
        ("http://localhost.evil.com", False),
        ("null", False),
        ("file://localhost", False),
        ("http://localhost@evil.com", False),
        ("localhost", False),
    ],
)
def test_origins_against_the_host_list(origin: str, ok: bool) -> None:
    assert origin_allowed(origin, None, LOCAL) is ok


def test_explicit_origins() -> None:
    allowed = ["https://app.example", "http://dev.example:*"]
    assert origin_allowed("https://app.example", allowed, LOCAL)
    assert origin_allowed("HTTPS://APP.EXAMPLE", allowed, LOCAL)
    assert not origin_allowed("https://app.example:444", allowed, LOCAL)
    assert origin_allowed("http://dev.example:1234", allowed, LOCAL)
    assert not origin_allowed("http://localhost", allowed, LOCAL)
    assert origin_allowed("http://whatever", ["*"], LOCAL)


@pytest.mark.parametrize("method", ["POST", "GET", "DELETE"])
@pytest.mark.parametrize(
    ("host", "origin", "status"),
    [
        ("evil.example.com", None, 421),
        ("localhost.evil.com:8000", None, 421),
        ("[::1]evil", None, 421),
        ("127.0.0.1:8000", "http://evil.example.com", 403),
        ("127.0.0.1:8000", "http://localhost.evil.com", 403),
        ("127.0.0.1:8000", "null", 403),
    ],
)
async def test_hostile_host_or_origin_is_refused_on_every_method(
    autojump_clock: trio.abc.Clock, method: str, host: str, origin: str | None, status: int
) -> None:
    async with running_app() as (app, client):
        headers = post_headers()
        if origin is not None:
            headers.append(("origin", origin))
        reply = await client.request(
            method, headers=headers, body=init_request() if method == "POST" else b"", host=host
        )
        assert reply.status == status
        assert reply.json()["error"]["code"] == -32600
        assert len(app.manager) == 0


async def test_missing_host_is_refused(autojump_clock: trio.abc.Clock) -> None:
    async with running_app() as (_, client):
        reply = await client.request("POST", headers=post_headers(), body=init_request(), host=None)
        assert reply.status == 421


async def test_good_host_without_origin_is_allowed(autojump_clock: trio.abc.Clock) -> None:
    async with running_app() as (_, client):
        for host in ("localhost:8000", "127.0.0.1:8000", "[::1]:8000"):
            reply = await client.post(init_request(), version=None, host=host)
            assert reply.status == 200


async def test_good_host_and_origin_are_allowed(autojump_clock: trio.abc.Clock) -> None:
    async with running_app() as (_, client):
        reply = await client.post(
            init_request(), version=None, extra=[("origin", "http://127.0.0.1:8000")]
        )
        assert reply.status == 200


async def test_repeated_host_header_is_refused(autojump_clock: trio.abc.Clock) -> None:
    async with running_app() as (_, client):
        reply = await client.post(init_request(), version=None, extra=[("host", "evil.com")])
        assert reply.status == 400


async def test_legacy_endpoints_check_host_too(autojump_clock: trio.abc.Clock) -> None:
    async with running_app() as (_, client):
        reply = await client.request(
            "GET", "/sse", headers=[("accept", "text/event-stream")], host="evil.com"
        )
        assert reply.status == 421


# --- 11. Content-Type and Accept ------------------------------------------------------------


@pytest.mark.parametrize(
    "content_type",
    [
        None,
        "text/plain",
        "application/x-www-form-urlencoded",
        "multipart/form-data; boundary=x",
        "application/jsonp",
        "text/json",
    ],
)
async def test_non_json_post_is_415_before_reading(
    autojump_clock: trio.abc.Clock, content_type: str | None
) -> None:
    async with running_app() as (app, client):
        headers = [("accept", ACCEPT_BOTH)]
        if content_type is not None:
            headers.append(("content-type", content_type))
        exchange = await client.request("POST", headers=headers, body=init_request())
        assert exchange.status == 415
        assert exchange.read_requests == 0  # the body was never read
        assert len(app.manager) == 0


async def test_json_with_charset_is_fine(autojump_clock: trio.abc.Clock) -> None:
    async with running_app() as (_, client):
        reply = await client.request(
            "POST",
            headers=[("content-type", "application/json; charset=utf-8"), ("accept", ACCEPT_BOTH)],
            body=init_request(),
        )
        assert reply.status == 200


@pytest.mark.parametrize(
    "accept",
    [
        None,
        "",
        "application/json",
        "text/event-stream",
        "text/html",
        "application/json, text/event-stream;q=0",
    ],
)
async def test_post_needs_both_media_types(
    autojump_clock: trio.abc.Clock, accept: str | None
) -> None:
    async with running_app() as (_, client):
        headers = [("content-type", "application/json")]
        if accept is not None:
            headers.append(("accept", accept))
        reply = await client.request("POST", headers=headers, body=init_request())
        assert reply.status == 406


async def test_wildcard_accept_is_fine(autojump_clock: trio.abc.Clock) -> None:
    async with running_app() as (_, client):
        reply = await client.post(init_request(), version=None, accept="*/*")
        assert reply.status == 200


async def test_get_needs_event_stream(autojump_clock: trio.abc.Clock) -> None:
    async with running_app() as (_, client):
        session_id = await client.initialize()
        reply = await client.request(
            "GET", headers=[("accept", "application/json"), ("mcp-session-id", session_id)]
        )
        assert reply.status == 406


def test_accepts() -> None:
    assert accepts("text/*", "text/event-stream")
    assert accepts("application/json;q=0.5", "application/json")
    assert not accepts("application/json;q=0", "application/json")
    assert not accepts("application/json;q=x", "application/json")


async def test_other_methods_get_405(autojump_clock: trio.abc.Clock) -> None:
    async with running_app() as (_, client):
        reply = await client.request("PUT", headers=post_headers(), body=b"{}")
        assert reply.status == 405
        assert reply.headers["allow"] == "GET, POST, DELETE"


async def test_unknown_path_is_404(autojump_clock: trio.abc.Clock) -> None:
    async with running_app() as (_, client):
        reply = await client.request("POST", "/other", headers=post_headers(), body=b"{}")
        assert reply.status == 404


# --- 12. Body size and malformed bodies -------------------------------------------------------


async def test_declared_oversized_body_is_413_before_reading(
    autojump_clock: trio.abc.Clock,
) -> None:
    async with running_app(HttpServerConfig(max_body_bytes=1000)) as (app, client):
        headers = [*post_headers(version=None), ("content-length", "1001")]
        reply = await client.request("POST", headers=headers, body=b"x" * 1001)
        assert reply.status == 413
        assert reply.read_requests == 0
        assert len(app.manager) == 0
        assert app.manager.alive == 0


async def test_chunked_oversized_body_is_413_while_reading(
    autojump_clock: trio.abc.Clock,
) -> None:
    async with running_app(HttpServerConfig(max_body_bytes=1000)) as (app, client):
        chunks = [b"x" * 400] * 100  # 40 KB offered, no Content-Length
        reply = await client.request("POST", headers=post_headers(version=None), chunks=chunks)
        assert reply.status == 413
        assert reply.read_requests == 3  # stopped as soon as the limit was passed
        assert reply.headers["connection"] == "close"
        assert app.manager.alive == 0


async def test_body_at_the_limit_is_fine(autojump_clock: trio.abc.Clock) -> None:
    body = (
        b'{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":'
        b'"2025-11-25","capabilities":{},"clientInfo":{"name":"a","version":"0"}}}'
    )
    padded = body[:-1] + b" " * 100 + b"}"
    config = HttpServerConfig(max_body_bytes=len(padded))
    async with running_app(config) as (_, client):
        chunks = [padded[i : i + 10] for i in range(0, len(padded), 10)]
        reply = await client.request("POST", headers=post_headers(version=None), chunks=chunks)
        assert reply.status == 200


async def test_slow_body_gets_408(autojump_clock: trio.abc.Clock) -> None:
    async with running_app(HttpServerConfig(body_timeout=5)) as (app, client):
        exchange = client.start("POST", headers=post_headers(version=None), chunks=[b"{", b"}"])
        # the exchange's receive() hands out "{" then waits for a disconnect: a stalled body
        exchange._requests[0]["more_body"] = True
        exchange._requests.pop()
        await exchange.wait_finished()
        assert exchange.status == 408
        assert app.manager.alive == 0


@pytest.mark.parametrize(
    ("body", "code"),
    [
        (b"{oops", -32700),
        (b"\xff\xfe{}", -32700),
        (b"[" * 100_000 + b"]" * 100_000, -32700),
        (b"[]", -32600),
        (b'{"jsonrpc":"1.0","id":1,"method":"initialize"}', -32600),
        (b'{"jsonrpc":"2.0","id":true,"method":"initialize"}', -32600),
        (b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":null}', -32602),
        (b"42", -32600),
    ],
)
async def test_malformed_bodies_get_400_with_a_jsonrpc_error(
    autojump_clock: trio.abc.Clock, body: bytes, code: int
) -> None:
    async with running_app() as (app, client):
        reply = await client.request("POST", headers=post_headers(version=None), body=body)
        assert reply.status == 400
        assert reply.json()["error"]["code"] == code
        assert app.manager.alive == 0


async def test_malformed_body_inside_a_session_leaves_it_working(
    autojump_clock: trio.abc.Clock,
) -> None:
    async with running_app() as (_, client):
        session_id = await client.initialize()
        bad = await client.post(b"{oops", session_id=session_id)
        assert bad.status == 400
        assert (await client.call(session_id, 1, "echo", {"text": "ok"}))["result"]


# --- 13. Session ids, principals, versions ------------------------------------------------------


async def test_missing_session_id_is_400(autojump_clock: trio.abc.Clock) -> None:
    async with running_app() as (_, client):
        await client.initialize()
        reply = await client.post(tool_call(1, "echo"))
        assert reply.status == 400


async def test_unknown_session_id_is_404(autojump_clock: trio.abc.Clock) -> None:
    async with running_app() as (_, client):
        session_id = await client.initialize()
        for bad in ("x", session_id + "x", session_id[:-1], ""):
            reply = await client.post(tool_call(1, "echo"), session_id=bad)
            assert reply.status == 404, bad
            assert reply.read_requests == 0


def _principal_from_header(scope: dict[str, Any]) -> Hashable | None:
    for name, value in scope["headers"]:
        if name == b"authorization":
            token: str = value.decode()
            if token == "Bearer bad":
                raise HttpRejection(401, "bad token", headers=[(b"www-authenticate", b"Bearer")])
            return token
    return None


async def _authenticate(scope: dict[str, Any]) -> Hashable | None:
    return _principal_from_header(scope)


async def test_another_principal_gets_the_same_404(autojump_clock: trio.abc.Clock) -> None:
    config = HttpServerConfig(authenticate=_authenticate)
    async with running_app(config) as (_, client):
        alice = [("authorization", "Bearer alice")]
        session_id = await client.initialize(extra=alice)
        ok = await client.call(session_id, 1, "echo", {"text": "a"}, extra=alice)
        assert ok["result"]
        for other in ([("authorization", "Bearer bob")], []):
            reply = await client.post(tool_call(2, "echo"), session_id=session_id, extra=other)
            assert reply.status == 404
            get = await client.request(
                "GET",
                headers=[("accept", "text/event-stream"), ("mcp-session-id", session_id), *other],
            )
            assert get.status == 404
            delete = await client.request(
                "DELETE", headers=[("mcp-session-id", session_id), *other]
            )
            assert delete.status == 404
        assert (await client.call(session_id, 3, "echo", {"text": "a"}, extra=alice))["result"]


async def test_authenticate_may_refuse(autojump_clock: trio.abc.Clock) -> None:
    config = HttpServerConfig(authenticate=_authenticate)
    async with running_app(config) as (app, client):
        reply = await client.post(
            init_request(), version=None, extra=[("authorization", "Bearer bad")]
        )
        assert reply.status == 401
        assert reply.headers["www-authenticate"] == "Bearer"
        assert app.manager.alive == 0


@pytest.mark.parametrize("version", ["2099-01-01", "garbage", "2024-10-07", ""])
async def test_unsupported_protocol_version_header_is_400(
    autojump_clock: trio.abc.Clock, version: str
) -> None:
    async with running_app() as (_, client):
        session_id = await client.initialize()
        reply = await client.post(tool_call(1, "echo"), session_id=session_id, version=version)
        assert reply.status == 400


async def test_any_supported_version_header_is_accepted_in_a_session(
    autojump_clock: trio.abc.Clock,
) -> None:
    async with running_app() as (_, client):
        session_id = await client.initialize("2025-11-25")
        for i, version in enumerate(("2025-03-26", "2025-06-18", None)):
            answer = await client.call(session_id, i, "echo", {"text": "v"}, version=version)
            assert answer["result"]


# --- 14. Session limit ------------------------------------------------------------------------


async def test_more_sessions_than_the_limit_get_503_with_nothing_allocated(
    autojump_clock: trio.abc.Clock,
) -> None:
    async with running_app(HttpServerConfig(max_sessions=3)) as (app, client):
        session_ids = [await client.initialize() for _ in range(3)]
        reply = await client.post(init_request(), version=None)
        assert reply.status == 503
        assert "mcp-session-id" not in reply.headers
        assert app.manager.alive == 3
        assert len(app.manager) == 3
        # existing sessions are unaffected, and a DELETE frees a slot
        assert (await client.call(session_ids[0], 1, "echo"))["result"]
        await client.request("DELETE", headers=[("mcp-session-id", session_ids[0])])
        await trio.testing.wait_all_tasks_blocked()
        assert app.manager.alive == 2
        assert (await client.post(init_request(), version=None)).status == 200
