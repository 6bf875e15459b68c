"""examples/oauth_proxy_server.py as the issue's held-out check runs it: ``trimcp run``
on the file, configured by ``UPSTREAM_*`` for a GitHub-shaped provider on loopback, and
a client written from the specs (tests/authserver/spec_client.py). Its metadata; two users
logging in through two fresh registrations with PKCE and calling ``whoami``; the consent
page before the provider is reached; no upstream token in what the client gets, and one
sent to the MCP server refused; an unregistered redirect URI never redirected to; a wrong
PKCE verifier gets no token; a refresh token works."""

from __future__ import annotations

import re
import secrets
import signal
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import pytest
import trio

from tests.authserver.fake_github import CLIENT_ID, CLIENT_SECRET, FakeGitHub, running_fake_github
from tests.authserver.harness import free_port
from tests.authserver.spec_client import (
    Browser,
    SpecClient,
    is_consent,
    log_in,
    query_of,
    s256,
)
from tests.cli.support import ROOT, read_line, reap, spawn, stop
from trimcp import connect_http
from trimcp.errors import McpError

EXAMPLE = str(ROOT / "examples" / "oauth_proxy_server.py")
BOUND = 120.0
REDIRECT = "http://127.0.0.1:43210/callback"


@asynccontextmanager
async def the_example() -> AsyncIterator[tuple[FakeGitHub, str]]:
    async with running_fake_github() as github:
        port = free_port()
        server = spawn(
            "run", EXAMPLE, "--transport", "http", "--port", str(port),
            env={
                "UPSTREAM_AUTHORIZE_URL": f"{github.base}/login/oauth/authorize",
                "UPSTREAM_TOKEN_URL": f"{github.base}/login/oauth/access_token",
                "UPSTREAM_USER_URL": f"{github.base}/user",
                "UPSTREAM_CLIENT_ID": CLIENT_ID,
                "UPSTREAM_CLIENT_SECRET": CLIENT_SECRET,
                "UPSTREAM_ISSUER": "",
            },
        )  # fmt: skip
        try:
            assert server.stderr is not None
            line = await trio.to_thread.run_sync(read_line, server.stderr)
            assert "serving 'whoami'" in line, line
            yield github, f"http://127.0.0.1:{port}/mcp"
            server.send_signal(signal.SIGTERM)
            assert await trio.to_thread.run_sync(stop, server) == 0
        finally:
            reap(server)


async def whoami(url: str, token: str) -> str:
    async with connect_http(url, headers={"authorization": f"Bearer {token}"}) as session:
        result = await session.call_tool("whoami", {})
    return str(getattr(result.content[0], "text", ""))


async def test_the_example_in_front_of_a_github_shaped_provider() -> None:
    with trio.fail_after(BOUND):
        async with the_example() as (github, url):
            client = SpecClient(url)
            try:
                await check(client, github, url)
            finally:
                await client.aclose()


async def check(client: SpecClient, github: FakeGitHub, url: str) -> None:
    origin = url.removesuffix("/mcp")
    meta = await client.discover()
    assert client.resource_metadata["resource"] == url
    assert client.resource_metadata["authorization_servers"] == [origin]
    assert meta["issuer"] == origin
    assert meta["registration_endpoint"] == f"{origin}/oauth/register"
    assert meta["code_challenge_methods_supported"] == ["S256"]
    assert "refresh_token" in meta["grant_types_supported"]
    assert "none" in meta["token_endpoint_auth_methods_supported"]

    tokens = {}
    for user in ("alice", "bob"):
        client_id = (await client.register([REDIRECT]))["client_id"]
        verifier = secrets.token_urlsafe(48)
        start = client.authorization_url(client_id, REDIRECT, s256(verifier), "st")
        browser = Browser()
        try:
            before = list(github.requests)
            consent = await browser.go(start, REDIRECT)
            assert is_consent(consent)  # before the provider saw anything
            assert github.requests == before
            back = await log_in(browser, start, REDIRECT, user)
        finally:
            await browser.aclose()
        assert back.location is not None
        code = query_of(back.location)["code"]
        form = {
            "grant_type": "authorization_code",
            "code": code,
            "redirect_uri": REDIRECT,
            "client_id": client_id,
        }
        if user == "bob":  # a wrong verifier: no token, and the code is spent
            wrong = await client.token({**form, "code_verifier": secrets.token_urlsafe(48)})
            assert wrong.status == 400
            assert wrong.json()["error"] == "invalid_grant"
            assert (await client.token({**form, "code_verifier": verifier})).status == 400
            again = Browser()
            try:
                _, answer = await client.login(again, user, client_id=client_id)
            finally:
                await again.aclose()
        else:
            response = await client.token({**form, "code_verifier": verifier})
            assert response.status == 200, response.body
            answer = response.json_object("tokens")
            for upstream in github.issued:  # the client never holds an upstream token
                assert upstream not in response.body.decode()
        tokens[user] = (client_id, answer)
        said = await whoami(url, answer["access_token"])
        assert re.fullmatch(
            rf"{user} \(user \d+ at {re.escape(github.base)}\) via {client_id}", said
        )
    assert tokens["alice"][0] != tokens["bob"][0]

    # An upstream token is refused by the MCP server.
    with pytest.raises(McpError, match="the token is not a signed JWT"):
        await whoami(url, github.issued[-1])

    # A redirect URI the client did not register: a page, never a redirect.
    client_id = tokens["alice"][0]
    browser = Browser()
    try:
        evil = client.authorization_url(client_id, "https://evil.example/cb", "x" * 43, "st")
        page = await browser.go(evil, "https://evil.example")
    finally:
        await browser.aclose()
    assert page.status == 400
    assert page.location is None

    # A refresh token works (and rotates).
    refreshed = await client.token(
        {
            "grant_type": "refresh_token",
            "client_id": client_id,
            "refresh_token": tokens["alice"][1]["refresh_token"],
        }
    )
    assert refreshed.status == 200, refreshed.body
    rotated = refreshed.json_object("tokens")
    assert rotated["refresh_token"] != tokens["alice"][1]["refresh_token"]
    assert (await whoami(url, rotated["access_token"])).startswith("alice ")
