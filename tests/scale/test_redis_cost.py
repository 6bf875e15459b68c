"""What one call costs in Redis, counted by Redis itself (``INFO commandstats``).

A ``trimcp run tests/scale/replica_app.py --store redis://...`` replica; trimcp's client
in a 2025-11-25 session makes calls straight to it. Each call costs two round trips:
the session's record is read before the call is answered (``GET`` + ``PEXPIRE``: a
session ended on another replica is 404 here at once, and its expiry moves out), and its
answer is stored for resumability (``XADD`` + ``PEXPIRE``). Nothing else: the request ids
that let another replica end the call if this one dies travel in the event ids, not in
Redis commands of their own. Only the heartbeat (a ``SET`` a second) runs besides.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
import trio

from tests.scale.peers import RedisServer, Replica
from trimcp import connect_http
from trimcp.stores.redis_client import RedisClient

CALLS = 50


@pytest.fixture
def replica(scale_tools: dict[str, str], redis_server: RedisServer) -> Iterator[Replica]:
    started = Replica(redis_server.url)
    try:
        yield started
    finally:
        started.stop()


async def command_counts(client: RedisClient) -> dict[str, int]:
    info = await client.execute("INFO", "commandstats")
    assert isinstance(info, bytes)
    return {
        name: int(calls)
        for name, calls in re.findall(r"cmdstat_([\w|]+):calls=(\d+)", info.decode())
    }


async def test_a_2025_call_costs_a_session_check_and_an_xadd(
    replica: Replica, redis_server: RedisServer
) -> None:
    redis = RedisClient(redis_server.url)
    try:
        with trio.fail_after(30):
            async with connect_http(replica.url, mode="legacy") as client:
                await client.call_tool("echo", {"text": "warm"})
                before = await command_counts(redis)
                started = trio.current_time()
                for n in range(CALLS):
                    await client.call_tool("echo", {"text": str(n)})
                after = await command_counts(redis)
                seconds = trio.current_time() - started
    finally:
        await redis.aclose()
    spent = {name: after.get(name, 0) - before.get(name, 0) for name in after}
    spent = {name: count for name, count in spent.items() if count}
    assert spent.pop("get") == CALLS  # the session's record
    assert spent.pop("xadd") == CALLS  # the answer
    assert spent.pop("incrby") == CALLS  # its bytes
    assert spent.pop("xlen") == CALLS
    assert spent.pop("zadd") == CALLS  # its stream, known after its events are trimmed
    # The session and the bus's three keys of it; the log, its bytes, its streams.
    assert spent.pop("pexpire") == 7 * CALLS
    spent.pop("info", None)  # ours
    assert spent.pop("set", 0) <= seconds + 2  # the heartbeat, once a second
    assert spent == {}
