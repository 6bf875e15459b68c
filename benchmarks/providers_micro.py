"""Micro-benchmark of the providers/transforms seam: what ``tools/call`` and ``tools/list``
(500 tools, one page) cost through ``Server.handle_request`` with no provider or transform
added (the hot path, which must not move), and with one ``Namespace`` transform.

Best of several interleaved runs, in microseconds per request. To compare two checkouts,
run it in each, alternating (through a whole session the difference drowns in scheduling
noise; see benchmarks/middleware_micro.py):

    PYTHONPATH=/path/to/before python -m benchmarks.providers_micro
    PYTHONPATH=/path/to/after  python -m benchmarks.providers_micro

The ``namespace`` rows appear only where trimcp has transforms.
"""

from __future__ import annotations

import time
from typing import Any

import trio

import trimcp
from trimcp.server import Server
from trimcp.session.context import RequestContext
from trimcp.types import CallToolRequestParams, PaginatedRequestParams

CALLS = 20_000
LISTS = 400
REPEATS = 7
TOOLS = 500


def make(namespace: bool) -> Server:
    app = Server("bench")

    @app.tool()
    def add(a: int, b: int) -> int:
        return a + b

    for index in range(TOOLS - 1):
        app.add_tool(lambda: "x", name=f"tool_{index}", description=f"tool number {index}")
    if namespace:
        from trimcp.server.transforms import Namespace

        app.add_transform(Namespace("ns"))
    return app


async def timed(app: Server, method: str, params: Any, count: int) -> float:
    async with trimcp.connect_memory(app, mode="legacy") as client:
        server_session = None  # handle_request needs a session: borrow a live one
        for session, _ in app._sessions.live():
            server_session = session
        assert server_session is not None
        ctx = RequestContext(server_session, 1, method, params, None, trio.CancelScope())
        start = time.perf_counter()
        for _ in range(count):
            await app.handle_request(ctx)
        elapsed = time.perf_counter() - start
        await client.ping()
    return elapsed / count


async def main_async() -> None:
    try:
        import trimcp.server.transforms  # noqa: F401

        variants = {"plain": make(False), "namespace": make(True)}
    except ImportError:
        variants = {"plain": make(False)}
    best: dict[str, float] = {}
    for _ in range(REPEATS):
        for label, app in variants.items():
            name = "ns_add" if label == "namespace" else "add"
            call = CallToolRequestParams(name=name, arguments={"a": 1, "b": 2})
            for what, method, params, count in (
                ("tools/call", "tools/call", call, CALLS),
                ("tools/list", "tools/list", PaginatedRequestParams(), LISTS),
            ):
                key = f"{label:9} {what}"
                took = await timed(app, method, params, count)
                best[key] = min(best.get(key, took), took)
    for key, value in best.items():
        print(f"{key}: {value * 1e6:9.2f} us")


def main() -> None:
    trio.run(main_async)


if __name__ == "__main__":
    main()
