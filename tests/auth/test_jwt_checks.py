"""Each check :class:`JwtVerifier` and its key set make, one test apiece, on the verifier
itself (the HTTP layer's own audience check would hide the verifier's): audience,
narrowed algorithms, a key's declared ``alg``, encryption keys, tokens naming no key, a
``kid`` that is not a string, the bound on keys, and the cache never outliving ``exp``.

The key set is served by a fake fetch (no network), under the autojump clock.
"""

from __future__ import annotations

import base64
import datetime as dt
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import jwt
import pytest
import trio

from tests.auth.test_server_jwt import Calls, bearer, challenge, make_server
from tests.auth.tokens import ISSUER, RESOURCE, KeySet, SigningKey
from tests.http_server.helpers import running_app, tool_call
from trimcp.auth import InvalidToken, JwtVerifier, ProtectedResource
from trimcp.auth.jwks import JwksCache
from trimcp.transports.http_server import HttpServerConfig

KEY = SigningKey("k1")
SECOND = SigningKey("k2")
EC_KEY = SigningKey("e1", kind="EC")
OTHER_RESOURCE = "http://127.0.0.1:9999/mcp"


@asynccontextmanager
async def running(keys: KeySet, **options: Any) -> AsyncIterator[JwtVerifier]:
    verifier = JwtVerifier(
        issuer=ISSUER, jwks_url="https://as.example.com/jwks", fetch=keys.fetch, **options
    )
    async with trio.open_nursery() as nursery:
        await nursery.start(verifier.run)
        yield verifier
        nursery.cancel_scope.cancel()


async def refusal(verifier: JwtVerifier, token: str) -> str:
    with pytest.raises(InvalidToken) as refused:
        await verifier.verify(token)
    return str(refused.value)


def _b64(value: Any) -> str:
    return base64.urlsafe_b64encode(json.dumps(value).encode()).rstrip(b"=").decode()


def declaring(key: SigningKey, **members: Any) -> SigningKey:
    """``key`` with its public JWK's members replaced (the private key is the same)."""
    copy = SigningKey.__new__(SigningKey)
    copy.kid, copy.alg, copy.private = key.kid, key.alg, key.private
    copy.jwk = {**key.jwk, **members}
    return copy


# --- audience ---------------------------------------------------------------------------


async def test_audience_is_checked_by_the_verifier(autojump_clock: trio.abc.Clock) -> None:
    async with running(KeySet(KEY), audience=RESOURCE) as verifier:
        assert (await verifier.verify(KEY.mint(aud=[OTHER_RESOURCE, RESOURCE]))).subject
        reason = await refusal(verifier, KEY.mint(aud=OTHER_RESOURCE))
        assert reason == "the token was issued for another audience"
        assert "aud" in await refusal(verifier, KEY.mint(aud=None))


async def test_audience_left_to_the_verifier_over_http(autojump_clock: trio.abc.Clock) -> None:
    # The documented split: ProtectedResource(verify_audience=False) trusts the verifier's
    # own audience check, so that check is all that stands between another server's
    # token and the tools.
    verifier = JwtVerifier(
        issuer=ISSUER,
        jwks_url="https://as.example.com/jwks",
        fetch=KeySet(KEY).fetch,
        audience="https://mcp.example.com/mcp",
    )
    resource = ProtectedResource(
        resource=RESOURCE, authorization_servers=[ISSUER], verifier=verifier, verify_audience=False
    )
    calls = Calls()
    async with running_app(HttpServerConfig(auth=resource), make_server(calls)) as (_, client):
        reply = await client.post(tool_call(1, "whoami"), extra=bearer(KEY.mint(aud=RESOURCE)))
        assert reply.status == 401
        assert challenge(reply)["error_description"] == (
            "the token was issued for another audience"
        )
        token = KEY.mint(aud="https://mcp.example.com/mcp")
        session_id = await client.initialize(extra=bearer(token))
        answer = await client.call(session_id, 1, "whoami", extra=bearer(token))
        assert "result" in answer
    assert len(calls.seen) == 1


# --- algorithms -------------------------------------------------------------------------


async def test_narrowed_algorithms_refuse_the_others(autojump_clock: trio.abc.Clock) -> None:
    # A well-signed RS256 token with a good key is still refused when only ES256 is allowed.
    async with running(KeySet(KEY, EC_KEY), algorithms=("ES256",)) as verifier:
        assert (await verifier.verify(EC_KEY.mint())).subject == "alice"
        reason = await refusal(verifier, KEY.mint())
        assert reason == "the token's algorithm 'RS256' is not accepted"


async def test_a_keys_declared_alg_is_binding(autojump_clock: trio.abc.Clock) -> None:
    # The key says RS384; an RS256 signature made with the same private key must not pass.
    rs384 = declaring(KEY, alg="RS384")
    async with running(KeySet(rs384)) as verifier:
        assert (await verifier.verify(KEY.mint(alg="RS384"))).subject == "alice"
        reason = await refusal(verifier, KEY.mint())
        assert reason == "the key 'k1' is not for algorithm RS256"
    async with running(KeySet(declaring(KEY, alg=None))) as verifier:
        # A key declaring no alg is used for any algorithm of its type.
        assert (await verifier.verify(KEY.mint(alg="PS256"))).subject == "alice"


async def test_a_key_of_another_type_is_refused(autojump_clock: trio.abc.Clock) -> None:
    # An RS256 token naming an EC key. (PyJWT would refuse this key too: the verifier's
    # own check says why first.)
    impostor = declaring(EC_KEY, kid="k1", alg=None)
    async with running(KeySet(impostor)) as verifier:
        assert await refusal(verifier, KEY.mint()) == "the key 'k1' is not for algorithm RS256"


# --- the key set ------------------------------------------------------------------------


async def test_encryption_keys_never_verify(autojump_clock: trio.abc.Clock) -> None:
    encryption = declaring(SECOND, use="enc")
    keys = KeySet(KEY, encryption)
    async with running(keys) as verifier:
        assert await refusal(verifier, SECOND.mint()) == "no signing key with kid 'k2'"
        keys.keys = [KEY, SECOND]  # the same key published for signatures is accepted
        await trio.sleep(31)  # past min_refresh_interval
        assert (await verifier.verify(SECOND.mint())).subject == "alice"


async def test_a_token_naming_no_key_needs_a_single_key_set(
    autojump_clock: trio.abc.Clock,
) -> None:
    # Documented in JwksCache._find / get: without a kid, the only key is used; with
    # several keys the token is refused (never "try each until one verifies").
    async with running(KeySet(KEY)) as verifier:
        assert (await verifier.verify(KEY.mint(headers={"kid": None}))).subject == "alice"
    keys = KeySet(KEY, SECOND)
    async with running(keys) as verifier:
        for key in (KEY, SECOND):
            reason = await refusal(verifier, key.mint(headers={"kid": None}))
            assert reason == "the token names no key (kid) and the key set holds several"


@pytest.mark.parametrize("kid", [7, ["k1"], {"k": "k1"}])
async def test_a_kid_that_is_not_a_string_is_refused(
    autojump_clock: trio.abc.Clock, kid: Any
) -> None:
    # Built by hand: PyJWT will not sign such a header. PyJWT's header parsing refuses it
    # too, before the verifier's own check; either way it is a 401, never a crash on an
    # unhashable kid.
    header = _b64({"alg": "RS256", "typ": "JWT", "kid": kid})
    token = f"{header}.{KEY.mint().split('.', 1)[1]}"
    async with running(KeySet(KEY)) as verifier:
        reason = await refusal(verifier, token)
        assert reason in ("the token is not a signed JWT", "the token's kid is not a string")


async def test_keys_past_max_keys_are_ignored(autojump_clock: trio.abc.Clock) -> None:
    async with running(KeySet(KEY, SECOND), max_keys=1) as verifier:
        assert verifier.keys.key_ids == ["k1"]
        assert (await verifier.verify(KEY.mint())).subject == "alice"
        assert await refusal(verifier, SECOND.mint()) == "no signing key with kid 'k2'"


async def test_a_refresh_asked_for_during_a_fetch_waits_out_the_back_off(
    autojump_clock: trio.abc.Clock,
) -> None:
    """Tokens naming unknown kids while a fetch is under way ask for another; it comes
    ``min_refresh_interval`` after the last attempt began, not at once (the back-off that
    keeps made-up kids from hammering the authorization server), nor an hour later."""
    keys = KeySet(KEY)
    fetched_at: list[float] = []

    async def slow_fetch(url: str) -> Any:
        fetched_at.append(trio.current_time())
        await trio.sleep(1)
        return await keys.fetch(url)

    cache = JwksCache("https://as.example.com/jwks", fetch=slow_fetch, min_refresh_interval=30)
    async with trio.open_nursery() as nursery:
        start = trio.current_time()
        await nursery.start(cache.run)
        for n in range(5):  # while the first fetch runs: each asks for a refresh
            with pytest.raises(InvalidToken, match="no signing key"):
                await cache.get(f"made-up-{n}")
        await trio.sleep(60)
        nursery.cancel_scope.cancel()
    assert [round(t - start) for t in fetched_at] == [0, 30]


# --- the cache of accepted tokens ---------------------------------------------------------


class WallClock:
    """A wall clock the verifier and PyJWT both read (PyJWT reads ``datetime.now``)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        import time

        import trimcp.auth.verifiers

        self.now = time.time()
        clock = self

        class FrozenDatetime(dt.datetime):
            @classmethod
            def now(cls, tz: dt.tzinfo | None = None) -> FrozenDatetime:
                return cls.fromtimestamp(clock.now, tz)

        monkeypatch.setattr(jwt.api_jwt, "datetime", FrozenDatetime)
        monkeypatch.setattr(trimcp.auth.verifiers, "time", self)

    def time(self) -> float:
        return self.now


async def test_a_cached_token_is_refused_past_its_exp(
    autojump_clock: trio.abc.Clock, monkeypatch: pytest.MonkeyPatch
) -> None:
    wall = WallClock(monkeypatch)
    async with running(KeySet(KEY), cache_ttl=3600, leeway=0) as verifier:
        token = KEY.mint(iat=int(wall.now), exp=int(wall.now) + 5)
        first = await verifier.verify(token)
        assert await verifier.verify(token) is first  # served from the cache
        wall.now += 6  # the cache entry has 3594 s to go; the token has none
        assert await refusal(verifier, token) == "the token has expired"
