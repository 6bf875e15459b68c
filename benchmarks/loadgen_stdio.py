"""A raw stdio load generator for MCP servers: no SDK, no async framework.

It spawns the server command with pipes, speaks newline-delimited JSON-RPC itself, and
measures ``tools/call echo`` in one of three modes:

- ``seq``: N calls, one at a time (latency of an idle server, CPU per call).
- ``pipe``: N calls with K in flight. Responses are matched by id; refills for every
  response already buffered are written together, so requests go out in batches.
- ``cold``: spawn -> ``initialize`` answer, and spawn -> first ``tools/call`` answer.

Requests are encoded before the measured phase, so the generator's own CPU per call
(reported as ``gen_cpu_us_per_call``) is mostly one write, one poll, one read and one
``json.loads`` per response. Server CPU comes from ``/proc/<pid>/stat`` (see
``benchmarks.procstats``), read just before and just after the measured phase, so
start-up, warm-up and shutdown are excluded.

Every response is checked: an error response, an unknown or repeated id, or a wrong
echo fails the run with ``BadResponse``. Every wait is bounded by ``timeout`` seconds
(``ServerTimeout``); a server that exits or closes stdout raises ``ServerExited``.

CLI::

    python -m benchmarks.loadgen_stdio --mode seq -n 2000 -- <server argv>
    python -m benchmarks.loadgen_stdio --mode pipe -n 5000 --in-flight 100 -- <server argv>
    python -m benchmarks.loadgen_stdio --mode cold --repeats 10 -- <server argv>
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import select
import statistics
import subprocess
import sys
import time
from collections import deque
from collections.abc import Callable, Sequence
from typing import Any

from benchmarks.procstats import (
    CpuTimes,
    ProcStatsUnavailable,
    peak_rss_kib,
    read_cpu,
    read_tree_cpu,
)

__all__ = [
    "BadResponse",
    "LoadgenError",
    "ServerExited",
    "ServerTimeout",
    "StdioServer",
    "aggregate",
    "cold_start",
    "main",
    "percentile",
    "run_pipelined",
    "run_sequential",
    "summarize_latencies",
]

DEFAULT_TIMEOUT = 30.0
"""Seconds any single wait for the server may take before the run fails."""

DEFAULT_WARMUP = 50
"""Unmeasured echo calls before the measured phase (first-call costs: imports, caches)."""

DEFAULT_PROTOCOL_VERSION = "2025-11-25"

STATELESS_VERSIONS = ("2026-07-28",)
"""Revisions with no handshake: every request carries the ``_meta`` envelope instead."""

MAX_LINE_BYTES = 16 * 1024 * 1024
"""A server line longer than this is treated as a protocol failure, not buffered forever."""

_READ_CHUNK = 1 << 20
_SHUTDOWN_GRACE = 5.0


class LoadgenError(RuntimeError):
    """The run failed; the message says why."""


class ServerTimeout(LoadgenError):
    """The server did not answer within the timeout."""


class ServerExited(LoadgenError):
    """The server exited or closed its stdout mid-run."""


class BadResponse(LoadgenError):
    """The server answered with an error, an unexpected id or the wrong content."""


# ----------------------------------------------------------------------------- statistics


def percentile(sorted_values: Sequence[float], q: float) -> float:
    """The ``q``-th percentile (0..100) of already-sorted values, linearly interpolated.

    Matches numpy's default ("linear") method. Raises ``ValueError`` on empty input or
    ``q`` outside 0..100.
    """
    if not sorted_values:
        raise ValueError("percentile of an empty sequence")
    if not 0.0 <= q <= 100.0:
        raise ValueError(f"percentile must be within 0..100, got {q}")
    rank = (len(sorted_values) - 1) * q / 100.0
    lo = math.floor(rank)
    hi = min(lo + 1, len(sorted_values) - 1)
    frac = rank - lo
    return sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * frac


def summarize_latencies(latencies_ns: Sequence[int]) -> dict[str, float]:
    """Count, min, mean, p50, p90, p99 and max of latencies given in ns, reported in µs."""
    if not latencies_ns:
        raise ValueError("no latencies to summarize")
    us = sorted(v / 1000.0 for v in latencies_ns)
    return {
        "count": len(us),
        "min": us[0],
        "mean": statistics.fmean(us),
        "p50": percentile(us, 50),
        "p90": percentile(us, 90),
        "p99": percentile(us, 99),
        "max": us[-1],
    }


def aggregate(
    latencies_ns: Sequence[int],
    wall_ns: int,
    server_cpu: CpuTimes | None,
    gen_cpu_s: float,
) -> dict[str, Any]:
    """Turn raw measurements of one measured phase into the reported numbers.

    ``server_cpu`` is the delta over the phase, or None when ``/proc`` was unavailable.
    """
    n = len(latencies_ns)
    if n == 0 or wall_ns <= 0:
        raise ValueError("aggregate needs at least one call and a positive wall time")
    out: dict[str, Any] = {
        "calls": n,
        "wall_s": wall_ns / 1e9,
        "calls_per_s": n / (wall_ns / 1e9),
        "latency_us": summarize_latencies(latencies_ns),
        "gen_cpu_s": gen_cpu_s,
        "gen_cpu_us_per_call": gen_cpu_s * 1e6 / n,
        "server_cpu_s": None,
        "server_cpu_user_s": None,
        "server_cpu_sys_s": None,
        "server_cpu_us_per_call": None,
    }
    if server_cpu is not None:
        out |= {
            "server_cpu_s": server_cpu.total,
            "server_cpu_user_s": server_cpu.user,
            "server_cpu_sys_s": server_cpu.system,
            "server_cpu_us_per_call": server_cpu.total * 1e6 / n,
        }
    return out


# ----------------------------------------------------------------------------- the pipe


class StdioServer:
    """A spawned server and a newline-JSON channel to it with bounded waits.

    Writes are queued with :meth:`queue` and flushed by :meth:`flush` or while waiting in
    :meth:`next_message`; both pipe ends are non-blocking and served by one ``poll``, so
    a server that is itself blocked writing cannot deadlock us.
    """

    def __init__(
        self,
        argv: Sequence[str],
        *,
        timeout: float = DEFAULT_TIMEOUT,
        stderr: int | None = None,
        tree_cpu: bool = False,
    ) -> None:
        if not argv:
            raise ValueError("empty server argv")
        self.argv = list(argv)
        self.timeout = timeout
        self._tree_cpu = tree_cpu
        self.proc = subprocess.Popen(
            self.argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr, bufsize=0
        )
        assert self.proc.stdin is not None
        assert self.proc.stdout is not None
        self._wfd = self.proc.stdin.fileno()
        self._rfd = self.proc.stdout.fileno()
        os.set_blocking(self._wfd, False)
        os.set_blocking(self._rfd, False)
        self._poll = select.poll()
        self._poll.register(self._rfd, select.POLLIN)
        self._writing = False
        self._rbuf = b""
        self._wbuf = bytearray()
        self._lines: deque[bytes] = deque()
        self.notifications = 0

    @property
    def pid(self) -> int:
        return self.proc.pid

    # -- writing

    def queue(self, data: bytes) -> None:
        """Append bytes to send; they go out on the next flush or wait."""
        self._wbuf += data

    def send(self, message: dict[str, Any]) -> None:
        self.queue(json.dumps(message, separators=(",", ":")).encode() + b"\n")

    def flush(self) -> None:
        """Write all queued bytes, waiting (bounded) while the pipe is full."""
        deadline = time.monotonic() + self.timeout
        while self._wbuf:
            self._pump(deadline, flushing=True)

    def _try_write(self) -> None:
        try:
            written = os.write(self._wfd, self._wbuf)
        except BlockingIOError:
            return
        except BrokenPipeError as exc:
            raise ServerExited(f"server closed stdin ({self._exit_note()})") from exc
        del self._wbuf[:written]

    # -- reading

    def has_buffered(self) -> bool:
        """Whether a complete message is already buffered (no wait needed)."""
        return bool(self._lines)

    def next_message(self) -> dict[str, Any]:
        """The next JSON-RPC response or request from the server; notifications are counted
        and skipped. Flushes queued writes while waiting.

        Raises:
            ServerTimeout: nothing arrived within ``timeout`` seconds.
            ServerExited: the server closed stdout.
            BadResponse: a line is not a JSON object.
        """
        deadline = time.monotonic() + self.timeout
        while True:
            while not self._lines:
                self._pump(deadline)
            line = self._lines.popleft()
            try:
                msg = json.loads(line)
            except ValueError as exc:
                raise BadResponse(f"server wrote a non-JSON line: {line[:200]!r}") from exc
            if not isinstance(msg, dict):
                raise BadResponse(f"server wrote a non-object message: {line[:200]!r}")
            if "id" not in msg and "method" in msg:
                self.notifications += 1
                continue
            if "method" in msg:
                raise BadResponse(f"server sent a request the load generator cannot answer: {msg}")
            return msg

    def _pump(self, deadline: float, *, flushing: bool = False) -> None:
        """One round of I/O: write what we can, then wait (bounded) until the pipe
        can take more or data arrives. When ``flushing``, return as soon as nothing
        is left to write (reading meanwhile keeps a server blocked on its stdout
        from deadlocking us)."""
        if self._wbuf:
            self._try_write()
        if flushing and not self._wbuf:
            return
        want_write = bool(self._wbuf)
        if want_write != self._writing:
            if want_write:
                self._poll.register(self._wfd, select.POLLOUT)
            else:
                self._poll.unregister(self._wfd)
            self._writing = want_write
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise ServerTimeout(
                f"no answer from the server within {self.timeout}s ({self._exit_note()})"
            )
        events = self._poll.poll(remaining * 1000.0)
        if not events:
            raise ServerTimeout(
                f"no answer from the server within {self.timeout}s ({self._exit_note()})"
            )
        for fd, mask in events:
            if fd == self._wfd:
                if mask & (select.POLLERR | select.POLLHUP):
                    raise ServerExited(f"server closed stdin ({self._exit_note()})")
                self._try_write()
            elif mask & (select.POLLIN | select.POLLHUP | select.POLLERR):
                self._read()

    def _read(self) -> None:
        try:
            data = os.read(self._rfd, _READ_CHUNK)
        except BlockingIOError:
            return
        if not data:
            raise ServerExited(f"server closed stdout ({self._exit_note()})")
        *complete, self._rbuf = (self._rbuf + data).split(b"\n")
        self._lines.extend(line for line in complete if line.strip())
        if len(self._rbuf) > MAX_LINE_BYTES:
            raise BadResponse(f"server line exceeds {MAX_LINE_BYTES} bytes")

    def _exit_note(self) -> str:
        code = self.proc.poll()
        return "server still running" if code is None else f"server exit status {code}"

    # -- protocol helpers

    def request(self, request_id: int, method: str, params: dict[str, Any] | None = None) -> Any:
        """Send one request and return its result; raises ``BadResponse`` on any mismatch."""
        msg: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if params is not None:
            msg["params"] = params
        self.send(msg)
        reply = self.next_message()
        return check_response(reply, request_id)

    def initialize(self, protocol_version: str = DEFAULT_PROTOCOL_VERSION) -> dict[str, Any]:
        """The MCP handshake: ``initialize`` then ``notifications/initialized``.

        A stateless revision (:data:`STATELESS_VERSIONS`) has none: nothing is sent, and
        the answer is ``{"protocolVersion": protocol_version}``."""
        if protocol_version in STATELESS_VERSIONS:
            return {"protocolVersion": protocol_version}
        result = self.request(
            0,
            "initialize",
            {
                "protocolVersion": protocol_version,
                "capabilities": {},
                "clientInfo": {"name": "trimcp-loadgen", "version": "0.1.0"},
            },
        )
        if not isinstance(result, dict) or "protocolVersion" not in result:
            raise BadResponse(f"initialize result lacks protocolVersion: {result}")
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        self.flush()
        return result

    # -- process stats

    def cpu(self) -> CpuTimes | None:
        try:
            return read_tree_cpu(self.pid) if self._tree_cpu else read_cpu(self.pid)
        except ProcStatsUnavailable:
            return None

    def peak_rss_kib(self) -> int | None:
        try:
            return peak_rss_kib(self.pid)
        except ProcStatsUnavailable:
            return None

    # -- lifetime

    def close(self) -> None:
        """Close stdin, wait (bounded) for exit, then terminate and finally kill."""
        for stream in (self.proc.stdin, self.proc.stdout):
            if stream is not None:
                with contextlib.suppress(OSError):
                    stream.close()
        for stop in (None, self.proc.terminate, self.proc.kill):
            if stop is not None:
                stop()
            try:
                self.proc.wait(timeout=_SHUTDOWN_GRACE)
                return
            except subprocess.TimeoutExpired:
                continue

    def __enter__(self) -> StdioServer:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def check_response(msg: dict[str, Any], expected_id: int) -> Any:
    """Return ``msg["result"]``; raise ``BadResponse`` for an error or a different id."""
    if msg.get("id") != expected_id:
        raise BadResponse(f"expected a response to id {expected_id}, got {msg}")
    if "error" in msg:
        raise BadResponse(f"error response to id {expected_id}: {msg['error']}")
    if "result" not in msg:
        raise BadResponse(f"response to id {expected_id} has no result: {msg}")
    return msg["result"]


def _check_echo(result: Any, expected_text: str, request_id: int) -> None:
    try:
        ok = not result.get("isError") and result["content"][0]["text"] == expected_text
    except (AttributeError, KeyError, IndexError, TypeError):
        ok = False
    if not ok:
        raise BadResponse(
            f"wrong echo result for id {request_id} (wanted {expected_text!r}): {result}"
        )


def _echo_request(request_id: int, text: str, protocol_version: str) -> bytes:
    params: dict[str, Any] = {"name": "echo", "arguments": {"text": text}}
    if protocol_version in STATELESS_VERSIONS:
        params["_meta"] = stateless_meta(protocol_version)
    message = {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}
    return json.dumps(message, separators=(",", ":")).encode() + b"\n"


def stateless_meta(protocol_version: str) -> dict[str, Any]:
    """The ``_meta`` envelope a stateless-revision request carries in place of a handshake
    (the same one ``benchmarks.loadgen_http`` sends)."""
    return {
        "io.modelcontextprotocol/protocolVersion": protocol_version,
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "loadgen", "version": "1"},
    }


def _echo_text(i: int) -> str:
    return f"echo-{i}"


# ----------------------------------------------------------------------------- runs


def _warmup(server: StdioServer, count: int, first_id: int, protocol_version: str) -> int:
    """Unmeasured sequential calls; returns the next free request id."""
    for request_id in range(first_id, first_id + count):
        server.queue(_echo_request(request_id, _echo_text(request_id), protocol_version))
        result = check_response(server.next_message(), request_id)
        _check_echo(result, _echo_text(request_id), request_id)
    return first_id + count


def _header(
    mode: str, argv: Sequence[str], server: StdioServer, init: dict[str, Any]
) -> dict[str, Any]:
    return {
        "mode": mode,
        "argv": list(argv),
        "server_pid": server.pid,
        "protocol_version": init.get("protocolVersion"),
        "server_info": init.get("serverInfo"),
    }


def _measure(
    server: StdioServer, phase: Callable[[], list[int]]
) -> tuple[list[int], int, CpuTimes | None, float]:
    cpu0 = server.cpu()
    gen0 = time.process_time()
    t0 = time.perf_counter_ns()
    latencies = phase()
    t1 = time.perf_counter_ns()
    gen1 = time.process_time()
    cpu1 = server.cpu()
    server_cpu = cpu1 - cpu0 if cpu0 is not None and cpu1 is not None else None
    return latencies, t1 - t0, server_cpu, gen1 - gen0


def run_sequential(
    argv: Sequence[str],
    n: int,
    *,
    warmup: int = DEFAULT_WARMUP,
    timeout: float = DEFAULT_TIMEOUT,
    protocol_version: str = DEFAULT_PROTOCOL_VERSION,
    tree_cpu: bool = False,
    stderr: int | None = None,
) -> dict[str, Any]:
    """Spawn ``argv``, initialize, warm up, then time ``n`` sequential ``echo`` calls.

    Raises ``LoadgenError`` (a subclass says which) on any failure; the server is always
    stopped before returning or raising.
    """
    if n <= 0:
        raise ValueError("n must be positive")
    with StdioServer(argv, timeout=timeout, tree_cpu=tree_cpu, stderr=stderr) as server:
        init = server.initialize(protocol_version)
        first = _warmup(server, warmup, 1, protocol_version)
        ids = range(first, first + n)
        payloads = [_echo_request(i, _echo_text(i), protocol_version) for i in ids]

        def phase() -> list[int]:
            latencies = [0] * n
            clock = time.perf_counter_ns
            for k, request_id in enumerate(ids):
                start = clock()
                server.queue(payloads[k])
                msg = server.next_message()
                latencies[k] = clock() - start
                _check_echo(check_response(msg, request_id), _echo_text(request_id), request_id)
            return latencies

        measured = _measure(server, phase)
        out = _header("seq", argv, server, init) | {"n": n, "in_flight": 1, "warmup": warmup}
        out |= aggregate(*measured)
        out["server_peak_rss_kib"] = server.peak_rss_kib()
        out["server_notifications"] = server.notifications
        return out


def run_pipelined(
    argv: Sequence[str],
    n: int,
    in_flight: int,
    *,
    warmup: int = DEFAULT_WARMUP,
    timeout: float = DEFAULT_TIMEOUT,
    protocol_version: str = DEFAULT_PROTOCOL_VERSION,
    tree_cpu: bool = False,
    stderr: int | None = None,
) -> dict[str, Any]:
    """Like :func:`run_sequential` but keeps up to ``in_flight`` calls outstanding.

    Latency of a call runs from queueing its request to reading its response, so it
    includes time spent waiting behind other calls in the server.
    """
    if n <= 0 or in_flight <= 0:
        raise ValueError("n and in_flight must be positive")
    with StdioServer(argv, timeout=timeout, tree_cpu=tree_cpu, stderr=stderr) as server:
        init = server.initialize(protocol_version)
        first = _warmup(server, warmup, 1, protocol_version)
        payloads = [
            _echo_request(first + k, _echo_text(first + k), protocol_version) for k in range(n)
        ]

        def phase() -> list[int]:
            clock = time.perf_counter_ns
            sent_at: dict[int, int] = {}
            latencies: list[int] = []
            next_k = 0

            def enqueue() -> None:
                nonlocal next_k
                sent_at[first + next_k] = clock()
                server.queue(payloads[next_k])
                next_k += 1

            while next_k < min(in_flight, n):
                enqueue()
            while len(latencies) < n:
                # Buffered responses are handled before the next wait, so their
                # refills are written together in one batch.
                msg = server.next_message()
                now = clock()
                request_id = msg.get("id")
                if not isinstance(request_id, int) or request_id not in sent_at:
                    raise BadResponse(f"response with unknown or repeated id: {msg}")
                latencies.append(now - sent_at.pop(request_id))
                _check_echo(check_response(msg, request_id), _echo_text(request_id), request_id)
                if next_k < n:
                    enqueue()
            return latencies

        measured = _measure(server, phase)
        out = _header("pipe", argv, server, init) | {
            "n": n,
            "in_flight": in_flight,
            "warmup": warmup,
        }
        out |= aggregate(*measured)
        out["server_peak_rss_kib"] = server.peak_rss_kib()
        out["server_notifications"] = server.notifications
        return out


def cold_start(
    argv: Sequence[str],
    repeats: int,
    *,
    timeout: float = DEFAULT_TIMEOUT,
    protocol_version: str = DEFAULT_PROTOCOL_VERSION,
    stderr: int | None = None,
) -> dict[str, Any]:
    """Spawn ``argv`` ``repeats`` times; time spawn -> ``initialize`` answer and
    spawn -> first ``echo`` answer (ms). Each server is stopped before the next spawn."""
    if repeats <= 0:
        raise ValueError("repeats must be positive")
    init_ms: list[float] = []
    first_call_ms: list[float] = []
    init: dict[str, Any] = {}
    for _ in range(repeats):
        t0 = time.perf_counter_ns()
        with StdioServer(argv, timeout=timeout, stderr=stderr) as server:
            init = server.initialize(protocol_version)
            t1 = time.perf_counter_ns()
            _warmup(server, 1, 1, protocol_version)
            t2 = time.perf_counter_ns()
        init_ms.append((t1 - t0) / 1e6)
        first_call_ms.append((t2 - t0) / 1e6)

    def stats(values: list[float]) -> dict[str, float]:
        ordered = sorted(values)
        return {
            "min": ordered[0],
            "median": percentile(ordered, 50),
            "mean": statistics.fmean(ordered),
            "max": ordered[-1],
        }

    return {
        "mode": "cold",
        "argv": list(argv),
        "repeats": repeats,
        "protocol_version": init.get("protocolVersion"),
        "server_info": init.get("serverInfo"),
        "initialize_ms": stats(init_ms),
        "first_call_ms": stats(first_call_ms),
        "initialize_ms_samples": init_ms,
    }


# ----------------------------------------------------------------------------- CLI


def _parse(argv: list[str]) -> tuple[argparse.Namespace, list[str]]:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.loadgen_stdio",
        description="Raw stdio load generator for MCP servers (tools/call echo).",
        usage="%(prog)s [options] -- <server argv...>",
    )
    parser.add_argument("--mode", choices=("seq", "pipe", "cold"), default="seq")
    parser.add_argument("-n", type=int, default=1000, help="measured calls (seq/pipe)")
    parser.add_argument("--in-flight", type=int, default=100, help="outstanding calls (pipe)")
    parser.add_argument("--repeats", type=int, default=10, help="spawns (cold)")
    parser.add_argument("--warmup", type=int, default=DEFAULT_WARMUP, help="unmeasured calls")
    parser.add_argument(
        "--timeout", type=float, default=DEFAULT_TIMEOUT, help="bound on any wait (s)"
    )
    parser.add_argument("--protocol-version", default=DEFAULT_PROTOCOL_VERSION)
    parser.add_argument(
        "--tree-cpu", action="store_true", help="count CPU of the server's descendants too"
    )
    if "--" not in argv:
        parser.error("missing '-- <server argv...>'")
    split = argv.index("--")
    opts = parser.parse_args(argv[:split])
    server_argv = argv[split + 1 :]
    if not server_argv:
        parser.error("missing server argv after --")
    return opts, server_argv


def main(argv: list[str] | None = None) -> int:
    opts, server_argv = _parse(sys.argv[1:] if argv is None else argv)
    try:
        result: dict[str, Any]
        if opts.mode == "seq":
            result = run_sequential(
                server_argv,
                opts.n,
                warmup=opts.warmup,
                timeout=opts.timeout,
                protocol_version=opts.protocol_version,
                tree_cpu=opts.tree_cpu,
            )
        elif opts.mode == "pipe":
            result = run_pipelined(
                server_argv,
                opts.n,
                opts.in_flight,
                warmup=opts.warmup,
                timeout=opts.timeout,
                protocol_version=opts.protocol_version,
                tree_cpu=opts.tree_cpu,
            )
        else:
            result = cold_start(
                server_argv,
                opts.repeats,
                timeout=opts.timeout,
                protocol_version=opts.protocol_version,
            )
    except (LoadgenError, OSError) as exc:
        print(f"loadgen: error: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    json.dump(result, sys.stdout, indent=2)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
