"""Micro-benchmark: the notification bus between two replicas (``trimcp.stores.redis_bus``).

Starts nothing itself: point it at a running ``redis-server`` (``--port``, default 6379 on
127.0.0.1). Two ``RedisStore`` objects in this process stand for two replicas. It reports:

- ``relay_us``: one message sent to the other replica (``Bus.send``: one ``PUBLISH``) until
  that replica's subscriber has it, sequentially (what relaying a client's answer adds);
- ``burst_per_s``: messages per second the other replica receives when one replica
  publishes a burst through its queue (``publish_nowait``, batched ``PUBLISH``es).

Best of several runs. Run from the repository root:
``.venv/bin/python -m benchmarks.bus --port 6379``
"""

from __future__ import annotations

import argparse
import json
import time

import trio

from trimcp.stores import RedisStore
from trimcp.stores.bus import BusMessage

ROUNDS = 2000
BURST = 1000
REPEATS = 5


async def measure(port: int) -> dict[str, float]:
    url = f"redis://127.0.0.1:{port}/0"
    a, b = RedisStore(url, prefix="bench-bus:"), RedisStore(url, prefix="bench-bus:")
    got = trio.Event()
    count = 0

    async def heard(message: BusMessage) -> None:
        nonlocal count, got
        count += 1
        if message.get("t") == "last" or message.get("t") == "one":
            got.set()

    b.bus.subscribe(heard)
    results: dict[str, float] = {}
    async with trio.open_nursery() as nursery:
        await nursery.start(a.run)
        await nursery.start(b.run)
        await b.bus.connected.wait()
        best = float("inf")
        for _ in range(REPEATS):
            start = time.perf_counter()
            for i in range(ROUNDS):
                got = trio.Event()
                await a.bus.send(b.bus.tag, {"t": "one", "n": i})
                await got.wait()
            best = min(best, time.perf_counter() - start)
        results["relay_us"] = round(best / ROUNDS * 1e6, 1)
        best = float("inf")
        for _ in range(REPEATS):
            count = 0
            got = trio.Event()
            start = time.perf_counter()
            for i in range(BURST - 1):
                a.bus.publish_nowait({"t": "x", "n": i})
            a.bus.publish_nowait({"t": "last"})
            await got.wait()
            best = min(best, time.perf_counter() - start)
        results["burst_per_s"] = round(BURST / best)
        results["burst_dropped"] = a.bus.dropped
        nursery.cancel_scope.cancel()
    await a.aclose()
    await b.aclose()
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=6379)
    args = parser.parse_args()
    print(json.dumps(trio.run(measure, args.port)))


if __name__ == "__main__":
    main()
