"""Micro-benchmark: Redis round trips from Trio, coredis vs hiredis's reader on Trio streams.

Starts nothing itself: point it at a running ``redis-server`` (``--port``, default 6379 on
127.0.0.1). For each client it times N sequential round trips of ``SET``, ``GET`` and
``XADD`` (one request, wait for the reply, next), the shape a store call has on the hot
path, and prints microseconds per round trip (best of several runs).

The hiredis variant is the floor a hand-made client could reach: ``hiredis.pack_command``
encodes, one ``trio.SocketStream`` carries, ``hiredis.Reader`` parses. It is measured, not
shipped: trimcp uses coredis (see trimcp/stores/redis.py for why).

Run from the repository root: .venv/bin/python -m benchmarks.redis_clients --port 6379
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Awaitable, Callable

import trio

ROUNDS = 2000
REPEATS = 5
Call = Callable[[int], Awaitable[object]]


async def _best(call: Call) -> float:
    best = float("inf")
    for _ in range(REPEATS):
        start = time.perf_counter()
        for i in range(ROUNDS):
            await call(i)
        best = min(best, time.perf_counter() - start)
    return best / ROUNDS * 1e6


async def bench_coredis(port: int) -> dict[str, float]:
    import coredis

    client: coredis.Redis[bytes] = coredis.Redis(host="127.0.0.1", port=port)
    async with client:
        value = b"x" * 200
        return {
            "SET": await _best(lambda i: client.set(f"bench:c:{i}", value)),
            "GET": await _best(lambda i: client.get(f"bench:c:{i}")),
            "XADD": await _best(
                lambda i: client.xadd(
                    "bench:c:stream",
                    {"m": value},
                    trim_strategy=coredis.PureToken.MAXLEN,
                    threshold=1000,
                )
            ),
        }


async def bench_hiredis(port: int) -> dict[str, float]:
    import hiredis

    stream = await trio.open_tcp_stream("127.0.0.1", port)
    reader = hiredis.Reader()

    async def command(*args: str | bytes) -> object:
        await stream.send_all(hiredis.pack_command(args))
        while (reply := reader.gets()) is False:
            reader.feed(await stream.receive_some(65536))
        return reply

    value = b"x" * 200
    async with stream:
        return {
            "SET": await _best(lambda i: command("SET", f"bench:h:{i}", value)),
            "GET": await _best(lambda i: command("GET", f"bench:h:{i}")),
            "XADD": await _best(
                lambda i: command("XADD", "bench:h:stream", "MAXLEN", "1000", "*", "m", value)
            ),
        }


async def main(port: int) -> None:
    for name, bench in (("coredis", bench_coredis), ("hiredis+trio", bench_hiredis)):
        result = await bench(port)
        cells = "  ".join(f"{op} {us:6.1f} us" for op, us in result.items())
        print(f"{name:13s} {cells}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=6379)
    trio.run(main, parser.parse_args().port)
