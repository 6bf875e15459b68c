"""Running the real ``trimcp`` entry point as a subprocess, with every wait bounded."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
PEER = str(ROOT / "tests" / "peers" / "trimcp_stdio_server.py")
APP = str(ROOT / "tests" / "cli" / "app_server.py")
PEER_ARGV = ["--", sys.executable, PEER]
APP_ARGV = ["--", sys.executable, "-m", "trimcp", "run", APP]
#: Bound of one CLI run (generous: CI machines are slow; nothing waits this long normally).
RUN_TIMEOUT = 60.0


def cli(
    *args: str, env: dict[str, str] | None = None, cwd: Path | str = ROOT
) -> subprocess.CompletedProcess[str]:
    """``python -m trimcp ARGS`` to completion (bounded by ``RUN_TIMEOUT``)."""
    return subprocess.run(
        [sys.executable, "-m", "trimcp", *args],
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT,
        cwd=cwd,
        env={**os.environ, **(env or {})},
        check=False,
    )


def cli_json(*args: str) -> Any:
    completed = cli(*args)
    assert completed.returncode == 0, completed.stderr
    return json.loads(completed.stdout)


def spawn(*args: str, env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    """``python -m trimcp ARGS`` in the background (stderr piped, for its startup line)."""
    return subprocess.Popen(
        [sys.executable, "-m", "trimcp", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
        env={**os.environ, **(env or {})},
    )


def wait_for(predicate: Any, what: str, timeout: float = 30.0) -> Any:
    """Poll ``predicate`` every 20 ms until it returns something truthy (bounded)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.02)
    raise AssertionError(f"timed out waiting for {what}")


def read_line(stream: Any, timeout: float = 30.0) -> str:
    """One line from a pipe, bounded (a reader thread: pipes have no timeout)."""
    import queue
    import threading

    box: queue.Queue[str] = queue.Queue()
    threading.Thread(target=lambda: box.put(stream.readline()), daemon=True).start()
    try:
        return box.get(timeout=timeout)
    except queue.Empty:
        raise AssertionError("timed out waiting for a line") from None


def stop(process: subprocess.Popen[str], timeout: float = 30.0) -> int:
    """Wait for ``process`` to exit within ``timeout`` (killed and failed otherwise)."""
    try:
        return process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
        raise AssertionError(f"the process did not exit within {timeout} s") from None


def served_over_http(target: str) -> Iterator[str]:
    """``trimcp run TARGET`` over HTTP on a free port: its endpoint URL, then a clean
    stop (SIGTERM, exit 0)."""
    yield from served(target)


def served(
    target: str, *extra: str, transport: str = "http", host: str = "127.0.0.1"
) -> Iterator[str]:
    """``trimcp run TARGET --transport TRANSPORT --host HOST --port 0 EXTRA...``: the
    endpoint URL its startup line names, then a clean stop (SIGTERM, exit 0)."""
    server = spawn("run", target, "--transport", transport, "--host", host, "--port", "0", *extra)
    try:
        line = read_line(server.stderr)
        found = re.search(rf" at ((?:http|ws)://{re.escape(host)}:\d+/mcp) ", line)
        assert found, line
        yield found.group(1)
        server.send_signal(signal.SIGTERM)
        assert stop(server) == 0
    finally:
        reap(server)


def reap(process: subprocess.Popen[str]) -> None:
    """Kill ``process`` if it still runs and close its pipes (a test's ``finally``)."""
    if process.poll() is None:
        process.kill()
        process.wait()
    for stream in (process.stdout, process.stderr):
        if stream is not None:
            stream.close()
