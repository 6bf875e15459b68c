"""A trimcp proxy in front of the stdio server given after ``--``: over stdio, or with
``--http`` over Streamable HTTP on a free loopback port (the URL is printed on stdout
once listening; SIGTERM or SIGINT stops it).

Run: ``python tests/peers/proxy_peer.py [--http] -- python some_server.py``
"""

from __future__ import annotations

import os
import signal
import sys

import trio

from trimcp.proxy import ProxyServer
from trimcp.transports.http_server import serve_http


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
    if "--http" in sys.argv[: sys.argv.index("--")]:
        trio.run(serve_http_until_signalled, proxy)
    else:
        proxy.run("stdio")
