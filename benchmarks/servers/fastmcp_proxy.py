"""FastMCP's proxy (``fastmcp.server.create_proxy``) in front of the stdio server given as
arguments, served over stdio: the comparison point of ``benchmarks/proxy_overhead.py``.

Run: ``python benchmarks/servers/fastmcp_proxy.py <backend argv...>`` with an interpreter
that has ``fastmcp`` (exit status 3 when it is missing).
"""

from __future__ import annotations

import logging
import sys

if __name__ == "__main__":
    try:
        from fastmcp.client.transports import StdioTransport
        from fastmcp.server import create_proxy
    except ImportError as exc:
        sys.stderr.write(f"fastmcp is not installed: {exc}\n")
        raise SystemExit(3) from None
    logging.basicConfig(level=logging.WARNING)
    backend = sys.argv[1:]
    create_proxy(StdioTransport(command=backend[0], args=backend[1:])).run(show_banner=False)
