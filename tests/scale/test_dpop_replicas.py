"""A DPoP proof accepted by one replica is refused by every other: the replay cache is
shared through the Redis store (``RedisStore.replay_cache``), not kept per process.

Two replicas (``serve_http(store=RedisStore(...))`` in this process, each with its own
``ProtectedResource``, verifier and store client, as two processes would have) on one real
redis-server; the control runs the same two replicas without a shared store, where each
remembers only its own proofs and the replay gets through. Real clock over loopback;
every wait is bounded by ``fail_after``.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from functools import partial
from typing import Any

import pytest
import trio

from tests.auth.tokens import ISSUER, RESOURCE, KeySet, SigningKey
from tests.scale.peers import RedisServer
from tests.scale.test_principals import http
from trimcp import Server
from trimcp.auth import DpopKey, JwtVerifier, ProtectedResource
from trimcp.auth.dpop import DpopError
from trimcp.stores import RedisStore
from trimcp.stores.redis_client import RedisClient
from trimcp.stores.replay import RedisReplayCache
from trimcp.transports.http_server import HttpServerConfig, serve_http

BOUND = 40.0
KEY = SigningKey("dpop-replicas")
CLIENT = DpopKey.generate()
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 0,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "dpop-replicas", "version": "1"},
    },
}


def config() -> HttpServerConfig:
    verifier = JwtVerifier(
        issuer=ISSUER, jwks_url="https://as.example.com/jwks", fetch=KeySet(KEY).fetch
    )
    resource = ProtectedResource(
        resource=RESOURCE, authorization_servers=[ISSUER], verifier=verifier, require_dpop=True
    )
    return HttpServerConfig(auth=resource)


@asynccontextmanager
async def two_replicas(redis: RedisServer | None) -> AsyncIterator[list[str]]:
    """The URLs of two replicas: on one Redis (under a prefix of their own), or, without
    ``redis``, each on its own memory."""
    prefix = f"dp{secrets.token_hex(4)}:"
    stores = [RedisStore(redis.url, prefix=prefix) for _ in range(2)] if redis else []
    try:
        async with trio.open_nursery() as nursery:
            urls = []
            for index in range(2):
                store = stores[index] if stores else None
                port: int = await nursery.start(
                    partial(serve_http, Server("dpop"), port=0, config=config(), store=store)
                )
                urls.append(f"http://127.0.0.1:{port}/mcp")
            yield urls
            nursery.cancel_scope.cancel()
    finally:
        with trio.CancelScope(shield=True):
            for store in stores:
                await store.aclose()


async def replayed_status(redis: RedisServer | None) -> tuple[int, int, int]:
    """(first use on A, the same proof on B, a fresh proof on B)."""
    token = KEY.mint(cnf={"jkt": CLIENT.thumbprint})
    # The proof names the resource's public URL (as behind a balancer), whichever
    # replica receives it.
    proof = CLIENT.proof("POST", RESOURCE, access_token=token)
    headers = [("authorization", f"DPoP {token}"), ("dpop", proof)]
    with trio.fail_after(BOUND):
        async with two_replicas(redis) as (a, b):
            first, _, _ = await http(a, "POST", INITIALIZE, headers)
            again, names, _ = await http(b, "POST", INITIALIZE, headers)
            if again == 401:
                assert "already used" in names["www-authenticate"]
            fresh = [
                ("authorization", f"DPoP {token}"),
                ("dpop", CLIENT.proof("POST", RESOURCE, access_token=token)),
            ]
            new, _, _ = await http(b, "POST", INITIALIZE, fresh)
    return first, again, new


async def test_a_proof_used_on_one_replica_is_refused_on_the_other(
    redis_server: RedisServer,
) -> None:
    assert await replayed_status(redis_server) == (200, 401, 200)


async def test_without_a_shared_store_each_replica_remembers_only_its_own() -> None:
    # The control: what the shared cache prevents.
    assert await replayed_status(None) == (200, 200, 200)


async def test_each_key_has_its_share_of_the_shared_cache(redis_server: RedisServer) -> None:
    """One key's flood forgets only its own oldest proofs (the newest it forgot kept next
    to them, so their replays stay refused) and never touches another key's; the key's
    entries expire with its proofs."""
    prefix = f"dp{secrets.token_hex(4)}:"
    client = RedisClient(redis_server.url)
    try:
        with trio.fail_after(BOUND):
            cache = RedisReplayCache(client, prefix, max_entries_per_key=3)
            now = time.time()
            for n in range(5):
                assert await cache.first_use("flood", f"j{n}", now + 300 + n)
            keys = await client.execute("KEYS", prefix + "*")
            assert isinstance(keys, list)
            assert len(keys) == 2  # the proofs, and the newest expiry forgotten
            proofs = min(keys, key=len)
            assert await client.execute("ZCARD", proofs) == 3
            assert 0 < int(str(await client.execute("PTTL", proofs))) <= 305_000
            for old in ("j0", "j1"):  # forgotten, yet refused
                with pytest.raises(DpopError, match="RedisReplayCache max_entries_per_key: 3"):
                    await cache.first_use("flood", old, now + 300)
            with pytest.raises(DpopError, match="no newer than the proofs it forgot"):
                await cache.first_use("flood", "new", now + 302)  # older than all it keeps
            assert not await cache.first_use("flood", "j4", now + 304)
            # Another key: untouched, even with proofs older than all of the flood's.
            for n in range(3):
                assert await cache.first_use("other", f"j{n}", now + 10 + n)
            assert not await cache.first_use("other", "j0", now + 10)
    finally:
        with trio.CancelScope(shield=True):
            await client.aclose()


@pytest.mark.parametrize("per_key", [0, -1])
def test_a_shared_replay_cache_needs_room_for_a_proof(per_key: int) -> None:
    client: Any = None  # not used before a proof is checked
    with pytest.raises(ValueError, match="max_entries_per_key must be at least 1"):
        RedisReplayCache(client, "p:", max_entries_per_key=per_key)
    assert RedisReplayCache(client, "p:", max_entries_per_key=1).max_entries_per_key == 1
