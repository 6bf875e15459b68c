"""One refresh (or login) per connection, whatever the number of requests that met the
401, and a caller that gives up does not stop it for the others (autojump clock)."""

from __future__ import annotations

from typing import Any

import attrs
import pytest
import trio
import trio.testing

from trimcp.auth import AuthorizationFailed, OAuthClient, TokenSet
from trimcp.auth.client import AuthSession
from trimcp.auth.discovery import Discovery
from trimcp.auth.fetch import Fetcher
from trimcp.auth.tokens import ClientRegistration, StoredAuth

FOUND = Discovery(
    resource="http://127.0.0.1:1/mcp",
    issuer="https://as.example",
    metadata={"token_endpoint": "https://as.example/token"},
)
OLD = StoredAuth(
    tokens=TokenSet(access_token="old", refresh_token="r1"),
    registration=ClientRegistration(client_id="c"),
)


class SlowRefresh(OAuthClient):
    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self.refreshes = 0
        self.release = trio.Event()
        self.fail = False

    async def refresh(self, fetcher: Fetcher, found: Discovery, stored: StoredAuth) -> StoredAuth:
        self.refreshes += 1
        await self.release.wait()
        if self.fail:
            raise AuthorizationFailed("the refresh token was revoked")
        assert stored.tokens is not None
        return attrs.evolve(
            stored, tokens=TokenSet(access_token=f"new{self.refreshes}", refresh_token="r2")
        )


async def make_session(client: SlowRefresh, nursery: trio.Nursery) -> AuthSession:
    await client.store.save("http://127.0.0.1:1/mcp", OLD)
    session = client.session("http://127.0.0.1:1/mcp", nursery.start_soon)
    session._found = FOUND  # no discovery over HTTP in this test
    assert await session.authorization() == "Bearer old"
    return session


async def test_many_401s_one_refresh_and_a_cancelled_caller_does_not_stop_it(
    autojump_clock: trio.abc.Clock,
) -> None:
    client = SlowRefresh()
    done: list[str | None] = []
    async with trio.open_nursery() as nursery:
        session = await make_session(client, nursery)

        async def request() -> None:
            await session.challenge(401, 'Bearer error="invalid_token"', "Bearer old")
            done.append(session.access_token)

        for _ in range(5):
            nursery.start_soon(request)
        with trio.move_on_after(1):  # this caller gives up while the refresh runs
            await session.challenge(401, None, "Bearer old")
        await trio.testing.wait_all_tasks_blocked()
        assert client.refreshes == 1
        client.release.set()
    assert done == ["new1"] * 5
    assert client.refreshes == 1
    assert session.refreshes == 1
    stored = await client.store.load("http://127.0.0.1:1/mcp")
    assert stored is not None
    assert stored.tokens is not None
    assert stored.tokens.access_token == "new1"
    # A request that carried the old token after the refresh does not refresh again.
    async with trio.open_nursery() as nursery:
        session._spawn = nursery.start_soon
        await session.challenge(401, None, "Bearer old")
    assert client.refreshes == 1


async def test_a_failed_refresh_without_a_way_to_log_in_fails_every_waiter(
    autojump_clock: trio.abc.Clock,
) -> None:
    client = SlowRefresh()  # no interaction: no login possible
    client.fail = True
    errors: list[str] = []
    async with trio.open_nursery() as nursery:
        session = await make_session(client, nursery)

        async def request() -> None:
            try:
                await session.challenge(401, None, "Bearer old")
            except AuthorizationFailed as exc:
                errors.append(str(exc))

        for _ in range(3):
            nursery.start_soon(request)
        await trio.testing.wait_all_tasks_blocked()
        client.release.set()
    assert len(errors) == 3
    assert all("no way to ask" in e for e in errors)
    assert client.refreshes == 1


async def test_flow_timeout_bounds_the_wait(autojump_clock: trio.abc.Clock) -> None:
    client = SlowRefresh(flow_timeout=10)
    async with trio.open_nursery() as nursery:
        session = await make_session(client, nursery)
        start = trio.current_time()
        with pytest.raises(AuthorizationFailed, match="within 10 s"):
            await session.challenge(401, None, "Bearer old")
        assert trio.current_time() - start <= 15
