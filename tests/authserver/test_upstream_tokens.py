"""The upstream tokens the application gets (``await auth.upstream_tokens(ctx.auth)``),
from a GitHub-shaped provider whose user tokens expire (a GitHub App's): refreshed at the
provider when they are about to expire, once however many callers ask at that moment,
and kept for the login; None once the provider refuses to refresh an expired one."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from typing import Any

import attrs
import pytest
import trio

from tests.authserver.fake_github import running_fake_github
from tests.authserver.harness import github_upstream, proxied_server
from tests.authserver.spec_client import Browser, SpecClient, query_of, s256
from tests.authserver.spec_client import log_in as spec_log_in
from trimcp.auth.fetch import Fetcher
from trimcp.auth.principal import AuthInfo
from trimcp.authserver import AuthorizationServer

BOUND = 60.0
REDIRECT = "http://127.0.0.1:43210/callback"


async def log_in(url: str, auth: AuthorizationServer, login: str) -> AuthInfo:
    """A login through the spec client: the principal its access token carries."""
    client = SpecClient(url)
    browser = Browser()
    try:
        await client.discover()
        _, tokens = await client.login(browser, login)
    finally:
        await browser.aclose()
        await client.aclose()
    return await auth.grants.verify(tokens["access_token"])


async def user_of(base: str, token: Any) -> Any:
    fetcher = Fetcher(timeout=10)
    try:
        answer = await fetcher.get(
            f"{base}/user", {"authorization": f"Bearer {token}", "user-agent": "test"}
        )
    finally:
        await fetcher.aclose()
    return answer.json()


async def test_an_expiring_upstream_token_is_refreshed_once() -> None:
    with trio.fail_after(BOUND):
        async with (
            running_fake_github() as github,
            proxied_server(github_upstream(github)) as (url, auth),
        ):
            github.expires_in = 30  # less than the margin: due for a refresh at once
            who = await log_in(url, auth, "alice")
            first = github.issued[-1]
            github.expires_in = 8 * 3600
            # Before: the expired token came back as it was, and the provider was never asked.
            answers: list[dict[str, Any] | None] = []

            async def ask() -> None:
                answers.append(await auth.upstream_tokens(who))

            async with trio.open_nursery() as nursery:
                for _ in range(3):
                    nursery.start_soon(ask)
            assert github.refreshes == 1  # one refresh for the three callers
            tokens = answers[0]
            assert tokens is not None
            assert all(answer == tokens for answer in answers)
            assert tokens["access_token"] != first
            assert tokens["access_token"] == github.issued[-1]
            assert (await user_of(github.base, tokens["access_token"]))["login"] == "alice"
            # Kept for the login: fresh now, so asked again it is not refreshed.
            assert await auth.upstream_tokens(who) == tokens
            assert github.refreshes == 1


async def test_a_token_the_provider_will_not_refresh_is_not_handed_out() -> None:
    with trio.fail_after(BOUND):
        async with (
            running_fake_github() as github,
            proxied_server(github_upstream(github)) as (url, auth),
        ):
            github.expires_in = -1  # expired already
            who = await log_in(url, auth, "bob")
            github.refresh_tokens.clear()  # the provider revoked the refresh token
            assert await auth.upstream_tokens(who) is None
            assert github.refreshes == 0
            # A token without a lifetime is handed out as it is, never refreshed.
            github.expires_in = None
            carol = await log_in(url, auth, "carol")
            tokens = await auth.upstream_tokens(carol)
            assert tokens is not None
            assert tokens["access_token"] == github.issued[-1]


@pytest.fixture
def closed_port() -> Iterator[int]:
    """A loopback port nothing listens on: bound, never listening, until the test ends,
    so a connection to it is refused."""
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        yield int(holder.getsockname()[1])


async def test_an_unreachable_token_endpoint_is_an_error_sent_to_the_client(
    closed_port: int,
) -> None:
    # Before: the connection error escaped the callback, and the browser got a bare 500.
    with trio.fail_after(BOUND):
        async with running_fake_github() as github:
            upstream = attrs.evolve(
                github_upstream(github), token_url=f"http://127.0.0.1:{closed_port}/token"
            )
            async with proxied_server(upstream) as (url, _auth):
                client = SpecClient(url)
                browser = Browser()
                try:
                    await client.discover()
                    client_id = (await client.register([REDIRECT]))["client_id"]
                    start = client.authorization_url(client_id, REDIRECT, s256("v" * 43), "s")
                    page = await spec_log_in(browser, start, REDIRECT, "alice")
                finally:
                    await browser.aclose()
                    await client.aclose()
    assert page.location is not None, (page.status, page.body[:300])
    answer = query_of(page.location)
    assert answer["error"] == "access_denied"
    assert "token endpoint failed" in answer["error_description"]
    assert answer["state"] == "s"
