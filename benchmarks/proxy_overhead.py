"""Proxy overhead: calls/s and CPU per sequential ``tools/call echo`` against a trimcp
stdio server directly, through trimcp's proxy, and through FastMCP's proxy, in one run.

CPU is read from /proc: ``proxy CPU`` is the proxy process alone, ``tree CPU`` the proxy
and its backend together. The backend is ``benchmarks/servers/trimcp_server.py``.
FastMCP runs from the interpreter given with ``--fastmcp-python`` (it is not a dependency
of trimcp; e.g. a venv with ``pip install fastmcp``), skipped when absent.

Run from the repository root:
  .venv/bin/python -m benchmarks.proxy_overhead [-n 2000] [--fastmcp-python PATH]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from benchmarks.loadgen_stdio import run_sequential as run_seq

HERE = Path(__file__).resolve().parent
BACKEND = [sys.executable, str(HERE / "servers" / "trimcp_server.py")]
TRIMCP_PROXY = [sys.executable, str(HERE.parent / "tests" / "peers" / "proxy_peer.py"), "--"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", type=int, default=2000)
    parser.add_argument("--fastmcp-python", default=None)
    opts = parser.parse_args(argv)
    rows = {"direct": BACKEND, "trimcp proxy": [*TRIMCP_PROXY, *BACKEND]}
    if opts.fastmcp_python:
        rows["fastmcp proxy"] = [
            opts.fastmcp_python,
            str(HERE / "servers" / "fastmcp_proxy.py"),
            *BACKEND,
        ]
    results = {}
    for name, argv_ in rows.items():
        own = run_seq(argv_, opts.n)
        tree = run_seq(argv_, opts.n, tree_cpu=True)
        results[name] = (own, tree)
        print(
            f"{name:14s} {own['calls_per_s']:8.0f} calls/s  "
            f"p50 {own['latency_us']['p50'] / 1000:6.2f} ms  "
            f"proxy CPU {own['server_cpu_us_per_call']:7.0f} us/call  "
            f"tree CPU {tree['server_cpu_us_per_call']:7.0f} us/call"
        )
    direct = results["direct"][0]["server_cpu_us_per_call"]
    for name in rows:
        if name != "direct":
            own, tree = results[name]
            print(
                f"{name}: proxy CPU / direct CPU = {own['server_cpu_us_per_call'] / direct:.2f}"
                f"; tree / direct = {tree['server_cpu_us_per_call'] / direct:.2f}"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
