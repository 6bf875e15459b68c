"""DPoP end to end: trimcp's client and a trimcp server that requires DPoP-bound tokens,
with a real authorization server (oidc-provider, DPoP on, nonces required at its token
endpoint) between them. The client asks for DPoP on its own (the server's challenge
names DPoP, the provider lists ES256); both nonces are asked for and honoured; the token
is bound to the key kept in the token store, refreshed with it, and useless to anyone
who steals it. Real sockets, real clock, bounded waits."""

from __future__ import annotations

import time

import attrs
import jwt
import trio

from tests.auth.conftest import OidcProvider
from tests.auth.test_oidc_client import BOUND, ScriptedUser, call_whoami
from tests.auth.test_oidc_server import protected_server
from tests.scale.test_principals import http
from trimcp.auth import (
    DpopChecker,
    DpopKey,
    FollowRedirects,
    JwtVerifier,
    MemoryTokenStore,
    NonceSource,
    OAuthClient,
    ProtectedResource,
)

INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 0,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "thief", "version": "1"},
    },
}


async def assert_stolen_token_refused(url: str, resource: str, token: str) -> None:
    """A DPoP-bound ``token`` sent to ``url`` as Bearer, or with a thief's own proof (for
    ``resource``, the URL the server checks ``htu`` against), gets 401."""
    thief = DpopKey.generate()
    for headers in (
        [("authorization", f"Bearer {token}")],
        [
            ("authorization", f"DPoP {token}"),
            ("dpop", thief.proof("POST", resource, access_token=token)),
        ],
    ):
        status, names, _ = await http(url, "POST", INITIALIZE, headers)
        assert status == 401, headers[0]
        assert "invalid" in names["www-authenticate"]


async def test_dpop_login_refresh_and_a_stolen_token(
    oidc_provider: OidcProvider, free_port: int
) -> None:
    resource = f"http://127.0.0.1:{free_port}/mcp"
    protected = ProtectedResource(
        resource=resource,
        authorization_servers=[oidc_provider.issuer],
        verifier=JwtVerifier(issuer=oidc_provider.issuer),
        required_scopes=["mcp"],
        dpop=DpopChecker(nonces=NonceSource()),
        require_dpop=True,
    )
    store = MemoryTokenStore()
    auth = OAuthClient(
        interaction=FollowRedirects(f"http://127.0.0.1:{free_port}/cb", login=ScriptedUser()),
        store=store,
        client_name="trimcp-dpop-test",
        allow_private_addresses=True,
    )
    with trio.fail_after(BOUND):
        async with protected_server(protected, free_port) as url:
            # 1. Login: DPoP-bound token (AS nonce), then the call (RS nonce).
            seen, session = await call_whoami(url, auth)
            assert seen["sub"] == "alice"
            assert (session.logins, session.refreshes) == (1, 0)
            stored = await store.load(resource)
            assert stored is not None
            assert stored.tokens is not None
            assert stored.dpop_key is not None
            assert stored.tokens.token_type == "DPoP"
            key = DpopKey(stored.dpop_key, stored.dpop_algorithm)
            claims = jwt.decode(stored.tokens.access_token, options={"verify_signature": False})
            assert claims["cnf"] == {"jkt": key.thumbprint}
            # 2. Expired: refreshed with a proof by the same key (a public client's refresh
            # token is bound to it too), no new login, the same key kept.
            expired = attrs.evolve(stored.tokens, expires_at=time.time() - 60)
            await store.save(resource, attrs.evolve(stored, tokens=expired))
            seen, session = await call_whoami(url, auth)
            assert (session.logins, session.refreshes) == (0, 1)
            again = await store.load(resource)
            assert again is not None
            assert again.tokens is not None
            assert again.dpop_key == stored.dpop_key
            token = again.tokens.access_token
            assert token != stored.tokens.access_token
            # 3. The token stolen: as Bearer, or with the thief's own proofs, it is refused.
            await assert_stolen_token_refused(url, url, token)
