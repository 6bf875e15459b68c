"""``Server(auth=...)``: the protection belongs to the server, so both HTTP engines and a
mounted ASGI app apply it whatever config they are given; a config naming another
protection, and the WebSocket transport (which cannot apply it), are refused."""

from __future__ import annotations

import json
from typing import Any, Literal, cast

import pytest
import trio

from tests.http_server.test_real_socket import HEADERS, RawHttp
from trimcp import AuthInfo, ProtectedResource, Server
from trimcp.transports.http_server import HttpServerConfig, create_asgi_app, serve_http
from trimcp.transports.websocket import serve_websocket

BOUND = 30.0
RESOURCE = "http://127.0.0.1:8000/mcp"


async def verify(token: str) -> AuthInfo | None:
    return AuthInfo(subject="alice", scopes=["mcp"], audience=[RESOURCE]) if token == "ok" else None


def protected_server() -> Server:
    auth = ProtectedResource(
        resource=RESOURCE, authorization_servers=["https://as.example"], verifier=verify
    )
    app = Server("guarded", auth=auth)

    @app.tool()
    def hello() -> str:
        return "hi"

    return app


@pytest.mark.parametrize("engine", ["hypercorn", "lean"])
async def test_both_engines_serve_the_declared_auth(
    engine: Literal["hypercorn", "lean"],
) -> None:
    body = json.dumps(
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "clientInfo": {"name": "t", "version": "1"},
            },
        }
    ).encode()
    with trio.fail_after(BOUND):
        async with trio.open_nursery() as nursery:
            port: int = await nursery.start(
                lambda task_status: serve_http(
                    protected_server(), port=0, engine=engine, task_status=task_status
                )
            )
            stream = await trio.open_tcp_stream("127.0.0.1", port)
            client = RawHttp(stream, f"127.0.0.1:{port}")
            status, headers, _ = await client.request("POST", body, HEADERS)
            assert status == 401
            assert "resource_metadata=" in headers["www-authenticate"]
            status, _, _ = await client.request(
                "POST", body, [*HEADERS, ("authorization", "Bearer ok")]
            )
            assert status == 200
            await stream.aclose()
            nursery.cancel_scope.cancel()


def test_a_mounted_app_applies_the_declared_auth() -> None:
    app = protected_server()
    assert create_asgi_app(app).config.auth is app.auth
    assert create_asgi_app(app, config=HttpServerConfig(auth=app.auth)).config.auth is app.auth


def test_a_config_naming_another_protection_is_refused() -> None:
    app = protected_server()
    other = ProtectedResource(
        resource=RESOURCE, authorization_servers=["https://other.example"], verifier=verify
    )

    async def hook(scope: dict[str, object]) -> str:
        return "someone"

    with pytest.raises(ValueError, match=r"HTTP config gives auth= too: keep one"):
        create_asgi_app(app, config=HttpServerConfig(auth=other))
    with pytest.raises(ValueError, match=r"gives authenticate= too"):
        create_asgi_app(app, config=HttpServerConfig(authenticate=hook))


async def test_websocket_refuses_a_protected_server() -> None:
    with pytest.raises(ValueError, match="WebSocket transport cannot apply: serve it over HTTP"):
        await serve_websocket(protected_server(), port=0)


def test_auth_takes_a_protected_resource() -> None:
    with pytest.raises(TypeError, match=r"auth= takes a trimcp\.ProtectedResource, got function"):
        Server("x", auth=cast(Any, verify))
