"""Benchmarks of replicas: workers on one port, the Redis store, idle sessions in Redis.

Starts its own redis-server on a free loopback port (tests/scale/setup.sh installs it)
and ``trimcp run tests/scale/replica_app.py --transport http`` servers, then drives them
with :mod:`benchmarks.loadgen_http` (16 sessions, one ``echo`` in flight each):

- ``workers``: 1 worker vs ``--workers 2`` on one port, 2026-07-28 stateless calls. The
  load comes from ``wrk`` (Debian's package; ``benchmarks/wrk/stateless_call.lua`` checks
  every answer) when it is installed: on a 2-core machine the load generator shares the
  cores with the workers, and the Python one costs about 45 us of CPU per call, a third of
  what a worker spends, so with it two workers can reach at most ~1.5x one; wrk costs a few
  microseconds. ``--loadgen python`` uses :mod:`benchmarks.loadgen_http` instead;
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
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.procstats import read_cpu
from tests.scale.peers import REPLICA_APP, ROOT, RedisServer, free_port, stop, tools, wait_for_port

V2025 = "2025-11-25"
V2026 = "2026-07-28"


def serve(*extra: str) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    log = tempfile.NamedTemporaryFile(prefix="trimcp-bench-", suffix=".log")  # noqa: SIM115
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
        stderr=log,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    wait_for_port(port, process, "trimcp server")
    if "--workers" in extra:
        # The port answers once the first worker listens; a load generator connecting
        # then would put every connection on that worker. Wait for the supervisor's
        # "serving ... with N workers" line, printed once all of them listen.
        deadline = time.monotonic() + 60
        while "workers (Ctrl-C" not in Path(log.name).read_text(errors="replace"):
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"the workers did not all start: {Path(log.name).read_text()}")
            time.sleep(0.05)  # another process starting: nothing to wait on but its log
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


WRK_SCRIPT = Path(__file__).with_name("wrk") / "stateless_call.lua"


def measure_wrk(extra: list[str], seconds: float, connections: int = 16) -> dict[str, float]:
    """calls/s of 2026-07-28 stateless ``echo`` calls driven by wrk (one thread, keep-alive
    connections, every answer checked by the Lua script)."""
    process, url = serve(*extra)
    try:
        done = subprocess.run(
            ["wrk", "-t1", f"-c{connections}", f"-d{round(seconds)}s", "-s", str(WRK_SCRIPT), url],
            capture_output=True,
            text=True,
            timeout=seconds + 60,
            check=False,
        )
    finally:
        stop(process)
    found = re.search(r"WRK_RESULT (.*)", done.stdout)
    rate = re.search(r"Requests/sec:\s*([0-9.]+)", done.stdout)
    if done.returncode != 0 or found is None or rate is None:
        raise RuntimeError(f"wrk failed ({done.returncode}): {done.stdout}{done.stderr}")
    fields = dict(item.split("=") for item in found.group(1).split())
    if int(fields["bad"]) or int(fields["errors"]):
        raise RuntimeError(f"wrk saw bad answers or socket errors: {fields} {done.stderr}")
    return {
        "calls_per_s": round(float(rate.group(1))),
        "p50_ms": float(fields["p50_ms"]),
        "p99_ms": float(fields["p99_ms"]),
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
    parser.add_argument(
        "--loadgen",
        choices=("auto", "wrk", "python"),
        default="auto",
        help="load generator for 'workers' (auto: wrk when installed)",
    )
    parser.add_argument("--seconds", type=float, default=10.0, help="wrk run length")
    opts = parser.parse_args()
    only = set(opts.only or ("workers", "store", "idle"))
    paths = tools()
    redis = RedisServer(paths["SCALE_REDIS"], Path(tempfile.mkdtemp()))
    redis.start()
    results: dict[str, Any] = {}
    try:
        if "workers" in only:
            use_wrk = opts.loadgen == "wrk" or (
                opts.loadgen == "auto" and shutil.which("wrk") is not None
            )
            if use_wrk:
                # interleaved, so that a change in the machine's load hits both alike
                ones, twos = [], []
                for _ in range(opts.runs):
                    ones.append(measure_wrk([], opts.seconds))
                    twos.append(measure_wrk(["--workers", "2"], opts.seconds))
                one = max(r["calls_per_s"] for r in ones)
                two = max(r["calls_per_s"] for r in twos)
                results["workers (calls/s, wrk)"] = {
                    "1": one,
                    "2": two,
                    "ratio": round(two / one, 2),
                    "runs 1": ones,
                    "runs 2": twos,
                }
            else:
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
