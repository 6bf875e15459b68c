"""Micro-benchmark of server middleware: the cost per call of 3 no-op middlewares.

Answers the same ``tools/call`` with ``Server.handle_request`` (what the session engine
calls in the request's task) on a server without middleware and on one with 3 no-op
middlewares, interleaved, best of several runs, and prints microseconds per call and the
difference. (Through a whole session the difference drowns in scheduling noise: a
sequential in-memory call costs ~400 us on a busy 2-core machine, +-50 us run to run.)

Run from the repository root: .venv/bin/python -m benchmarks.middleware_micro
"""

from __future__ import annotations

import time
from typing import Any

import trio

import trimcp
from trimcp.server import Server
from trimcp.server.middleware import Call, Next
from trimcp.session.context import RequestContext
from trimcp.types import CallToolRequestParams

CALLS = 20_000
REPEATS = 7


async def noop(call: Call, call_next: Next) -> Any:
    return await call_next(call)


def make(layers: int) -> Server:
    app = Server("bench", middleware=[noop] * layers)

    @app.tool()
    def add(a: int, b: int) -> int:
        return a + b

    return app


async def direct(app: Server, calls: int) -> float:
    async with trimcp.connect_memory(app, mode="legacy") as client:
        server_session = None  # handle_request needs a session: borrow a live one
        for session, _ in app._sessions.live():
            server_session = session
        assert server_session is not None
        params = CallToolRequestParams(name="add", arguments={"a": 1, "b": 2})
        ctx = RequestContext(server_session, 1, "tools/call", params, None, trio.CancelScope())
        start = time.perf_counter()
        for _ in range(calls):
            await app.handle_request(ctx)
        elapsed = time.perf_counter() - start
        await client.ping()
    return elapsed / calls


async def main_async() -> None:
    plain, layered = make(0), make(3)
    best = {"0": 1.0, "3": 1.0}
    for _ in range(REPEATS):
        for label, app in (("3", layered), ("0", plain)):
            best[label] = min(best[label], await direct(app, CALLS))
    for key, value in best.items():
        print(f"{key} middleware: {value * 1e6:8.2f} us/call (Server.handle_request, tools/call)")
    print(f"3 no-op middlewares add {(best['3'] - best['0']) * 1e6:.2f} us/call")


def main() -> None:
    trio.run(main_async)


if __name__ == "__main__":
    main()
