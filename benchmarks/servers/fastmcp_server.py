"""Benchmark server: the standalone ``fastmcp`` package serving ``echo`` over stdio.

Run: ``python benchmarks/servers/fastmcp_server.py``. If ``fastmcp`` is not installed it
prints why on stderr and exits with status 3, so a benchmark driver can skip it.
Logging at WARNING, like every benchmark server.
"""

from __future__ import annotations

import logging
import sys

EXIT_UNAVAILABLE = 3


def main() -> int:
    try:
        from fastmcp import FastMCP
    except ImportError as exc:
        print(
            f"fastmcp_server: the standalone 'fastmcp' package is not importable ({exc}); "
            "install it (pip install fastmcp) to benchmark it.",
            file=sys.stderr,
        )
        return EXIT_UNAVAILABLE

    logging.basicConfig(level=logging.WARNING)
    server = FastMCP("bench-fastmcp")

    @server.tool
    def echo(text: str) -> str:
        """Return the given text unchanged."""
        return text

    # show_banner exists in fastmcp >= 2.10; it would print to stderr at start-up.
    try:
        server.run("stdio", show_banner=False, log_level="WARNING")
    except TypeError:
        server.run("stdio")
    return 0


if __name__ == "__main__":
    sys.exit(main())
