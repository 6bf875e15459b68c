"""trimcp's authorization server keeps its state in Redis (RedisAuthStore) against a real
redis-server: one writer wins, a code or refresh token is taken once, a client's share is
bounded, and two replicas on one Redis sign with the same keys and honour each other's
refresh tokens."""

from __future__ import annotations

import pytest
import trio

from tests.scale.peers import RedisServer
from trimcp.authserver.grants import GrantError, Grants
from trimcp.authserver.keys import SigningKeys
from trimcp.authserver.redis_store import RedisAuthStore
from trimcp.authserver.sealing import Sealer
from trimcp.stores.redis import RedisStore

SECRET = "one secret for every replica, 32b"


async def test_records_in_redis(redis_server: RedisServer) -> None:
    redis = RedisStore(redis_server.url, prefix="as-test1:")
    try:
        store = RedisAuthStore(redis, max_per_client=2)
        assert await store.put("code", "k1", {"a": 1}, 60, client="c1")
        assert await store.get("code", "k1") == {"a": 1}
        assert not await store.put("code", "k1", {"a": 2}, 60, only_new=True)
        assert await store.put("code", "k2", {"a": 2}, 60, client="c1")
        assert not await store.put("code", "k3", {"a": 3}, 60, client="c1")  # share full
        assert await store.put("code", "k3", {"a": 3}, 60, client="c2")  # not another's
        assert await store.put("code", "k1", {"a": 9}, 60, client="c1")  # a rewrite fits
        takes = []

        async def take() -> None:
            takes.append(await store.take("code", "k2"))

        async with trio.open_nursery() as nursery:
            for _ in range(5):
                nursery.start_soon(take)
        assert sorted(map(str, takes)) == ["None"] * 4 + ["{'a': 2}"]
        assert await store.put("code", "k4", {"a": 4}, 60, client="c1")  # room again
        await store.delete("code", "k1")
        assert await store.get("code", "k1") is None
        assert await store.put("short", "k", {}, 1.5)
        ttl = await redis.client.execute("PTTL", redis.key("as", "short", "k"))
        assert isinstance(ttl, int)
        assert 0 < ttl <= 1500  # Redis expires every record itself
    finally:
        await redis.aclose()


async def test_two_replicas_share_keys_and_logins(redis_server: RedisServer) -> None:
    one, two = (RedisStore(redis_server.url, prefix="as-test2:") for _ in range(2))
    try:
        grants = []
        key_sets = []
        for redis in (one, two):
            store = RedisAuthStore(redis)
            keys = SigningKeys(store, Sealer(SECRET))
            await keys.refresh()
            key_sets.append(keys.jwks())
            grants.append(
                Grants(issuer="http://as", audience="http://as/mcp", store=store, keys=keys)
            )
        first, second = grants
        assert key_sets[0] == key_sets[1]
        assert len(key_sets[0]["keys"]) == 3  # the previous, current and next periods
        login = {"client_id": "c", "sub": "42", "idp": "https://github.com", "scope": "mcp"}
        issued = await first.start_family(login)
        again = await second.refresh(issued["refresh_token"], client_id="c", scope=None, jkt=None)
        assert again["refresh_token"] != issued["refresh_token"]
        with pytest.raises(GrantError, match="already used"):  # reused, on the other replica
            await first.refresh(issued["refresh_token"], client_id="c", scope=None, jkt=None)
    finally:
        await one.aclose()
        await two.aclose()
