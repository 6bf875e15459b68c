"""Processes around a run: an HTTP server child with bounded start and stop, and the
idle-core check taken before every run.
"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from benchmarks.suite.impls import EXIT_UNAVAILABLE

#: Bound on an HTTP server's start-up (spawn -> accepting connections), in seconds.
START_TIMEOUT = 30.0
#: Bound on each step of stopping a server (SIGTERM, then SIGKILL), in seconds.
STOP_TIMEOUT = 5.0


class Unavailable(RuntimeError):
    """The server says it cannot run here (exit status 3); the message says why."""


class StartFailed(RuntimeError):
    """The server exited or did not accept connections in time."""


def free_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@dataclass(frozen=True)
class HttpServer:
    url: str
    pid: int


def _stop(proc: subprocess.Popen[bytes]) -> None:
    for stop in (proc.terminate, proc.kill):
        if proc.poll() is not None:
            return
        stop()
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=STOP_TIMEOUT)


def _tail(path: str, limit: int = 2000) -> str:
    with open(path, "rb") as f:
        data = f.read()
    return data[-limit:].decode("utf-8", "replace").strip()


@contextlib.contextmanager
def http_server(
    argv: Sequence[str], *, path: str = "/mcp", start_timeout: float = START_TIMEOUT
) -> Iterator[HttpServer]:
    """Start ``argv --http PORT`` and yield its URL and pid once it accepts connections.

    The server's stderr goes to a temporary file (it can never block on a full pipe);
    its tail is quoted when start-up fails. Raises :class:`Unavailable` for exit status 3
    and :class:`StartFailed` for any other early exit or a start-up past
    ``start_timeout``. On exit the server gets SIGTERM, then SIGKILL, each bounded.
    """
    port = free_port()
    with tempfile.NamedTemporaryFile(prefix="bench-server-", suffix=".log") as log:
        proc = subprocess.Popen(
            [*argv, "--http", str(port)],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=log,
        )
        try:
            deadline = time.monotonic() + start_timeout
            while True:
                status = proc.poll()
                if status is not None:
                    tail = _tail(log.name)
                    if status == EXIT_UNAVAILABLE:
                        raise Unavailable(tail.splitlines()[-1] if tail else "unavailable")
                    raise StartFailed(f"server exited with status {status}: {tail[-500:]}")
                try:
                    with socket.create_connection(("127.0.0.1", port), timeout=1.0):
                        break
                except OSError:
                    pass
                if time.monotonic() > deadline:
                    raise StartFailed(f"server did not listen on port {port} in {start_timeout}s")
                time.sleep(0.05)
            yield HttpServer(url=f"http://127.0.0.1:{port}{path}", pid=proc.pid)
        finally:
            _stop(proc)


# ----------------------------------------------------------------------------- idle cores


def _cpu_ticks() -> tuple[int, int]:
    """(busy, total) jiffies summed over all CPUs, from /proc/stat."""
    with open("/proc/stat", encoding="ascii") as f:
        fields = [int(v) for v in f.readline().split()[1:]]
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)  # idle + iowait
    total = sum(fields[:8])  # guest time is already counted in user
    return total - idle, total


def busy_cores(window: float = 0.2) -> float | None:
    """How many CPU cores were busy (on average) during ``window`` seconds, or None off
    Linux. Taken before each run: anything else running skews the numbers."""
    try:
        busy0, total0 = _cpu_ticks()
        time.sleep(window)
        busy1, total1 = _cpu_ticks()
    except (OSError, ValueError, IndexError):
        return None
    cores = os.cpu_count() or 1
    if total1 == total0:
        return 0.0
    return cores * (busy1 - busy0) / (total1 - total0)


def load_average() -> float | None:
    """The 1-minute load average, or None where unavailable."""
    try:
        return os.getloadavg()[0]
    except OSError:
        return None
