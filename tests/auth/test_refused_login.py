"""A login that is refused ends with one clear error, after one login: the client does
not fall back to another era (which meets the same gate and would log in again), the
browser page says the authorization server refused (never "Authorized"), and a scope the
authorization server did not grant is named instead of asked for again and again."""

from __future__ import annotations

from typing import Any

import pytest
import trio

from tests.auth.test_declared_auth import protected_server
from trimcp import McpError, connect_http
from trimcp.auth import AuthorizationFailed
from trimcp.auth.client import not_granted
from trimcp.auth.discovery import Challenge
from trimcp.auth.interaction import _page
from trimcp.auth.tokens import StoredAuth, TokenSet
from trimcp.transports.http_server import serve_http

BOUND = 30.0


class RefusedLogin:
    """An ``auth=`` whose every login the authorization server refuses; counts logins."""

    def __init__(self) -> None:
        self.logins = 0

    def session(self, server_url: str, spawn: Any) -> RefusedLogin:
        return self

    async def authorization(self) -> str | None:
        return None

    async def challenge(self, status: int, www_authenticate: str | None, used: str | None) -> None:
        self.logins += 1
        raise AuthorizationFailed("the authorization server https://as.example refused: no")


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_a_refused_login_is_one_login_and_one_error(mode: str) -> None:
    auth = RefusedLogin()
    with trio.fail_after(BOUND):
        async with trio.open_nursery() as nursery:
            port: int = await nursery.start(
                lambda task_status: serve_http(protected_server(), port=0, task_status=task_status)
            )
            with pytest.raises(McpError) as refused:
                async with connect_http(
                    f"http://127.0.0.1:{port}/mcp", auth=auth, mode=mode
                ):  # pragma: no cover - the connection is refused
                    pass
            nursery.cancel_scope.cancel()
    assert auth.logins == 1
    assert refused.value.message.startswith(f"HTTP 401 from http://127.0.0.1:{port}/mcp: ")
    assert "the authorization server https://as.example refused" in refused.value.message


def test_the_browser_page_shows_a_refusal_as_one() -> None:
    assert b"<title>Authorized</title>" in _page("/callback?code=abc&state=s")
    page = _page("/callback?error=access_denied&error_description=%3Cb%3Eno%3C/b%3E&state=s")
    assert b"<title>Not authorized</title>" in page
    assert b"access_denied: &lt;b&gt;no&lt;/b&gt;" in page  # escaped, never markup


def test_a_scope_asked_for_and_not_granted_is_named() -> None:
    stored = StoredAuth(tokens=TokenSet(access_token="t", scope="notes offline_access"))
    challenge = Challenge(params={"error": "insufficient_scope", "scope": "notes notes:write"})
    asked = frozenset({"notes", "notes:write", "offline_access"})
    assert not_granted(challenge, asked, stored) == ["notes:write"]
    # Not asked for yet (a step-up for a tool): worth a login.
    assert not_granted(challenge, frozenset({"notes"}), stored) == []
    # The authorization server did not say what it granted: a step-up may still help.
    unknown = StoredAuth(tokens=TokenSet(access_token="t"))
    assert not_granted(challenge, asked, unknown) == []
