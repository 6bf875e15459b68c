"""Benchmarks of replicas: workers on one port, the Redis store, idle sessions in Redis.

Starts its own redis-server on a free loopback port (tests/scale/setup.sh installs it)
and ``trimcp run tests/scale/replica_app.py --transport http`` servers, then drives them
with :mod:`benchmarks.loadgen_http` (16 sessions, one ``echo`` in flight each):

- ``workers``: 1 worker vs ``--workers 2`` on one port, 2026-07-28 stateless calls;
- ``store``: the in-memory store vs ``--store redis://...``, 16 sessions, for 2025-11-25
  session calls and 2026-07-28 stateless calls;
- ``idle``: open ``--idle`` 2025 sessions through a Redis-backed server and report what
  Redis holds per session (``used_memory`` growth / sessions, and ``MEMORY USAGE`` of one
  session's keys).

Run from the repository root: ``.venv/bin/python -m benchmarks.replicas [-n 6000]``.
The numbers depend on the machine's load: the load generator shares its cores.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from benchmarks.procstats import read_cpu
from tests.scale.peers import REPLICA_APP, ROOT, RedisServer, free_port, stop, tools, wait_for_port

V2025 = "2025-11-25"
V2026 = "2026-07-28"


def serve(*extra: str) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "trimcp",
            "run",
            str(REPLICA_APP),
            "--transport",
            "http",
            "--port",
            str(port),
            *extra,
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    wait_for_port(port, process, "trimcp server")
    return process, f"http://127.0.0.1:{port}/mcp"


def loadgen(url: str, *args: str) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks.loadgen_http", url, *args],
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
        cwd=ROOT,
    )
    if done.returncode != 0:
        raise RuntimeError(done.stderr)
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def measure(
    extra: list[str], version: str, n: int, redis: RedisServer | None = None
) -> dict[str, float]:
    """calls/s, and CPU microseconds per call of the server (and of Redis when given):
    CPU per call holds up on a loaded machine, where calls/s mostly measures the load."""
    process, url = serve(*extra)
    try:
        redis_pid = redis.process.pid if redis is not None and redis.process else None
        redis_before = read_cpu(redis_pid).total if redis_pid else 0.0
        result = loadgen(
            url,
            "-n",
            str(n),
            "--sessions",
            "16",
            "--protocol-version",
            version,
            "--pid",
            str(process.pid),
        )
        redis_after = read_cpu(redis_pid).total if redis_pid else 0.0
    finally:
        stop(process)
    return {
        "calls_per_s": round(float(result["calls_per_s"])),
        "server_cpu_us_per_call": round(float(result["server_cpu_us_per_call"] or 0)),
        "redis_cpu_us_per_call": round((redis_after - redis_before) * 1e6 / n),
    }


def best_of(runs: int, *args: Any) -> dict[str, float]:
    """The run with the most calls/s, and the least CPU per call seen."""
    results = [measure(*args) for _ in range(runs)]
    best = dict(max(results, key=lambda r: r["calls_per_s"]))
    for key in ("server_cpu_us_per_call", "redis_cpu_us_per_call"):
        best[key] = min(r[key] for r in results)
    return best


def redis_used_memory(redis: RedisServer) -> int:
    done = subprocess.run(
        ["redis-cli", "-p", str(redis.port), "INFO", "memory"],
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    )
    for line in done.stdout.splitlines():
        if line.startswith("used_memory:"):
            return int(line.split(":", 1)[1])
    raise RuntimeError("redis-cli INFO memory: no used_memory")


def redis_cli(redis: RedisServer, *args: str) -> str:
    done = subprocess.run(
        ["redis-cli", "-p", str(redis.port), *args],
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    )
    return done.stdout.strip()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", type=int, default=6000, help="measured calls per run")
    parser.add_argument("--idle", type=int, default=1000, help="idle sessions for 'idle'")
    parser.add_argument("--runs", type=int, default=3, help="runs of each (best is kept)")
    parser.add_argument("--only", choices=("workers", "store", "idle"), action="append")
    opts = parser.parse_args()
    only = set(opts.only or ("workers", "store", "idle"))
    paths = tools()
    redis = RedisServer(paths["SCALE_REDIS"], Path(tempfile.mkdtemp()))
    redis.start()
    results: dict[str, Any] = {}
    try:
        if "workers" in only:
            one = best_of(opts.runs, [], V2026, opts.n)["calls_per_s"]
            two = best_of(opts.runs, ["--workers", "2"], V2026, opts.n)["calls_per_s"]
            results["workers (calls/s)"] = {"1": one, "2": two, "ratio": round(two / one, 2)}
        if "store" in only:
            for version in (V2025, V2026):
                memory = best_of(opts.runs, [], version, opts.n)
                shared = best_of(opts.runs, ["--store", redis.url], version, opts.n, redis)
                results[f"store {version}"] = {
                    "memory": memory,
                    "redis": shared,
                    "calls_per_s_change": round(
                        shared["calls_per_s"] / memory["calls_per_s"] - 1, 3
                    ),
                }
        if "idle" in only:
            redis_cli(redis, "FLUSHALL")
            before = redis_used_memory(redis)
            process, url = serve("--store", redis.url)
            try:
                from benchmarks.loadgen_http import idle_sessions

                idle_sessions(url, opts.idle, pid=process.pid, warmup=0, cleanup=False)
                after = redis_used_memory(redis)
                keys = redis_cli(redis, "--scan", "--pattern", "trimcp:session:*").split()
                one = keys[0] if keys else ""
                session_id = one.rsplit(":", 1)[-1]
                results["idle 2025 session in Redis"] = {
                    "sessions": opts.idle,
                    "session_records": len(keys),
                    "used_memory_per_session": round((after - before) / opts.idle),
                    "record_bytes": int(redis_cli(redis, "MEMORY", "USAGE", one) or 0),
                    "events_bytes": int(
                        redis_cli(redis, "MEMORY", "USAGE", f"trimcp:ev:{session_id}") or 0
                    ),
                }
            finally:
                stop(process)
    finally:
        redis.stop()
    json.dump(results, sys.stdout, indent=2)
    print()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
