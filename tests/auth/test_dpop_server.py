"""DPoP on the resource server (RFC 9449 §4.3, §7, §9): a DPoP-bound token is accepted
only with a fresh proof, made by the key it is bound to, for this method and URL, never
twice, and with the server's nonce when one is required; it is never accepted as Bearer.

Driven through the ASGI app under the autojump clock; tokens are JWTs from
``tests/auth/tokens`` carrying ``cnf.jkt``; proofs come from :class:`DpopKey` or are made
by hand (PyJWT) where a test needs a bad one.
"""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import jwt
import pytest
import trio

from tests.auth.test_server_jwt import KEY, Calls, bearer, make_resource, make_server
from tests.auth.tokens import RESOURCE, KeySet
from tests.http_server.helpers import AsgiClient, init_request, running_app
from trimcp.auth import ProtectedResource
from trimcp.auth.dpop import (
    DpopChecker,
    DpopError,
    DpopKey,
    MemoryReplayCache,
    NonceSource,
    access_token_hash,
    jwk_thumbprint,
)
from trimcp.transports.http_server import HttpServerConfig

CLIENT_KEY = DpopKey.generate()
THIEF_KEY = DpopKey.generate()


def bound_token(key: DpopKey = CLIENT_KEY, **claims: Any) -> str:
    return KEY.mint(cnf={"jkt": key.thumbprint}, **claims)


def dpop(
    token: str,
    key: DpopKey = CLIENT_KEY,
    method: str = "POST",
    url: str = RESOURCE,
    nonce: str | None = None,
) -> list[tuple[str, str]]:
    proof = key.proof(method, url, access_token=token, nonce=nonce)
    return [("authorization", f"DPoP {token}"), ("dpop", proof)]


def challenges(reply: Any) -> dict[str, dict[str, str]]:
    """``WWW-Authenticate`` read as {scheme: {param: value}} (the values hold no ``", "``)."""
    out: dict[str, dict[str, str]] = {}
    current: dict[str, str] = {}
    for part in reply.headers["www-authenticate"].split(", "):
        first, _, rest = part.partition(" ")
        if "=" not in first:  # a new challenge: "Scheme name=value"
            current = out.setdefault(first.lower(), {})
            part = rest
        name, _, value = part.partition("=")
        if name:
            current[name.strip()] = value.strip('"')
    return out


@asynccontextmanager
async def protected(**options: Any) -> AsyncIterator[tuple[AsgiClient, Calls, ProtectedResource]]:
    calls = Calls()
    resource = make_resource(KeySet(KEY), **options)
    async with running_app(HttpServerConfig(auth=resource), make_server(calls)) as (_, client):
        yield client, calls, resource


async def call(client: AsgiClient, headers: list[tuple[str, str]]) -> Any:
    """An ``initialize`` POST with ``headers`` (200 once authorized)."""
    return await client.post(init_request(), version=None, extra=headers)


async def test_a_bound_token_with_a_good_proof_is_accepted(autojump_clock: trio.abc.Clock) -> None:
    async with protected(dpop=True) as (client, calls, _):
        token = bound_token()
        reply = await client.post(init_request(), version=None, extra=dpop(token))
        assert reply.status == 200, reply.body
        session_id = reply.headers["mcp-session-id"]
        note = await client.post(
            {"jsonrpc": "2.0", "method": "notifications/initialized"},
            session_id=session_id,
            extra=dpop(token),
        )
        assert note.status == 202
        answer = await client.call(session_id, 1, "whoami", extra=dpop(token))
        seen = json.loads(answer["result"]["content"][0]["text"])
        assert seen["claims"]["cnf"] == {"jkt": CLIENT_KEY.thumbprint}
        assert len(calls.seen) == 1


#: What each refusal of test_refused_proofs says.
EXPECTED = {
    "replayed": "already used",
    "another method": "not for this method",
    "another URL": "not for this URL",
    "another host": "not for this URL",
    "stale": "stale",
    "future": "in the future; allowed clock skew is 5 s",
    "wrong key": "not the key the token is bound to",
    "another token's ath": "ath does not match",
    "no ath": "ath does not match",
    "no jti": "no usable jti",
    "typ JWT": "typ must be dpop+jwt",
    "no proof": "exactly one DPoP proof",
    "signed by another key": "signature does not verify",
    "private key in jwk": "private key",
}


async def test_refused_proofs(autojump_clock: trio.abc.Clock) -> None:
    async with protected(dpop=True) as (client, calls, _):
        token = bound_token()
        good = dpop(token)
        assert (await client.post(init_request(), version=None, extra=good)).status == 200
        now = int(time.time())

        def signed(claims: dict[str, Any], key: DpopKey = CLIENT_KEY, **header: Any) -> str:
            base = {
                "jti": f"j{len(json.dumps(claims))}-{claims.get('iat', now)}",
                "htm": "POST",
                "htu": RESOURCE,
                "iat": now,
                "ath": access_token_hash(token),
            }
            base.update(claims)
            base = {k: v for k, v in base.items() if v is not None}
            headers = {"typ": "dpop+jwt", "jwk": key.public_jwk, **header}
            return jwt.encode(base, key._private, algorithm=key.algorithm, headers=headers)

        cases: dict[str, list[tuple[str, str]]] = {
            "replayed": good,
            "another method": dpop(token, method="GET"),
            "another URL": dpop(token, url="http://127.0.0.1:8000/other"),
            "another host": dpop(token, url="http://evil.example:8000/mcp"),
            "stale": [("authorization", f"DPoP {token}"), ("dpop", signed({"iat": now - 900}))],
            "future": [("authorization", f"DPoP {token}"), ("dpop", signed({"iat": now + 900}))],
            "wrong key": dpop(token, key=THIEF_KEY),
            "another token's ath": [
                ("authorization", f"DPoP {token}"),
                ("dpop", signed({"ath": access_token_hash("other")})),
            ],
            "no ath": [("authorization", f"DPoP {token}"), ("dpop", signed({"ath": None}))],
            "no jti": [("authorization", f"DPoP {token}"), ("dpop", signed({"jti": None}))],
            "typ JWT": [("authorization", f"DPoP {token}"), ("dpop", signed({}, typ="JWT"))],
            "no proof": [("authorization", f"DPoP {token}")],
            "signed by another key": [
                ("authorization", f"DPoP {token}"),
                ("dpop", signed({"jti": "x1"}, key=THIEF_KEY, jwk=CLIENT_KEY.public_jwk)),
            ],
            "private key in jwk": [
                ("authorization", f"DPoP {token}"),
                ("dpop", signed({"jti": "x2"}, jwk={**CLIENT_KEY.public_jwk, "d": "AAAA"})),
            ],
        }
        for name, headers in cases.items():
            reply = await call(client, headers)
            assert reply.status == 401, (name, reply.status, reply.body)
            found = challenges(reply)
            assert found["dpop"]["error"] in ("invalid_dpop_proof", "invalid_token"), name
            assert reply.read_requests == 0, name  # refused before the body was read
            assert EXPECTED[name] in found["dpop"]["error_description"], name
        assert calls.seen == []


async def test_two_proofs_are_400(autojump_clock: trio.abc.Clock) -> None:
    async with protected(dpop=True) as (client, calls, _):
        token = bound_token()
        headers = [*dpop(token), ("dpop", CLIENT_KEY.proof("POST", RESOURCE, access_token=token))]
        assert (await call(client, headers)).status == 400
        assert calls.seen == []


async def test_a_bound_token_sent_as_bearer_is_refused(autojump_clock: trio.abc.Clock) -> None:
    # A stolen DPoP-bound token must not be usable by dropping the proof.
    async with protected(dpop=True) as (client, _, _):
        reply = await call(client, bearer(bound_token()))
        assert reply.status == 401
        found = challenges(reply)
        assert found["bearer"]["error"] == "invalid_token"
        assert "DPoP" in found["bearer"]["error_description"]
    async with protected() as (client, _, _):  # a server that knows nothing of DPoP, too
        assert (await call(client, bearer(bound_token()))).status == 401


async def test_dpop_scheme_needs_a_bound_token_and_a_dpop_server(
    autojump_clock: trio.abc.Clock,
) -> None:
    async with protected(dpop=True) as (client, _, _):
        unbound = KEY.mint()
        reply = await call(client, dpop(unbound))
        assert reply.status == 401
        assert challenges(reply)["dpop"]["error"] == "invalid_token"
        assert (await call(client, bearer(unbound))).status == 200  # Bearer still accepted
    async with protected() as (client, _, _):
        reply = await call(client, dpop(bound_token()))
        assert reply.status == 401
        assert set(challenges(reply)) == {"bearer"}


async def test_required_dpop_refuses_bearer_and_says_so(autojump_clock: trio.abc.Clock) -> None:
    async with protected(require_dpop=True) as (client, _, resource):
        reply = await call(client, bearer(KEY.mint()))
        assert reply.status == 401
        found = challenges(reply)
        assert set(found) == {"dpop"}
        assert found["dpop"]["error"] == "invalid_token"
        assert found["dpop"]["algs"].split()[0] == "ES256"
        assert resource.metadata()["dpop_bound_access_tokens_required"] is True
        assert "ES256" in resource.metadata()["dpop_signing_alg_values_supported"]
        assert (await call(client, dpop(bound_token()))).status == 200


async def test_a_required_nonce_is_asked_for_then_accepted(autojump_clock: trio.abc.Clock) -> None:
    nonces = NonceSource(b"s" * 32)
    async with protected(dpop=DpopChecker(nonces=nonces)) as (client, calls, _):
        token = bound_token()
        reply = await call(client, dpop(token))
        assert reply.status == 401
        assert challenges(reply)["dpop"]["error"] == "use_dpop_nonce"
        nonce = reply.headers["dpop-nonce"]
        wrong = await call(client, dpop(token, nonce="made-up"))
        assert wrong.status == 401
        assert challenges(wrong)["dpop"]["error"] == "use_dpop_nonce"
        assert calls.seen == []
        assert (await call(client, dpop(token, nonce=nonce))).status == 200


def test_the_thumbprint_is_rfc_7638s() -> None:
    # The example key of RFC 7638 §3.1 and its thumbprint.
    jwk = {
        "kty": "RSA",
        "n": "0vx7agoebGcQSuuPiLJXZptN9nndrQmbXEps2aiAFbWhM78LhWx4cbbfAAtVT86zwu1RK7aPFFxuhDR1L6"
        "tSoc_BJECPebWKRXjBZCiFV4n3oknjhMstn64tZ_2W-5JsGY4Hc5n9yBXArwl93lqt7_RN5w6Cf0h4QyQ5v-65Y"
        "GjQR0_FDW2QvzqY368QQMicAtaSqzs8KJZgnYb9c7d0zgdAZHzu6qMQvRL5hajrn1n91CbOpbISD08qNLyrdkt"
        "-bFTWhAI4vMQFh6WeZu0fM4lFd2NcRwr3XPksINHaQ-G_xBniIqbw0Ls1jF44-csFCur-kEgU8awapJzKnqDKg"
        "w",
        "e": "AQAB",
        "alg": "RS256",
        "kid": "2011-04-29",
    }
    assert jwk_thumbprint(jwk) == "NzbLsXh8uDCcd-6MNwXF4W_7noWXFZAfHkxZsRGC9Xs"
    with pytest.raises(ValueError, match="no 'y'"):
        jwk_thumbprint({"kty": "EC", "crv": "P-256", "x": "a"})


async def test_the_memory_replay_cache_stays_bounded_and_safe() -> None:
    cache = MemoryReplayCache(max_entries=2)
    later = time.time() + 100
    assert await cache.first_use("k", "a", later)
    assert await cache.first_use("k", "b", later + 1)
    assert not await cache.first_use("k", "a", later)
    assert await cache.first_use("k", "c", later + 2)  # full: "a" is forgotten...
    assert len(cache) == 2
    with pytest.raises(DpopError, match="no newer than the proofs it forgot"):
        await cache.first_use("k", "a", later)  # ...yet its replay is still refused
    assert await cache.first_use("k", "d", later + 3)
    assert not await cache.first_use("k", "d", later + 3)


@pytest.mark.parametrize("later", [2.0, 60.0, 299.0])
async def test_a_proof_replayed_while_it_is_fresh_is_refused(later: float) -> None:
    """A captured proof is refused for as long as it would be accepted (``max_age`` after
    its ``iat``), not only while the replay cache happens to keep it: the cache and the
    checker read one clock, moved forward here. Past ``max_age`` it is stale anyway."""
    now = [time.time()]
    replay = MemoryReplayCache(clock=lambda: now[0])
    checker = DpopChecker(replay=replay, clock=lambda: now[0])
    token = bound_token()
    proof = CLIENT_KEY.proof("POST", RESOURCE, access_token=token)
    start = now[0]
    await checker.check(proof, method="POST", url=RESOURCE, access_token=token)
    now[0] = start + later
    # Another proof is remembered meanwhile: the cache has a chance to forget the first.
    other = CLIENT_KEY.proof("POST", RESOURCE, access_token=token)
    await checker.check(other, method="POST", url=RESOURCE, access_token=token)
    with pytest.raises(DpopError, match="already used"):
        await checker.check(proof, method="POST", url=RESOURCE, access_token=token)
    now[0] = start + checker.max_age + 2
    with pytest.raises(DpopError, match="stale"):
        await checker.check(proof, method="POST", url=RESOURCE, access_token=token)


def test_replicas_given_one_nonce_secret_accept_each_others_nonces() -> None:
    one, two = NonceSource(b"r" * 32), NonceSource(b"r" * 32)
    assert two.valid(one.current())
    assert not NonceSource(b"x" * 32).valid(one.current())
    assert not NonceSource().valid(NonceSource().current())  # random secrets differ


@pytest.mark.parametrize("lifetime", [0.0, -1.0, -300.0])
def test_a_nonce_lifetime_must_be_positive(lifetime: float) -> None:
    with pytest.raises(ValueError, match="lifetime must be positive"):
        NonceSource(lifetime=lifetime)


def test_a_short_nonce_lifetime_is_allowed() -> None:
    nonces = NonceSource(b"s" * 32, lifetime=0.5)
    assert nonces.lifetime == 0.5
    assert NonceSource(b"s" * 32, lifetime=1.0).lifetime == 1.0


async def test_a_proof_of_an_algorithm_not_accepted_is_refused() -> None:
    rsa = DpopKey.generate("RS256")
    proof = rsa.proof("POST", RESOURCE)
    assert await DpopChecker().check(proof, method="POST", url=RESOURCE) == rsa.thumbprint
    with pytest.raises(DpopError, match="algorithm 'RS256' is not accepted"):
        await DpopChecker(algorithms=["ES256"]).check(proof, method="POST", url=RESOURCE)
