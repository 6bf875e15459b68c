"""Proxy overhead: CPU per call and calls/s of sequential ``tools/call echo`` against a
trimcp stdio server directly, through trimcp's proxy, and through FastMCP's proxy, in one
run.

CPU is read from /proc: ``proxy CPU`` is the serving process alone (the server itself
for ``direct``, the proxy for the others), ``tree CPU`` the proxy and its backend
together. The backend is ``benchmarks/servers/trimcp_server.py``. FastMCP runs from the
interpreter given with ``--fastmcp-python`` (or ``$FASTMCP_PYTHON``; it is not a
dependency of trimcp: e.g. a venv with ``pip install fastmcp``), skipped when absent.

The rows run in turn, ``--rounds`` times. On a shared machine single runs vary a lot, so
the summary gives two estimates of each proxy's CPU per call as a multiple of the direct
server's: the median of the rounds' ratios (each compares runs made next to each other)
and the ratio of the best runs (the ones least disturbed by other load).

Run from the repository root:
  .venv/bin/python -m benchmarks.proxy_overhead [-n 2000] [--rounds 3] [--fastmcp-python PATH]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
from pathlib import Path
from typing import Any

from benchmarks.loadgen_stdio import run_sequential as run_seq

HERE = Path(__file__).resolve().parent
BACKEND = [sys.executable, str(HERE / "servers" / "trimcp_server.py")]
TRIMCP_PROXY = [sys.executable, str(HERE.parent / "tests" / "peers" / "proxy_peer.py"), "--"]
#: The issue's target: proxy CPU per call below this multiple of the direct server's.
TARGET = 1.5


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", type=int, default=2000, help="measured calls per run")
    parser.add_argument("--rounds", type=int, default=5, help="runs of each row, in turn")
    parser.add_argument("--fastmcp-python", default=os.environ.get("FASTMCP_PYTHON"))
    opts = parser.parse_args(argv)
    rows = {"direct": BACKEND, "trimcp proxy": [*TRIMCP_PROXY, *BACKEND]}
    if opts.fastmcp_python:
        rows["fastmcp proxy"] = [
            opts.fastmcp_python,
            str(HERE / "servers" / "fastmcp_proxy.py"),
            *BACKEND,
        ]
    runs: dict[str, list[tuple[dict[str, Any], dict[str, Any]]]] = {name: [] for name in rows}
    for round_ in range(opts.rounds):
        for name, argv_ in rows.items():
            own = run_seq(argv_, opts.n, stderr=-3)
            # The direct server has no backend: its tree is itself.
            tree = own if name == "direct" else run_seq(argv_, opts.n, tree_cpu=True, stderr=-3)
            runs[name].append((own, tree))
            print(
                f"round {round_ + 1}  {name:14s} {own['calls_per_s']:7.0f} calls/s  "
                f"p50 {own['latency_us']['p50'] / 1000:6.2f} ms  "
                f"proxy CPU {own['server_cpu_us_per_call']:6.0f} us/call  "
                f"tree CPU {tree['server_cpu_us_per_call']:6.0f} us/call",
                flush=True,
            )
    print()
    print(f"median of {opts.rounds} rounds, {opts.n} sequential echo calls each:")
    for name, pairs in runs.items():
        own_cpu = statistics.median(own["server_cpu_us_per_call"] for own, _ in pairs)
        tree_cpu = statistics.median(tree["server_cpu_us_per_call"] for _, tree in pairs)
        rate = statistics.median(own["calls_per_s"] for own, _ in pairs)
        print(
            f"  {name:14s} {rate:7.0f} calls/s  proxy CPU {own_cpu:6.0f} us/call  "
            f"tree CPU {tree_cpu:6.0f} us/call"
        )
    direct = runs["direct"]
    for name, pairs in runs.items():
        if name == "direct":
            continue
        ratios = [
            own["server_cpu_us_per_call"] / base["server_cpu_us_per_call"]
            for (own, _), (base, _) in zip(pairs, direct, strict=True)
        ]
        trees = [
            tree["server_cpu_us_per_call"] / base["server_cpu_us_per_call"]
            for (_, tree), (base, _) in zip(pairs, direct, strict=True)
        ]
        ratio = statistics.median(ratios)
        best = min(own["server_cpu_us_per_call"] for own, _ in pairs) / min(
            base["server_cpu_us_per_call"] for base, _ in direct
        )
        print(
            f"{name}: proxy CPU per call = {ratio:.2f}x direct (median of rounds: "
            f"{', '.join(f'{r:.2f}' for r in ratios)}), {best:.2f}x best to best; "
            f"target < {TARGET}x; proxy + backend = {statistics.median(trees):.2f}x direct"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
