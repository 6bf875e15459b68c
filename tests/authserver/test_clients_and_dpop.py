"""Client ids that are URLs (client metadata documents), registration checks, and
DPoP-bound tokens from trimcp's authorization server."""

from __future__ import annotations

import secrets
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import jwt
import pytest
import trio

from tests.auth.scripted_browser import fill_in
from tests.authserver.fake_github import FakeGitHub, running_fake_github
from tests.authserver.harness import call_whoami, github_upstream, proxied_server
from tests.authserver.spec_client import Browser, SpecClient, is_consent, log_in, query_of, s256
from trimcp.auth import FollowRedirects, OAuthClient
from trimcp.auth.dpop import DpopKey, DpopProofs
from trimcp.authserver import AuthorizationServer
from trimcp.authserver.clients import RegistrationError, check_redirect_uri, redirect_matches
from trimcp.client import connect_http
from trimcp.errors import McpError

BOUND = 60.0
REDIRECT = "http://127.0.0.1:43210/callback"


@asynccontextmanager
async def setup(
    **options: Any,
) -> AsyncIterator[tuple[FakeGitHub, str, AuthorizationServer, SpecClient]]:
    with trio.fail_after(BOUND):
        async with (
            running_fake_github() as github,
            proxied_server(github_upstream(github), **options) as (url, auth),
        ):
            client = SpecClient(url)
            try:
                await client.discover()
                yield github, url, auth, client
            finally:
                await client.aclose()


async def test_a_client_metadata_document_is_a_client() -> None:
    async with setup(allow_private_client_ids=True) as (github, url, _auth, client):
        client_id = f"{github.base}/client.json"
        browser = Browser()
        try:
            verifier = secrets.token_urlsafe(48)
            start = client.authorization_url(client_id, REDIRECT, s256(verifier), "s")
            page = await browser.go(start, REDIRECT)
            assert is_consent(page)
            assert b"Document client" in page.body
            back = await log_in(browser, start, REDIRECT, "carol")
        finally:
            await browser.aclose()
        assert back.location is not None
        tokens = await client.token(
            {
                "grant_type": "authorization_code",
                "code": query_of(back.location)["code"],
                "redirect_uri": REDIRECT,
                "code_verifier": verifier,
                "client_id": client_id,
            }
        )
        assert tokens.status == 200, tokens.body
        seen = await call_whoami(url, f"Bearer {tokens.json()['access_token']}")
        assert seen["client"] == client_id
        assert seen["login"] == "carol"


async def test_a_client_id_url_on_a_private_address_is_not_fetched() -> None:
    async with setup() as (github, _url, _auth, client):
        browser = Browser()
        try:
            start = client.authorization_url(f"{github.base}/client.json", REDIRECT, "x" * 43, "s")
            page = await browser.go(start, REDIRECT)
        finally:
            await browser.aclose()
        assert page.status == 400
        assert page.location is None
        assert b"non-public address" in page.body or b"https" in page.body
        assert "GET /client.json" not in github.requests


@pytest.mark.parametrize(
    "uri",
    [
        "javascript:alert(1)",
        "data:text/html,x",
        "http://evil.example/cb",  # http only on loopback
        "https://app.example/cb#x",
        "https://user:pw@app.example/cb",
        "myapp:/cb",  # a private-use scheme must be a reversed domain name
        "https:///cb",
    ],
)
def test_registration_refuses_unsafe_redirect_uris(uri: str) -> None:
    with pytest.raises(RegistrationError):
        check_redirect_uri(uri)


def test_loopback_redirects_match_on_any_port_only() -> None:
    assert redirect_matches("http://127.0.0.1/cb", "http://127.0.0.1:5000/cb")
    assert redirect_matches("http://[::1]:1/cb", "http://[::1]:5000/cb")
    assert not redirect_matches("http://127.0.0.1/cb", "http://127.0.0.1:5000/cb2")
    assert not redirect_matches("http://127.0.0.1/cb", "http://127.0.0.2:5000/cb")
    assert not redirect_matches("https://app.example/cb", "https://app.example:444/cb")
    assert not redirect_matches("http://127.0.0.1/cb", "http://127.0.0.1:5000/cb?x=1")


async def test_a_dpop_proof_at_the_token_endpoint_binds_the_tokens() -> None:
    async with setup(dpop=True) as (_github, url, _auth, client):
        client_id = (await client.register([REDIRECT]))["client_id"]
        browser = Browser()
        try:
            verifier = secrets.token_urlsafe(48)
            start = client.authorization_url(client_id, REDIRECT, s256(verifier), "s")
            back = await log_in(browser, start, REDIRECT, "alice")
        finally:
            await browser.aclose()
        assert back.location is not None
        key = DpopKey.generate()
        token_url = client.metadata["token_endpoint"]
        proofs = DpopProofs(key)
        answer = await client.token(
            {
                "grant_type": "authorization_code",
                "code": query_of(back.location)["code"],
                "redirect_uri": REDIRECT,
                "code_verifier": verifier,
                "client_id": client_id,
            },
            proofs.headers("POST", token_url),
        )
        assert answer.status == 200, answer.body
        tokens = answer.json()
        assert tokens["token_type"] == "DPoP"
        claims = jwt.decode(tokens["access_token"], options={"verify_signature": False})
        assert claims["cnf"] == {"jkt": key.thumbprint}
        with pytest.raises(McpError, match="bound to a DPoP key"):
            await call_whoami(url, f"Bearer {tokens['access_token']}")
        refresh = {
            "grant_type": "refresh_token",
            "client_id": client_id,
            "refresh_token": tokens["refresh_token"],
        }
        without = await client.token(refresh)
        assert without.status == 400  # the login is bound to the key
        other = await client.token(
            refresh, DpopProofs(DpopKey.generate()).headers("POST", token_url)
        )
        assert other.json()["error"] == "invalid_dpop_proof"
        again = await client.token(refresh, proofs.headers("POST", token_url))
        assert again.status == 200, again.body
        assert again.json()["token_type"] == "DPoP"


async def test_the_token_endpoint_can_require_dpop_nonces() -> None:
    async with setup(dpop=True, dpop_nonce=True) as (_github, url, _auth, client):
        client_id = (await client.register([REDIRECT]))["client_id"]
        browser = Browser()
        try:
            verifier = secrets.token_urlsafe(48)
            start = client.authorization_url(client_id, REDIRECT, s256(verifier), "s")
            back = await log_in(browser, start, REDIRECT, "alice")
        finally:
            await browser.aclose()
        assert back.location is not None
        token_url = client.metadata["token_endpoint"]
        proofs = DpopProofs(DpopKey.generate())
        form = {
            "grant_type": "authorization_code",
            "code": query_of(back.location)["code"],
            "redirect_uri": REDIRECT,
            "code_verifier": verifier,
            "client_id": client_id,
        }
        # Before: a proof without a nonce was taken (dpop_nonce did not exist).
        first = await client.token(form, proofs.headers("POST", token_url))
        assert first.status == 400, first.body
        assert first.json()["error"] == "use_dpop_nonce"
        assert proofs.remember_nonce(token_url, first.headers["dpop-nonce"])
        second = await client.token(form, proofs.headers("POST", token_url))  # the code holds
        assert second.status == 200, second.body
        assert second.json()["token_type"] == "DPoP"
        assert second.headers["dpop-nonce"]
        # trimcp's own client answers use_dpop_nonce by itself.
        oauth = OAuthClient(
            interaction=FollowRedirects("http://127.0.0.1/callback", login=fill_in),
            dpop=True,
            allow_private_addresses=True,
        )
        async with connect_http(url, auth=oauth) as session:
            result = await session.call_tool("whoami", {})
        assert "alice" in getattr(result.content[0], "text", "")


def _unbound() -> AuthorizationServer:
    from trimcp.authserver import github

    return AuthorizationServer(resource=None, upstream=github("id", "secret"))


async def test_a_server_without_a_resource_is_not_served_by_guess() -> None:
    from trimcp import Server
    from trimcp.transports.http_server import serve_http

    app = Server("unbound", auth=_unbound())
    with pytest.raises(ValueError, match="names no resource"):
        await serve_http(app, port=0)


def test_the_url_served_becomes_the_resource_and_the_issuer() -> None:
    auth = _unbound()
    auth.serve_at("http://127.0.0.1:8123/mcp")
    assert auth.resource == "http://127.0.0.1:8123/mcp"
    assert auth.issuer == "http://127.0.0.1:8123"
    auth.serve_at("http://127.0.0.1:9999/mcp")  # a resource, once known, stays
    assert auth.resource == "http://127.0.0.1:8123/mcp"
