"""One DPoP client cannot lock the others out of the replay cache (issue 30, defect 4).

A proof's ``iat`` may be ahead of the server's clock by ``DpopChecker(max_skew)`` seconds
only (before: by ``max_age``, so one principal's proofs dated 5 minutes ahead filled the
cache with entries outliving every fresh proof, and the cache's eviction then refused
everyone's fresh proofs as "already used" for up to 10 minutes). And the cache gives each
key (its JWK thumbprint) a share of its own: one key filling its share, or the whole
cache, forgets only its own oldest proofs and refuses only its own proofs, never
another key's.

Driven through the ASGI app (the attack as a client makes it) and on the cache itself
with an injected clock.
"""

from __future__ import annotations

import secrets
import time

import jwt
import pytest
import trio

from tests.auth.test_dpop_server import CLIENT_KEY, THIEF_KEY, bound_token, call, challenges, dpop
from tests.auth.test_dpop_server import protected as protected_app
from tests.auth.tokens import RESOURCE
from trimcp.auth.dpop import DpopChecker, DpopError, DpopKey, MemoryReplayCache, access_token_hash


def dated(token: str, key: DpopKey, iat: float) -> list[tuple[str, str]]:
    """The headers of a good proof of ``key`` for ``token`` whose ``iat`` is ``iat``."""
    claims = {
        "jti": secrets.token_urlsafe(12),
        "htm": "POST",
        "htu": RESOURCE,
        "iat": int(iat),
        "ath": access_token_hash(token),
    }
    headers = {"typ": "dpop+jwt", "jwk": key.public_jwk}
    proof = jwt.encode(claims, key._private, algorithm=key.algorithm, headers=headers)
    return [("authorization", f"DPoP {token}"), ("dpop", proof)]


async def test_future_dated_proofs_do_not_lock_out_another_key(
    autojump_clock: trio.abc.Clock,
) -> None:
    # The reported attack: a small cache, one principal's proofs dated 250 s ahead.
    checker = DpopChecker(replay=MemoryReplayCache(max_entries=4))
    async with protected_app(dpop=checker) as (client, _, _):
        attacker, victim = bound_token(THIEF_KEY), bound_token(CLIENT_KEY)
        for _ in range(8):
            reply = await call(client, dated(attacker, THIEF_KEY, time.time() + 250))
            assert reply.status == 401, reply.body
            said = challenges(reply)["dpop"]["error_description"]
            assert "in the future; allowed clock skew is 5 s" in said, said
        assert (await call(client, dpop(victim))).status == 200


async def test_one_key_filling_the_cache_never_refuses_another_keys_fresh_proof(
    autojump_clock: trio.abc.Clock,
) -> None:
    # Within the skew: the attacker's proofs outlive the victim's by 4 s, and the
    # attacker fills the whole cache with them.
    checker = DpopChecker(replay=MemoryReplayCache(max_entries=8))
    async with protected_app(dpop=checker) as (client, _, _):
        attacker, victim = bound_token(THIEF_KEY), bound_token(CLIENT_KEY)
        for _ in range(8):
            reply = await call(client, dated(attacker, THIEF_KEY, time.time() + 4))
            assert reply.status == 200, reply.body
        for _ in range(3):  # every fresh proof of the victim, not only the first
            reply = await call(client, dpop(victim))
            assert reply.status == 200, reply.body
        # The attacker holds the most: its own proofs no newer than its oldest pay.
        reply = await call(client, dated(attacker, THIEF_KEY, time.time() + 4))
        assert reply.status == 401
        said = challenges(reply)["dpop"]["error_description"]
        assert "share of the replay cache is full (MemoryReplayCache max_entries" in said, said


class Clock:
    """Seconds since the epoch, moved by the test."""

    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


async def test_a_key_past_its_share_forgets_and_refuses_only_its_own() -> None:
    clock = Clock()
    cache = MemoryReplayCache(max_entries=100, max_entries_per_key=3, clock=clock)
    now = clock.now
    for n in range(3):
        assert await cache.first_use("flood", f"j{n}", now + 300 + n)
    assert await cache.first_use("flood", "j3", now + 310)  # j0 (the oldest) forgotten
    assert len(cache) == 3
    with pytest.raises(DpopError, match="max_entries_per_key: 3 proofs"):
        await cache.first_use("flood", "j0", now + 300)  # its replay: still refused
    with pytest.raises(DpopError, match="max_entries_per_key: 3 proofs"):
        await cache.first_use("flood", "new", now + 300)  # no newer: refused, not forgotten
    assert not await cache.first_use("flood", "j3", now + 310)
    # Every other key: untouched, even with proofs older than the flood's oldest.
    for n in range(3):
        assert await cache.first_use("other", f"j{n}", now + 10 + n)
    assert not await cache.first_use("other", "j0", now + 10)
    assert len(cache) == 6


async def test_a_full_cache_takes_from_the_key_holding_the_most() -> None:
    clock = Clock()
    cache = MemoryReplayCache(max_entries=4, clock=clock)
    now = clock.now
    for n in range(4):
        assert await cache.first_use("flood", f"j{n}", now + 302 + n)
    # The flood's proofs all outlive a fresh one; still, every other key gets in.
    assert await cache.first_use("a", "x", now + 301)
    assert await cache.first_use("b", "x", now + 301)
    assert len(cache) == 4
    with pytest.raises(DpopError, match="max_entries: 4 proofs in all and this key holds"):
        await cache.first_use("flood", "j9", now + 303.5)  # older than its oldest kept
    # a and b hold one each; the flood two: taken from the flood again.
    assert await cache.first_use("c", "x", now + 301)
    assert not await cache.first_use("a", "x", now + 301)
    # Four keys with one proof each: a fifth is refused for room, naming the budget;
    # none of theirs is forgotten (a key's last proof is never taken for another's).
    assert await cache.first_use("c", "y", now + 302)  # c now holds the most: pays itself
    with pytest.raises(DpopError, match="the DPoP replay cache is full"):
        await cache.first_use("d", "x", now + 301)
    assert not await cache.first_use("a", "x", now + 301)
    assert not await cache.first_use("b", "x", now + 301)


async def test_expired_proofs_leave_and_their_keys_with_them() -> None:
    clock = Clock()
    cache = MemoryReplayCache(max_entries=10, max_entries_per_key=2, clock=clock)
    now = clock.now
    for n in range(5):  # one key forgets three of its own
        assert await cache.first_use("k", f"j{n}", now + 10 + n)
    assert await cache.first_use("m", "j", now + 100)
    assert len(cache) == 3
    clock.now = now + 14  # k's last two are due
    assert await cache.first_use("n", "j", now + 200)
    assert len(cache) == 2
    # Long after, the same jti of k is new again (its proof would be stale by now).
    clock.now = now + 1000
    assert await cache.first_use("k", "j0", now + 1300)
    assert len(cache) == 1


async def test_a_flood_of_one_key_keeps_the_cache_bounded() -> None:
    clock = Clock()
    cache = MemoryReplayCache(max_entries=50, max_entries_per_key=5, clock=clock)
    for n in range(20_000):
        clock.now += 0.01
        assert await cache.first_use("flood", f"j{n}", clock.now + 300)
        assert len(cache) <= 5
    assert await cache.first_use("other", "x", clock.now + 1)


def proof_at(key: DpopKey, iat: float) -> str:
    claims = {"jti": secrets.token_urlsafe(12), "htm": "GET", "htu": RESOURCE, "iat": iat}
    headers = {"typ": "dpop+jwt", "jwk": key.public_jwk}
    return jwt.encode(claims, key._private, algorithm=key.algorithm, headers=headers)


@pytest.mark.parametrize(
    ("skew", "ahead", "accepted"), [(5, 5, True), (5, 6, False), (0, 1, False)]
)
async def test_iat_may_be_ahead_by_the_skew_only(skew: float, ahead: int, accepted: bool) -> None:
    clock = Clock()
    checker = DpopChecker(max_skew=skew, clock=clock, replay=MemoryReplayCache(clock=clock))
    proof = proof_at(CLIENT_KEY, clock.now + ahead)
    if accepted:
        assert await checker.check(proof, method="GET", url=RESOURCE) == CLIENT_KEY.thumbprint
        return
    with pytest.raises(DpopError) as refused:
        await checker.check(proof, method="GET", url=RESOURCE)
    said = f"iat is {ahead} s in the future; allowed clock skew is {skew} s"
    assert said in str(refused.value)


async def test_a_stale_proof_says_how_old_it_is() -> None:
    clock = Clock()
    checker = DpopChecker(clock=clock)
    with pytest.raises(DpopError, match="its iat is 301 s old, more than 300 s"):
        await checker.check(proof_at(CLIENT_KEY, clock.now - 301), method="GET", url=RESOURCE)


def test_the_skew_is_checked() -> None:
    with pytest.raises(ValueError, match="max_skew"):
        DpopChecker(max_skew=-1)
    with pytest.raises(ValueError, match="at least 1"):
        MemoryReplayCache(max_entries_per_key=0)


async def test_a_forgotten_proof_stays_refused_once_its_share_has_room_again() -> None:
    # A full cache takes from the key holding the most; another key's proof then expires,
    # so the flood's share is no longer full and the cache has room: the proof the flood
    # forgot (a captured one, replayed) is still refused, up to its own expiry exactly.
    clock = Clock()
    cache = MemoryReplayCache(max_entries=4, clock=clock)
    now = clock.now
    for n in range(4):
        assert await cache.first_use("flood", f"j{n}", now + 302 + n)
    assert await cache.first_use("brief", "x", now + 1)  # j0 forgotten for it
    clock.now = now + 2  # "brief" expires: room in the cache and in the flood's share
    assert not await cache.first_use("flood", "j1", now + 303)
    assert len(cache) == 3
    for replayed in ("j0", "fresh"):
        with pytest.raises(DpopError, match="no newer than the proofs it forgot"):
            await cache.first_use("flood", replayed, now + 302)
    assert await cache.first_use("flood", "newer", now + 302.5)


async def test_a_full_share_refuses_a_proof_expiring_with_its_oldest() -> None:
    clock = Clock()
    cache = MemoryReplayCache(max_entries_per_key=2, clock=clock)
    now = clock.now
    assert await cache.first_use("k", "a", now + 20)
    assert await cache.first_use("k", "b", now + 10)
    with pytest.raises(DpopError, match="max_entries_per_key: 2 proofs"):
        await cache.first_use("k", "c", now + 10)  # no newer than the oldest kept
    assert not await cache.first_use("k", "b", now + 10)  # nothing was forgotten
    assert not await cache.first_use("k", "a", now + 20)
    # Newer than the oldest (though not than every other): the oldest makes room.
    assert await cache.first_use("k", "d", now + 15)
    with pytest.raises(DpopError, match="no newer than the proofs it forgot"):
        await cache.first_use("k", "b", now + 10)


async def test_only_a_keys_expired_proofs_leave() -> None:
    # Proofs of one key expiring in any order: at each moment exactly the due ones are
    # gone (an entry is gone at its expiry instant), the others are still refused.
    clock = Clock()
    cache = MemoryReplayCache(clock=clock)
    now = clock.now
    expiries = {"a": 10.0, "b": 100.0, "c": 50.0, "d": 30.0, "e": 70.0}
    for jti, after in expiries.items():
        assert await cache.first_use("k", jti, now + after)
    assert await cache.first_use("lone", "z", now + 5)
    for moment in (5.0, 10.0, 29.0, 50.0, 70.0, 99.0):
        clock.now = now + moment
        live = {jti for jti, after in expiries.items() if after > moment}
        assert await cache.first_use("probe", f"p{moment}", now + 1000)
        probes = sum(1 for m in (5.0, 10.0, 29.0, 50.0, 70.0, 99.0) if m <= moment)
        assert len(cache) == len(live) + probes, moment
        for jti in live:
            assert not await cache.first_use("k", jti, now + expiries[jti]), (moment, jti)
    assert await cache.first_use("lone", "z", now + 200)  # expired at 5: new again


async def test_the_key_holding_the_most_stays_known_as_others_shrink() -> None:
    # A one-proof key expires while the flood holds three: the flood still holds the most,
    # so a new key in a full cache takes the flood's oldest, not a refusal for room.
    clock = Clock()
    cache = MemoryReplayCache(max_entries=4, clock=clock)
    now = clock.now
    for n in range(3):
        assert await cache.first_use("flood", f"j{n}", now + 300 + n)
    assert await cache.first_use("brief", "x", now + 1)
    clock.now = now + 2  # "brief" expires
    assert await cache.first_use("c", "x", now + 300)
    assert await cache.first_use("d", "x", now + 300)  # the cache was full: the flood pays
    assert len(cache) == 4
    assert not await cache.first_use("c", "x", now + 300)


@pytest.mark.parametrize(("entries", "per_key"), [(0, 5), (5, 0), (-1, 5), (5, -1)])
def test_the_replay_cache_needs_room_for_a_proof(entries: int, per_key: int) -> None:
    with pytest.raises(ValueError, match="must be at least 1"):
        MemoryReplayCache(max_entries=entries, max_entries_per_key=per_key)


async def test_a_replay_cache_of_one_proof_works() -> None:
    clock = Clock()
    cache = MemoryReplayCache(max_entries=1, max_entries_per_key=1, clock=clock)
    assert await cache.first_use("k", "a", clock.now + 10)
    assert not await cache.first_use("k", "a", clock.now + 10)


def test_the_checkers_settings_are_checked() -> None:
    with pytest.raises(ValueError, match="max_skew"):
        DpopChecker(max_skew=301, max_age=300)
    with pytest.raises(ValueError, match="max_skew"):
        DpopChecker(max_skew=-0.5)
    assert DpopChecker(max_skew=300, max_age=300).max_skew == 300
    assert DpopChecker(max_skew=0).max_skew == 0
    with pytest.raises(ValueError, match=r"asymmetric algorithms; refusing \['HS256'\]"):
        DpopChecker(algorithms=["ES256", "HS256"])
