"""Where an interactive client's refresh token and client secret go
(docs/authorization.md, "Where credentials go").

Tokens and a registration belong to the authorization server that issued them: a refresh
goes only to that issuer's token endpoint (from its own metadata), and a client secret
only to the issuer it is registered at. When the MCP server names another authorization
server later, the client logs in there afresh (registering anew) or, for a pre-registered
client, refuses; the other server never sees the old refresh token or secret. Real
loopback servers (the fixtures of ``test_credential_destinations``): the MCP server, the
authorization server the client first logged in at, and a foreign one recording every
request it receives.
"""

from __future__ import annotations

import logging
import time
from pathlib import Path
from typing import Any

import attrs
import pytest

from tests.auth.scripted_browser import fill_in
from tests.auth.test_credential_destinations import (
    COMMON,
    REFRESH,
    REGISTERED,
    SECRET,
    World,
    assert_names_both_and_the_setting,
    refused,
    signed,
    tools_of,
    world,
)
from trimcp.auth import (
    ClientCredentials,
    FileTokenStore,
    FollowRedirects,
    MemoryTokenStore,
    OAuthClient,
    TokenSet,
    TokenStore,
    WorkloadIdentity,
)
from trimcp.auth.discovery import MAX_AUTHORIZATION_SERVERS
from trimcp.auth.tokens import ClientRegistration, StoredAuth


def browser() -> FollowRedirects:
    """The scripted user: fills in the login form of whichever server it is sent to."""
    return FollowRedirects("http://127.0.0.1:9/callback", login=fill_in, timeout=10.0)


async def logged_in_at_the_real_server(w: World, store: TokenStore, **options: Any) -> None:
    """A first connection: the user logs in at the real authorization server."""
    auth = OAuthClient(interaction=browser(), store=store, **options, **COMMON)
    assert await tools_of(w.mcp.url, auth) == ["echo"]
    assert w.real.logins == ["alice"]
    stored = await store.load(w.mcp.url)
    assert stored is not None
    assert stored.tokens is not None
    assert stored.tokens.refresh_token == REFRESH


async def expire(store: TokenStore, key: str) -> None:
    stored = await store.load(key)
    assert stored is not None
    assert stored.tokens is not None
    tokens = attrs.evolve(stored.tokens, expires_at=time.time() - 60)
    await store.save(key, attrs.evolve(stored, tokens=tokens))


def now_names_the_foreign_server(w: World) -> None:
    """The MCP server turns hostile: it names a foreign authorization server and takes
    only that server's tokens (so the client must get new ones)."""
    w.mcp.names = lambda: w.foreign.issuer
    w.mcp.accepts = {w.foreign.access_token}


@pytest.mark.parametrize("when", ["expired", "refused"])
async def test_a_registered_client_logs_in_afresh_where_the_mcp_server_now_points(
    when: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Dynamically registered at the real server (a confidential client), then the MCP
    server names a foreign one: the refresh token and the registered secret stay home,
    the client registers at the foreign server and the user logs in there, with a
    warning naming both servers. ``expired``: the refresh is the one made before a
    request; ``refused``: the one made after a 401."""
    store = FileTokenStore(tmp_path / "tokens.json")
    async with world("real") as w:
        await logged_in_at_the_real_server(w, store)
        stored = await store.load(w.mcp.url)
        assert stored is not None
        assert stored.tokens is not None
        assert stored.tokens.issuer == w.real.issuer
        assert stored.registration is not None
        assert stored.registration.issuer == w.real.issuer
        now_names_the_foreign_server(w)
        if when == "expired":
            await expire(store, w.mcp.url)
        caplog.set_level(logging.WARNING, logger="trimcp.auth")
        auth = OAuthClient(interaction=browser(), store=store, **COMMON)
        tools = await tools_of(w.mcp.url, auth)
        assert w.foreign.carrying([REFRESH, REGISTERED]) == []
        assert not [form for form in w.foreign.forms() if form.get("grant_type") == "refresh_token"]
    assert tools == ["echo"]
    assert w.foreign.logins == ["alice"]
    stored = await store.load(w.mcp.url)
    assert stored is not None
    assert stored.tokens is not None
    assert stored.registration is not None
    assert stored.tokens.issuer == w.foreign.issuer
    assert stored.registration.issuer == w.foreign.issuer
    warnings = [r for r in caplog.records if r.name == "trimcp.auth"]
    [warning] = [r.getMessage() for r in warnings if r.levelno == logging.WARNING]
    assert w.real.issuer in warning
    assert w.foreign.issuer in warning
    assert w.mcp.url in warning


async def test_a_pre_registered_client_secret_stays_with_the_server_it_logged_in_at() -> None:
    """Pre-registered (``client_id`` + ``client_secret``), no setting: the server of the
    first login is where the secret belongs; a later foreign one gets nothing and the
    error says how to send it there if that is right."""
    store = MemoryTokenStore()
    async with world("real") as w:
        await logged_in_at_the_real_server(w, store, client_id="app", client_secret=SECRET)
        now_names_the_foreign_server(w)
        auth = OAuthClient(
            interaction=browser(), store=store, client_id="app", client_secret=SECRET, **COMMON
        )
        message = await refused(w.mcp.url, auth)
        assert w.foreign.carrying([REFRESH, SECRET]) == []
        assert w.foreign.posts == []
        assert w.foreign.logins == []
    assert_names_both_and_the_setting(message, w)
    assert message is not None
    assert w.real.issuer in message


@pytest.mark.parametrize("names", ["real", "foreign"])
async def test_the_setting_says_where_a_pre_registered_client_belongs(names: str) -> None:
    """``authorization_server=``: the pre-registered secret goes there only, even on the
    first login (no stored login to go by)."""
    async with world(names) as w:
        auth = OAuthClient(
            interaction=browser(),
            client_id="app",
            client_secret=SECRET,
            authorization_server=w.real.issuer,
            **COMMON,
        )
        if names == "foreign":
            message = await refused(w.mcp.url, auth)
            assert w.foreign.carrying([SECRET]) == []
            assert w.foreign.posts == []
            assert w.foreign.logins == []
        else:
            assert await tools_of(w.mcp.url, auth) == ["echo"]
            exchanges = [r for r in w.real.posts if r.target == "/token"]
            assert len(exchanges) == 1
            assert w.real.carrying([SECRET]) == exchanges
    if names == "foreign":
        assert_names_both_and_the_setting(message, w)


async def test_a_refresh_goes_to_the_issuer_of_the_tokens_while_the_mcp_server_lists_it() -> None:
    """The MCP server now lists the foreign server first and the real one second: the
    refresh goes to the real one (its own token endpoint), no new login."""
    store = MemoryTokenStore()
    async with world("real") as w:
        await logged_in_at_the_real_server(w, store)
        w.mcp.names = lambda: [w.foreign.issuer, w.real.issuer]
        await expire(store, w.mcp.url)
        auth = OAuthClient(interaction=browser(), store=store, **COMMON)
        assert await tools_of(w.mcp.url, auth) == ["echo"]
        assert w.foreign.carrying([REFRESH, REGISTERED]) == []
        assert w.foreign.posts == []
        refreshes = [f for f in w.real.forms() if f.get("grant_type") == "refresh_token"]
        assert [f["refresh_token"] for f in refreshes] == [REFRESH]
    assert w.real.logins == ["alice"]
    assert w.foreign.logins == []


@pytest.mark.parametrize("first", ["missing", "broken"])
async def test_a_trusted_server_later_in_the_list_is_used(first: str) -> None:
    """The MCP server lists an authorization server without usable metadata first (none
    at all, or metadata naming another issuer), then the one the workload token names:
    the token goes to the second, instead of the connection failing on the first."""
    async with world("real") as w:
        assert w.mcp.server is not None
        assert w.foreign.server is not None
        # The MCP server serves no authorization server metadata (404); the foreign
        # server serves its own at any well-known path, naming itself (so not "/tenant").
        host = w.mcp.server.port if first == "missing" else w.foreign.server.port
        unusable = f"http://127.0.0.1:{host}/tenant"
        w.mcp.names = lambda: [unusable, w.real.issuer]
        token = signed({"sub": "pod", "aud": w.real.issuer})
        assert await tools_of(w.mcp.url, WorkloadIdentity(token=token, **COMMON)) == ["echo"]
        assert [form["assertion"] for form in w.real.forms()] == [token]
        assert w.foreign.posts == []


async def test_discovery_tries_a_bounded_number_of_listed_servers() -> None:
    """A list of servers without metadata costs at most MAX_AUTHORIZATION_SERVERS of them
    (three GETs each), and the error names each one tried."""
    async with world("real") as w:
        assert w.mcp.server is not None
        unusable = [f"http://127.0.0.1:{w.mcp.server.port}/as{n}" for n in range(10)]
        w.mcp.names = lambda: unusable
        token = signed({"sub": "pod", "aud": w.real.issuer})
        message = await refused(w.mcp.url, WorkloadIdentity(token=token, **COMMON))
        asked = [r.target for r in w.mcp.server.requests if "/as" in r.target]
    assert message is not None
    limit = MAX_AUTHORIZATION_SERVERS
    assert f"none of the first {limit} authorization servers" in message
    assert all(server in message for server in unusable[:limit])
    assert unusable[limit] not in message
    assert len(asked) == 3 * limit


async def test_a_non_interactive_client_refreshes_only_tokens_its_setting_issued() -> None:
    """Stored tokens from another issuer (the setting changed since): their refresh token
    goes nowhere, the client-credentials grant runs again at the configured server."""
    store = MemoryTokenStore()
    async with world("real") as w:
        stored = StoredAuth(
            tokens=TokenSet(
                access_token="old",
                expires_at=time.time() - 60,
                refresh_token=REFRESH,
                issuer=w.foreign.issuer,
            ),
            registration=ClientRegistration(client_id="bot", issuer=w.foreign.issuer),
        )
        await store.save(w.mcp.url, stored)
        auth = ClientCredentials(
            client_id="bot",
            client_secret=SECRET,
            authorization_server=w.real.issuer,
            store=store,
            **COMMON,
        )
        assert await tools_of(w.mcp.url, auth) == ["echo"]
        assert w.real.carrying([REFRESH]) == []
        assert [form["grant_type"] for form in w.real.forms()] == ["client_credentials"]
        assert w.foreign.posts == []
