"""Each check :class:`IntrospectionVerifier` makes on an RFC 7662 answer, one test apiece:
``active`` must be ``true`` itself, ``exp`` in the past refuses (asked or cached), the
issuer must match, an error status is never trusted, an oversized token is refused
unasked. The introspection endpoint is a scripted HTTP server on a loopback socket; the
real clock runs, every wait is bounded, and the wall clock the verifier reads is faked
where a test needs time to pass."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any
from urllib.parse import parse_qs

import pytest
import trio

from tests.auth.tokens import ISSUER
from tests.http_client.fakeserver import FakeServer, Reply, Request, fake_server
from trimcp.auth import IntrospectionVerifier, InvalidToken
from trimcp.auth.introspection import basic_auth

BOUND = 20.0


class AuthorizationServer:
    """Answers each introspected token from ``answers`` (inactive when unknown)."""

    def __init__(self) -> None:
        self.answers: dict[str, Any] = {}
        self.status = 200

    async def __call__(self, request: Request, reply: Reply) -> None:
        token = parse_qs(request.body.decode())["token"][0]
        await reply.json(self.answers.get(token, {"active": False}), status=self.status)


@asynccontextmanager
async def introspecting(
    **options: Any,
) -> AsyncIterator[tuple[IntrospectionVerifier, AuthorizationServer, FakeServer]]:
    server = AuthorizationServer()
    with trio.fail_after(BOUND):
        async with fake_server(server) as http, trio.open_nursery() as nursery:
            verifier = IntrospectionVerifier(
                f"http://127.0.0.1:{http.port}/introspect",
                client_id="rs",
                client_secret="rs secret",
                **options,
            )
            await nursery.start(verifier.run)
            yield verifier, server, http
            nursery.cancel_scope.cancel()


async def refusal(verifier: IntrospectionVerifier, token: str) -> str:
    with pytest.raises(InvalidToken) as refused:
        await verifier.verify(token)
    return str(refused.value)


def active(**claims: Any) -> dict[str, Any]:
    return {"active": True, "sub": "alice", "scope": "mcp", "exp": time.time() + 600, **claims}


async def test_an_active_answer_is_the_principal() -> None:
    async with introspecting(issuer=ISSUER) as (verifier, server, http):
        server.answers["t"] = active(iss=ISSUER, client_id="c1")
        info = await verifier.verify("t")
        assert (info.subject, info.client_id, info.scopes) == ("alice", "c1", frozenset({"mcp"}))
        [request] = http.of("POST")
        assert request.headers["authorization"] == basic_auth("rs", "rs secret")
        assert parse_qs(request.body.decode())["token_type_hint"] == ["access_token"]


@pytest.mark.parametrize("flag", [False, "true", 1, None, "yes"])
async def test_active_must_be_true_itself(flag: Any) -> None:
    async with introspecting() as (verifier, server, _):
        server.answers["t"] = {**active(), "active": flag}
        assert await refusal(verifier, "t") == (
            "the token is not active (expired, revoked or unknown)"
        )


async def test_an_answer_past_its_exp_is_refused() -> None:
    # The authorization server says active, but its own exp has passed (a stale cache
    # there, or clock skew): refused, and not cached.
    async with introspecting() as (verifier, server, _):
        server.answers["t"] = active(exp=time.time() - 10)
        assert await refusal(verifier, "t") == "the token has expired"
        assert await refusal(verifier, "t") == "the token has expired"
        assert verifier.calls == 2


class WallClock:
    """The wall clock the verifier reads (``time.time``), moved by the test."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        import trimcp.auth.introspection

        self.now = time.time()
        monkeypatch.setattr(trimcp.auth.introspection, "time", self)

    def time(self) -> float:
        return self.now


async def test_a_cached_answer_is_refused_past_its_exp(monkeypatch: pytest.MonkeyPatch) -> None:
    wall = WallClock(monkeypatch)
    async with introspecting(cache_ttl=3600) as (verifier, server, _):
        server.answers["t"] = active(exp=wall.now + 5)
        first = await verifier.verify("t")
        assert await verifier.verify("t") is first
        assert verifier.calls == 1  # the second came from the cache
        wall.now += 6
        assert await refusal(verifier, "t") == "the token has expired"
        assert verifier.calls == 2


async def test_another_issuers_answer_is_refused() -> None:
    async with introspecting(issuer=ISSUER) as (verifier, server, _):
        server.answers["theirs"] = active(iss="https://other-as.example.com")
        server.answers["unnamed"] = active()  # no iss: the endpoint is the issuer's own
        assert await refusal(verifier, "theirs") == "the token was issued by another issuer"
        assert (await verifier.verify("unnamed")).subject == "alice"


@pytest.mark.parametrize("status", [201, 401, 500])
async def test_an_error_status_is_never_trusted(status: int) -> None:
    async with introspecting() as (verifier, server, _):
        server.status = status
        server.answers["t"] = active()
        reason = await refusal(verifier, "t")
        assert reason == f"the token could not be introspected: HTTP {status}"


async def test_an_oversized_token_is_refused_unasked() -> None:
    async with introspecting(max_token_bytes=100) as (verifier, server, http):
        server.answers["x" * 101] = active()
        assert await refusal(verifier, "x" * 101) == "the token is longer than 100 bytes"
        assert http.requests == []
