"""An MCP server behind trimcp's own authorization server, on a free loopback port, with
the fake GitHub as its upstream."""

from __future__ import annotations

import json
import socket
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import trio

from tests.authserver.fake_github import CLIENT_ID, CLIENT_SECRET, FakeGitHub
from trimcp import Context, Server
from trimcp.authserver import AuthorizationServer, Upstream
from trimcp.client import connect_http
from trimcp.transports.http_server import serve_http


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def github_upstream(github: FakeGitHub) -> Upstream:
    return Upstream(
        client_id=CLIENT_ID,
        client_secret=CLIENT_SECRET,
        authorize_url=f"{github.base}/login/oauth/authorize",
        token_url=f"{github.base}/login/oauth/access_token",
        user_url=f"{github.base}/user",
        subject_field="id",
        display_name="GitHub",
    )


def whoami_server(auth: AuthorizationServer) -> Server:
    app = Server("proxied", auth=auth)

    @app.tool()
    async def whoami(ctx: Context) -> str:
        assert ctx.auth is not None
        claims = ctx.auth.claims
        return json.dumps(
            {
                "sub": ctx.auth.subject,
                "login": claims.get("login"),
                "idp": claims.get("idp"),
                "client": ctx.auth.client_id,
                "scopes": sorted(ctx.auth.scopes),
            }
        )

    return app


@asynccontextmanager
async def proxied_server(
    upstream: Upstream, port: int | None = None, **options: Any
) -> AsyncIterator[tuple[str, AuthorizationServer]]:
    port = port or free_port()
    url = f"http://127.0.0.1:{port}/mcp"
    options.setdefault("required_scopes", ["mcp"])
    options.setdefault("server_name", "Notes")
    auth = AuthorizationServer(resource=url, upstream=upstream, **options)
    async with trio.open_nursery() as nursery:
        await nursery.start(
            lambda task_status: serve_http(whoami_server(auth), port=port, task_status=task_status)
        )
        yield url, auth
        nursery.cancel_scope.cancel()


async def call_whoami(url: str, authorization: str, **headers: str) -> Any:
    async with connect_http(url, headers={"authorization": authorization, **headers}) as client:
        result = await client.call_tool("whoami", {})
        text = getattr(result.content[0], "text", "")
        return json.loads(text)
