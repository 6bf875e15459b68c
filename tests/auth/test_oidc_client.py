"""trimcp's client against a real authorization server (oidc-provider) and a trimcp
server that asks it about every token (introspection): dynamic registration, the full
authorization-code + PKCE flow with a scripted login, refresh of an expired token, and a
clean failure once the tokens are revoked. Real sockets, real clock, bounded waits."""

from __future__ import annotations

import json
import re
import time
from typing import Any

import attrs
import pytest
import trio

from tests.auth.conftest import OidcProvider
from tests.auth.test_oidc_server import whoami_server
from trimcp.auth import (
    FollowRedirects,
    IntrospectionVerifier,
    MemoryTokenStore,
    OAuthClient,
    ProtectedResource,
)
from trimcp.auth.fetch import Fetcher
from trimcp.client import connect_transport
from trimcp.errors import McpError
from trimcp.transports.http_client import open_http_client_transport
from trimcp.transports.http_server import HttpServerConfig, serve_http

BOUND = 60.0


class ScriptedUser:
    """Fills in oidc-provider's login form as ``login`` (when allowed)."""

    def __init__(self, login: str = "alice") -> None:
        self.login = login
        self.allowed = True
        self.pages = 0

    def __call__(self, url: str, body: bytes) -> tuple[str, dict[str, str]] | None:
        self.pages += 1
        action = re.search(rb'action="([^"]+)"', body)
        if not self.allowed or action is None:
            return None
        return action.group(1).decode(), {"login": self.login}


async def call_whoami(url: str, auth: OAuthClient) -> tuple[Any, Any]:
    async with (
        open_http_client_transport(url, auth=auth, timeout=BOUND) as transport,
        connect_transport(transport) as client,
    ):
        result = await client.call_tool("whoami", {})
        text = result.content[0].text  # type: ignore[union-attr]
        return json.loads(text), transport.auth


async def test_login_refresh_and_revocation_with_oidc_provider(
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
    user = ScriptedUser()
    store = MemoryTokenStore()
    auth = OAuthClient(
        interaction=FollowRedirects(f"http://127.0.0.1:{free_port}/callback", login=user),
        store=store,
        client_name="trimcp-test",
        allow_private_addresses=True,
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
            # 1. The full flow: 401, discovery, registration, login, code + PKCE, token.
            seen, session = await call_whoami(resource, auth)
            assert seen["sub"] == "alice"
            assert "mcp" in seen["scopes"]
            assert (session.logins, session.refreshes) == (1, 0)
            assert user.pages == 1
            stored = await store.load(resource)
            assert stored is not None
            assert stored.tokens is not None
            assert stored.tokens.refresh_token  # offline_access was offered and asked for
            assert stored.registration is not None
            assert stored.registration.client_id  # dynamically registered
            # 2. The stored token expired: the next connection refreshes, no login.
            expired = attrs.evolve(stored.tokens, expires_at=time.time() - 60)
            await store.save(resource, attrs.evolve(stored, tokens=expired))
            seen, session = await call_whoami(resource, auth)
            assert seen["sub"] == "alice"
            assert (session.logins, session.refreshes) == (0, 1)
            # 3. Revoked at the authorization server: the refresh fails, a new login is
            # refused by the user, and the call fails with a clear error (no hang).
            stored = await store.load(resource)
            assert stored is not None
            assert stored.tokens is not None
            assert stored.registration is not None
            fetcher = Fetcher(timeout=BOUND)
            for token in (stored.tokens.access_token, stored.tokens.refresh_token):
                assert token is not None
                response = await fetcher.post_form(
                    f"{oidc_provider.issuer}/token/revocation",
                    {"token": token, "client_id": stored.registration.client_id},
                )
                assert response.status == 200, response.body
            await fetcher.aclose()
            user.allowed = False
            await trio.sleep(0.01)  # past the verifier's (tiny) cache lifetime: real clock
            with pytest.raises(McpError, match="authorization failed") as caught:
                await call_whoami(resource, auth)
            assert caught.value.data["httpStatus"] == 401
            nursery.cancel_scope.cancel()
