"""Instructions (callgrind) or Python calls (cProfile) per Streamable HTTP ``tools/call``.

Machine-independent, so that two checkouts can be compared on a loaded machine: the server
(``benchmarks/http_server_micro.py --serve PORT``, JSON answers unless ``--sse``) runs under
``valgrind --tool=callgrind`` (``PYTHONHASHSEED=0``) or ``python -m cProfile``, and
:func:`benchmarks.loadgen_http.run_calls` drives it as the ``http-json`` workload does
(``--sessions`` 2025 sessions on keep-alive connections, one ``tools/call`` in flight each).
What one call costs is the difference between a run of ``N2`` calls and one of ``N1``, over
``N2 - N1`` (start-up, the sessions' handshakes, warm-up and shutdown cancel out).

Under valgrind the server runs some 50 times slower, which would make every session rest
between its calls (20 ms) and every call a slow request (a disconnect watcher after 20 ms):
work the real workload never does. So the server's Trio clock runs ``--clock-scale`` times
real time (0.01 under valgrind, 1 under cProfile): its timeouts last as long, measured in
the server's own work, as they do at full speed.

Usage::

    python -m benchmarks.count_http [--tree DIR] [--calls 1000 3000] [--sessions 16]
        [--sse] [--profile] [--top 40] [--clock-scale X]

``--tree``: the checkout whose trimcp and benchmark server run (``PYTHONPATH`` and working
directory; default this one). ``--profile`` counts Python and C calls per call (cProfile,
which counts every coroutine resume as a call) and lists the most called.
"""

from __future__ import annotations

import argparse
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.count_stdio import instructions, profile_report
from benchmarks.loadgen_http import run_calls

ROOT = Path(__file__).resolve().parent.parent
_START_TIMEOUT = 180.0  # seconds for the server to listen (valgrind starts slowly)
_CALL_TIMEOUT = 120.0  # seconds for one answer under valgrind

# The server: the tree's benchmark server (``http_server_micro --serve``) on a Trio clock
# running ``scale`` times real time. argv: port, "json" or "sse", scale.
_SERVER = """
import sys, time, trio
from benchmarks.http_server_micro import _serve

class ScaledClock(trio.abc.Clock):
    def __init__(self, scale):
        self.scale = scale
    def start_clock(self):
        pass
    def current_time(self):
        return time.perf_counter() * self.scale
    def deadline_to_sleep_time(self, deadline):
        return (deadline - self.current_time()) / self.scale

port, kind, scale = int(sys.argv[1]), sys.argv[2], float(sys.argv[3])
trio.run(_serve, port, kind == "json", clock=None if scale == 1 else ScaledClock(scale))
"""


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _wait_listening(proc: subprocess.Popen[bytes], port: int) -> None:
    deadline = time.monotonic() + _START_TIMEOUT
    while True:
        if proc.poll() is not None:
            raise SystemExit(f"count_http: the server exited with {proc.returncode}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            if time.monotonic() > deadline:
                raise SystemExit(f"count_http: nothing listens on {port}") from None
            time.sleep(0.2)


def _run(opts: argparse.Namespace, calls: int, out: str) -> None:
    port = _free_port()
    env = dict(os.environ, PYTHONPATH=str(opts.tree), PYTHONHASHSEED="0")
    scale = opts.clock_scale
    if scale is None:
        scale = 1.0 if opts.profile else 0.01
    script = Path(out).with_suffix(".server.py")
    script.write_text(_SERVER)
    server = [str(script), str(port), "sse" if opts.sse else "json", str(scale)]
    if opts.profile:
        cmd = [sys.executable, "-m", "cProfile", "-o", out, *server]
    else:
        cmd = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", sys.executable]
        cmd += server
    proc = subprocess.Popen(
        cmd, cwd=opts.tree, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        _wait_listening(proc, port)
        result = run_calls(
            f"http://127.0.0.1:{port}/mcp",
            calls,
            sessions=opts.sessions,
            timeout=_CALL_TIMEOUT,
        )
        kind = "sse" if opts.sse else "json"
        if result["answers"][kind] != calls:
            raise SystemExit(f"count_http: expected {calls} {kind} answers: {result['answers']}")
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=_START_TIMEOUT)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.count_http")
    parser.add_argument("--tree", type=Path, default=ROOT)
    parser.add_argument("--calls", type=int, nargs=2, default=(1000, 3000))
    parser.add_argument("--sessions", type=int, default=16)
    parser.add_argument("--sse", action="store_true", help="SSE answers instead of JSON")
    parser.add_argument("--profile", action="store_true")
    parser.add_argument(
        "--clock-scale", type=float, help="the server's Trio clock speed (0.01; 1 with --profile)"
    )
    parser.add_argument("--top", type=int, default=40)
    opts = parser.parse_args(sys.argv[1:] if argv is None else argv)
    small, large = opts.calls
    with tempfile.TemporaryDirectory() as tmp:
        outs = [str(Path(tmp) / f"run-{calls}") for calls in (small, large)]
        for calls, out in zip((small, large), outs, strict=True):
            _run(opts, calls, out)
        if opts.profile:
            profile_report(outs[0], outs[1], large - small, opts.top, unit="call")
        else:
            per_call = (instructions(outs[1]) - instructions(outs[0])) / (large - small)
            print(f"{opts.tree}: {per_call:,.0f} instructions per call")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
