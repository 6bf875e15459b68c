"""A trimcp proxy in front of the stdio server given after ``--``: over stdio (through
``ProxyServer.run``, or with ``--serve-stdio`` through ``transports.stdio.serve_stdio``),
or with ``--http`` over Streamable HTTP on a free loopback port (the URL is printed on
stdout once listening; SIGTERM or SIGINT stops it).

Run: ``python tests/peers/proxy_peer.py [--http | --serve-stdio] -- python some_server.py``
"""

from __future__ import annotations

import os
import signal
import sys

import trio

from trimcp.proxy import ProxyServer
from trimcp.transports.http_server import serve_http
from trimcp.transports.stdio import serve_stdio


async def serve_http_until_signalled(proxy: ProxyServer) -> None:
    stop = trio.Event()
    with trio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
        async with trio.open_nursery() as nursery:
            port = await nursery.start(
                lambda task_status: serve_http(
                    proxy, port=0, shutdown_trigger=stop.wait, task_status=task_status
                )
            )
            print(f"http://127.0.0.1:{port}/mcp", flush=True)
            async for _ in signals:
                stop.set()
                break


if __name__ == "__main__":
    argv = sys.argv[sys.argv.index("--") + 1 :]
    proxy = ProxyServer.for_command(argv, env=dict(os.environ))
    flags = sys.argv[: sys.argv.index("--")]
    if "--http" in flags:
        trio.run(serve_http_until_signalled, proxy)
    elif "--serve-stdio" in flags:
        trio.run(serve_stdio, proxy)
    else:
        proxy.run("stdio")
