"""trimcp's resource server against a real authorization server (oidc-provider): it
validates the provider's JWT access tokens (keys from its JWKS), and, with opaque tokens,
asks its introspection endpoint; a revoked token is refused. Real sockets, real clock:
every wait is bounded."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest
import trio

from tests.auth.conftest import OidcProvider
from trimcp import Context, Server
from trimcp.auth import IntrospectionVerifier, JwtVerifier, ProtectedResource
from trimcp.auth.fetch import Fetcher
from trimcp.auth.introspection import basic_auth
from trimcp.client import connect_http
from trimcp.errors import McpError
from trimcp.transports.http_server import HttpServerConfig, serve_http

BOUND = 30.0


def whoami_server() -> Server:
    app = Server("protected")

    @app.tool()
    async def whoami(ctx: Context) -> str:
        auth = ctx.auth
        assert auth is not None
        return json.dumps(
            {"sub": auth.subject, "client": auth.client_id, "scopes": sorted(auth.scopes)}
        )

    return app


@asynccontextmanager
async def protected_server(resource: ProtectedResource, port: int) -> AsyncIterator[str]:
    async with trio.open_nursery() as nursery:
        await nursery.start(
            lambda task_status: serve_http(
                whoami_server(),
                port=port,
                config=HttpServerConfig(auth=resource),
                task_status=task_status,
            )
        )
        yield f"http://127.0.0.1:{port}/mcp"
        nursery.cancel_scope.cancel()


async def client_credentials(oidc: OidcProvider, resource: str, scope: str = "mcp") -> str:
    fetcher = Fetcher(timeout=BOUND)
    try:
        response = await fetcher.post_form(
            oidc.token_url,
            {"grant_type": "client_credentials", "scope": scope, "resource": resource},
            {"authorization": basic_auth("machine", "machine-secret")},
        )
    finally:
        await fetcher.aclose()
    assert response.status == 200, response.body
    token: str = response.json()["access_token"]
    return token


async def whoami(url: str, token: str) -> Any:
    async with connect_http(url, headers={"authorization": f"Bearer {token}"}) as client:
        result = await client.call_tool("whoami", {})
        return json.loads(result.content[0].text)  # type: ignore[union-attr]


async def test_jwt_access_tokens_from_oidc_provider(
    oidc_provider: OidcProvider, free_port: int
) -> None:
    resource = f"http://127.0.0.1:{free_port}/mcp"
    protected = ProtectedResource(
        resource=resource,
        authorization_servers=[oidc_provider.issuer],
        verifier=JwtVerifier(issuer=oidc_provider.issuer),  # JWKS found by discovery
        required_scopes=["mcp"],
    )
    with trio.fail_after(BOUND):
        async with protected_server(protected, free_port) as url:
            token = await client_credentials(oidc_provider, resource)
            seen = await whoami(url, token)
            assert seen == {"sub": "machine", "client": "machine", "scopes": ["mcp"]}
            # A token for another resource (audience) is refused with 401.
            other = await client_credentials(oidc_provider, "http://127.0.0.1:1/mcp")
            with pytest.raises(McpError, match="another audience"):
                await whoami(url, other)


async def test_introspection_against_oidc_provider(
    oidc_provider: OidcProvider, free_port: int
) -> None:
    resource = f"http://127.0.0.1:{free_port}/opaque"
    verifier = IntrospectionVerifier(
        f"{oidc_provider.issuer}/token/introspection",
        client_id="rs",
        client_secret="rs-secret",
        issuer=oidc_provider.issuer,
        cache_ttl=0.001,
    )
    protected = ProtectedResource(
        resource=resource,
        authorization_servers=[oidc_provider.issuer],
        verifier=verifier,
        required_scopes=["mcp"],
    )
    with trio.fail_after(BOUND):
        async with trio.open_nursery() as nursery:
            await nursery.start(
                lambda task_status: serve_http(
                    whoami_server(),
                    port=free_port,
                    path="/opaque",
                    config=HttpServerConfig(auth=protected),
                    task_status=task_status,
                )
            )
            token = await client_credentials(oidc_provider, resource)
            assert token.count(".") != 2  # opaque, not a JWT
            seen = await whoami(resource, token)
            assert seen["client"] == "machine"
            assert seen["scopes"] == ["mcp"]
            assert verifier.calls >= 1
            # Revoked at the authorization server: refused at the next check.
            fetcher = Fetcher(timeout=BOUND)
            response = await fetcher.post_form(
                f"{oidc_provider.issuer}/token/revocation",
                {"token": token},
                {"authorization": basic_auth("machine", "machine-secret")},
            )
            await fetcher.aclose()
            assert response.status == 200
            await trio.sleep(0.01)  # past the (tiny) cache lifetime: real clock
            with pytest.raises(McpError, match="not active"):
                await whoami(resource, token)
            nursery.cancel_scope.cancel()
