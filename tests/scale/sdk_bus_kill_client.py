"""The official SDK client (PyPI ``mcp``) in one 2025-11-25 session through a balancer,
hearing resource updates on its GET stream while the test kills replicas.

Usage: ``python sdk_bus_kill_client.py URL``. Prints ``ready`` once subscribed, then reads
one command per line on stdin: ``probe`` touches fresh resources until an update arrives
on the GET stream (its replica may just have died: the SDK reconnects the stream with
``Last-Event-ID`` to another replica), then touches ``STEADY`` more and checks each is
heard exactly once; it prints ``ok <attempts> <heard>/<steady> <duplicates>``. ``quit``
ends. Every wait is bounded. Imports nothing from trimcp.
"""

from __future__ import annotations

import sys
import traceback
from collections import Counter

import anyio
import mcp_types as types
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client

STEADY = 5
URIS = 200  # bus://0 .. bus://199, all subscribed


async def run(url: str) -> None:
    heard: Counter[str] = Counter()
    arrived = anyio.Event()

    async def on_message(message: object) -> None:
        nonlocal arrived
        if isinstance(message, types.ResourceUpdatedNotification):
            heard[str(message.params.uri)] += 1
            arrived.set()
            arrived = anyio.Event()

    async def heard_within(uri: str, seconds: float) -> bool:
        with anyio.move_on_after(seconds):
            while not heard[uri]:
                await arrived.wait()
            return True
        return False

    async with (
        streamable_http_client(url) as (read, write),
        ClientSession(read, write, read_timeout_seconds=10, message_handler=on_message) as session,
    ):
        await session.initialize()
        for n in range(URIS):
            await session.subscribe_resource(f"bus://{n}")
        print("ready", flush=True)
        fresh = iter(range(URIS))
        stdin = anyio.wrap_file(sys.stdin)
        while (line := (await stdin.readline()).strip()) != "quit":
            if line != "probe":
                continue
            attempts = 0
            with anyio.move_on_after(40):
                while True:
                    attempts += 1
                    n = next(fresh)
                    try:
                        await session.call_tool("touch", {"n": n})
                    except Exception:
                        continue  # a POST through a dying replica: try again
                    if await heard_within(f"bus://{n}", 3):
                        break
            steady = [next(fresh) for _ in range(STEADY)]
            for n in steady:
                await session.call_tool("touch", {"n": n})
            got = 0
            for n in steady:
                got += await heard_within(f"bus://{n}", 10)
            for _ in range(3):
                await session.send_ping()  # a duplicate would arrive meanwhile
            duplicates = sum(1 for count in heard.values() if count > 1)
            print(f"ok {attempts} {got}/{STEADY} {duplicates}", flush=True)


def main() -> int:
    try:
        anyio.run(run, sys.argv[1])
    except BaseException:
        print("error " + traceback.format_exc().replace("\n", " | "), flush=True)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
