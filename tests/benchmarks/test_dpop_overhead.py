"""A smoke run of ``benchmarks.dpop_overhead`` with tiny counts, both ways (in process and
against server processes over loopback): every call answered, a number for each kind.
No timing assertions."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_the_dpop_benchmark_runs_both_ways() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks.dpop_overhead", "-n", "20", "--rounds", "1", "--json"],
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    results = json.loads(done.stdout)
    assert [r["transport"] for r in results] == ["asgi", "socket"]
    for result in results:
        assert result["proof_algorithm"] == "ES256"
        assert result["calls_per_batch"] == 20
        assert result["bearer_cpu_us_per_call"] >= 0
        assert result["dpop_cpu_us_per_call"] >= 0
