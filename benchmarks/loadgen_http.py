"""A raw HTTP/1.1 load generator for MCP Streamable HTTP servers: no SDK, no async framework.

It speaks just enough HTTP/1.1 itself (keep-alive connections, ``Content-Length`` and
chunked bodies) over non-blocking sockets served by one ``poll``, so its own cost per call
stays small and visible (``gen_cpu_us_per_call``). Two measurements:

- :func:`run_calls`: ``sessions`` MCP sessions, each on its own connection with one
  ``tools/call echo`` in flight at a time, ``n`` calls in total. Answers may be JSON or
  SSE (whatever the server chooses); both are parsed and every echo is checked. With
  ``--protocol-version 2026-07-28`` there is no session: each connection sends stateless
  requests (the ``_meta`` envelope, ``Mcp-Method``/``Mcp-Name`` headers), no initialize.
- :func:`idle_sessions`: open ``count`` sessions (initialize + initialized) one after the
  other over one keep-alive connection, and report how much the server's resident memory
  grew per session (``/proc/<pid>/status`` ``VmRSS``).

Every wait is bounded by ``timeout`` seconds (``ServerTimeout``); a non-2xx status, a
malformed answer or a wrong echo raises ``BadResponse``; a closed connection mid-answer
raises ``ServerExited``. The errors are those of :mod:`benchmarks.loadgen_stdio`.

CLI::

    python -m benchmarks.loadgen_http --sessions 16 -n 5000 [--pid PID] http://127.0.0.1:8000/mcp
    python -m benchmarks.loadgen_http --idle 1000 --pid PID http://127.0.0.1:8000/mcp
"""

from __future__ import annotations

import argparse
import contextlib
import json
import select
import socket
import sys
import time
from collections.abc import Sequence
from typing import Any
from urllib.parse import urlsplit

from benchmarks.loadgen_stdio import (
    DEFAULT_PROTOCOL_VERSION,
    DEFAULT_TIMEOUT,
    STATELESS_VERSIONS,
    BadResponse,
    LoadgenError,
    ServerExited,
    ServerTimeout,
    aggregate,
    stateless_meta,
)
from benchmarks.procstats import CpuTimes, ProcStatsUnavailable, read_cpu

__all__ = [
    "HttpConnection",
    "HttpResponse",
    "idle_sessions",
    "main",
    "parse_answer",
    "rss_kib",
    "run_calls",
]


MAX_RESPONSE_BYTES = 16 * 1024 * 1024
"""A response larger than this fails the run instead of being buffered forever."""

_READ_CHUNK = 256 * 1024


class HttpResponse:
    """A complete HTTP response: status, lower-cased headers, body."""

    __slots__ = ("body", "headers", "status")

    def __init__(self, status: int, headers: dict[str, str], body: bytes) -> None:
        self.status = status
        self.headers = headers
        self.body = body


class HttpConnection:
    """One keep-alive HTTP/1.1 client connection with an incremental response parser.

    :meth:`start` queues a request; the owner's poll loop calls :meth:`on_writable` and
    :meth:`on_readable` until the latter returns the complete response. If the server
    closes the connection (or says ``Connection: close``), the next :meth:`start`
    reconnects.
    """

    def __init__(self, host: str, port: int, timeout: float) -> None:
        self.host = host
        self.port = port
        self.timeout = timeout
        self.sock: socket.socket | None = None
        self._wbuf = b""
        self._rbuf = bytearray()
        self._reset_parser()
        self.reconnects = -1

    def _reset_parser(self) -> None:
        self._status = 0
        self._headers: dict[str, str] = {}
        self._head_done = False
        self._length: int | None = None  # Content-Length, when given
        self._chunked = False
        self._body = bytearray()
        self._pos = 0  # chunked: parse position in _rbuf

    def _connect(self) -> None:
        self.close()
        self.sock = socket.create_connection((self.host, self.port), timeout=self.timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.sock.setblocking(False)
        self._rbuf.clear()
        self.reconnects += 1

    def fileno(self) -> int:
        assert self.sock is not None
        return self.sock.fileno()

    def start(self, request: bytes) -> None:
        """Queue one request (reconnecting first when the connection is gone)."""
        if self.sock is None:
            self._connect()
        self._wbuf = request
        self._reset_parser()

    @property
    def wants_write(self) -> bool:
        return bool(self._wbuf)

    def on_writable(self) -> None:
        assert self.sock is not None
        try:
            sent = self.sock.send(self._wbuf)
        except BlockingIOError:
            return
        except OSError as exc:
            raise ServerExited(f"connection to the server failed while writing: {exc}") from exc
        self._wbuf = self._wbuf[sent:]

    def on_readable(self) -> HttpResponse | None:
        """Read what is available; return the response once complete."""
        assert self.sock is not None
        try:
            data = self.sock.recv(_READ_CHUNK)
        except BlockingIOError:
            # Nothing new; a response that arrived right behind the previous one may be
            # buffered already.
            return self._parse() if self._rbuf else None
        except OSError as exc:
            raise ServerExited(f"connection to the server failed while reading: {exc}") from exc
        if not data:
            if self._head_done and self._length is None and not self._chunked:
                return self._finish(bytes(self._rbuf), close=True)  # body ran to EOF
            self.close()
            raise ServerExited("the server closed the connection mid-response")
        self._rbuf += data
        if len(self._rbuf) > MAX_RESPONSE_BYTES:
            raise BadResponse(f"response larger than {MAX_RESPONSE_BYTES} bytes")
        return self._parse()

    def _parse(self) -> HttpResponse | None:
        buf = self._rbuf
        if not self._head_done:
            end = buf.find(b"\r\n\r\n")
            if end < 0:
                return None
            lines = bytes(buf[:end]).decode("latin-1").split("\r\n")
            del buf[: end + 4]
            parts = lines[0].split(" ", 2)
            if len(parts) < 2 or not parts[0].startswith("HTTP/1."):
                raise BadResponse(f"not an HTTP/1.x status line: {lines[0]!r}")
            self._status = int(parts[1])
            for line in lines[1:]:
                name, _, value = line.partition(":")
                self._headers[name.strip().lower()] = value.strip()
            self._head_done = True
            if self._status in (204, 304) or 100 <= self._status < 200:
                self._length = 0
            elif "chunked" in self._headers.get("transfer-encoding", "").lower():
                self._chunked = True
            elif "content-length" in self._headers:
                self._length = int(self._headers["content-length"])
        if self._chunked:
            return self._parse_chunks()
        if self._length is not None and len(buf) >= self._length:
            body = bytes(buf[: self._length])
            del buf[: self._length]
            return self._finish(body)
        return None

    def _parse_chunks(self) -> HttpResponse | None:
        buf = self._rbuf
        while True:
            eol = buf.find(b"\r\n", self._pos)
            if eol < 0:
                return None
            size = int(bytes(buf[self._pos : eol]).split(b";", 1)[0], 16)
            if size == 0:
                # Last chunk, then optional trailers, then an empty line.
                end = buf.find(b"\r\n\r\n", eol) if buf[eol + 2 : eol + 4] != b"\r\n" else eol
                if end < 0:
                    return None
                del buf[: end + 4]
                return self._finish(bytes(self._body))
            if len(buf) < eol + 2 + size + 2:
                return None
            self._body += buf[eol + 2 : eol + 2 + size]
            self._pos = eol + 2 + size + 2
            if self._pos > 65536:  # keep the buffer short without rescanning it
                del buf[: self._pos]
                self._pos = 0

    def _finish(self, body: bytes, *, close: bool = False) -> HttpResponse:
        response = HttpResponse(self._status, self._headers, body)
        if close or self._headers.get("connection", "").lower() == "close":
            self.close()
        self._reset_parser()
        return response

    def close(self) -> None:
        if self.sock is not None:
            self.sock.close()
            self.sock = None

    def roundtrip(self, request: bytes) -> HttpResponse:
        """Send one request and wait (bounded by ``timeout``) for its response."""
        self.start(request)
        deadline = time.monotonic() + self.timeout
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise ServerTimeout(f"no HTTP answer within {self.timeout}s")
            want = select.POLLIN | (select.POLLOUT if self.wants_write else 0)
            poller = select.poll()
            poller.register(self.fileno(), want)
            for _, mask in poller.poll(remaining * 1000.0):
                if mask & select.POLLOUT:
                    self.on_writable()
                if mask & (select.POLLIN | select.POLLHUP | select.POLLERR):
                    response = self.on_readable()
                    if response is not None:
                        return response


# ----------------------------------------------------------------------------- MCP over HTTP


class _Endpoint:
    def __init__(
        self, url: str, protocol_version: str, headers: tuple[tuple[str, str], ...] = ()
    ) -> None:
        self.headers = headers
        parts = urlsplit(url)
        if parts.scheme != "http" or not parts.hostname:
            raise ValueError(f"only http:// URLs are supported, got {url!r}")
        self.host = parts.hostname
        self.port = parts.port or 80
        self.path = parts.path or "/"
        if parts.query:
            self.path += "?" + parts.query
        self.protocol_version = protocol_version
        host = f"[{self.host}]" if ":" in self.host else self.host
        self.authority = f"{host}:{self.port}"

    @property
    def stateless(self) -> bool:
        return self.protocol_version in STATELESS_VERSIONS

    def request(
        self, body: dict[str, Any] | None, session_id: str | None, method: str = "POST"
    ) -> bytes:
        if body is not None and self.stateless and "method" in body:
            body = dict(body)
            params = dict(body.get("params") or {})
            params["_meta"] = stateless_meta(self.protocol_version)
            body["params"] = params
        payload = b"" if body is None else json.dumps(body, separators=(",", ":")).encode()
        head = [
            f"{method} {self.path} HTTP/1.1",
            f"Host: {self.authority}",
            "Accept: application/json, text/event-stream",
            f"MCP-Protocol-Version: {self.protocol_version}",
            f"Content-Length: {len(payload)}",
            *(f"{name}: {value}" for name, value in self.headers),
        ]
        if body is not None and self.stateless and "method" in body:
            head.append(f"Mcp-Method: {body['method']}")
            name = body["params"].get("name")
            if isinstance(name, str):
                head.append(f"Mcp-Name: {name}")
        if body is not None:
            head.append("Content-Type: application/json")
        if session_id is not None:
            head.append(f"Mcp-Session-Id: {session_id}")
        return ("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + payload


def parse_answer(response: HttpResponse, request_id: int) -> tuple[Any, str]:
    """The JSON-RPC response to ``request_id`` in a JSON or SSE answer, and which kind
    (``"json"`` or ``"sse"``) the answer was. Other messages in an SSE stream (progress,
    log notifications, priming events with no data) are skipped.

    Raises ``BadResponse`` for a non-2xx status, a JSON-RPC error or no matching answer.
    """
    if not 200 <= response.status < 300:
        raise BadResponse(f"HTTP {response.status}: {response.body[:300]!r}")
    kind = response.headers.get("content-type", "").split(";", 1)[0].strip().lower()
    messages: list[Any]
    if kind == "text/event-stream":
        messages = []
        for event in response.body.replace(b"\r\n", b"\n").split(b"\n\n"):
            data = [
                line[5:].removeprefix(b" ") for line in event.split(b"\n") if line[:5] == b"data:"
            ]
            if data and any(data):
                messages.append(json.loads(b"\n".join(data)))
        answer = "sse"
    elif kind == "application/json":
        decoded = json.loads(response.body)
        messages = decoded if isinstance(decoded, list) else [decoded]
        answer = "json"
    else:
        raise BadResponse(f"unexpected content type {kind!r} for a request")
    for msg in messages:
        if isinstance(msg, dict) and msg.get("id") == request_id and "method" not in msg:
            if "error" in msg:
                raise BadResponse(f"error answer to id {request_id}: {msg['error']}")
            return msg.get("result"), answer
    raise BadResponse(f"no answer to id {request_id} in: {response.body[:300]!r}")


def _initialize(conn: HttpConnection, endpoint: _Endpoint) -> str | None:
    """initialize + notifications/initialized; returns the session id (None: stateless)."""
    body = {
        "jsonrpc": "2.0",
        "id": 0,
        "method": "initialize",
        "params": {
            "protocolVersion": endpoint.protocol_version,
            "capabilities": {},
            "clientInfo": {"name": "trimcp-loadgen-http", "version": "0.1.0"},
        },
    }
    response = conn.roundtrip(endpoint.request(body, None))
    result, _ = parse_answer(response, 0)
    if not isinstance(result, dict) or "protocolVersion" not in result:
        raise BadResponse(f"initialize result lacks protocolVersion: {result}")
    session_id = response.headers.get("mcp-session-id")
    note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    ack = conn.roundtrip(endpoint.request(note, session_id))
    if not 200 <= ack.status < 300:
        raise BadResponse(f"notifications/initialized answered HTTP {ack.status}")
    return session_id


def _echo(request_id: int) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": "tools/call",
        "params": {"name": "echo", "arguments": {"text": f"echo-{request_id}"}},
    }


def _check_echo(result: Any, request_id: int) -> None:
    try:
        ok = not result.get("isError") and result["content"][0]["text"] == f"echo-{request_id}"
    except (AttributeError, KeyError, IndexError, TypeError):
        ok = False
    if not ok:
        raise BadResponse(f"wrong echo result for id {request_id}: {result}")


def _cpu(pid: int | None) -> CpuTimes | None:
    if pid is None:
        return None
    try:
        return read_cpu(pid)
    except ProcStatsUnavailable:
        return None


def rss_kib(pid: int) -> int:
    """Current resident set size (``VmRSS``) of ``pid`` in KiB.

    Raises ``ProcStatsUnavailable`` when the process has no ``/proc`` entry.
    """
    try:
        with open(f"/proc/{pid}/status", encoding="ascii", errors="replace") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except (FileNotFoundError, ProcessLookupError) as exc:
        raise ProcStatsUnavailable(f"no /proc entry for pid {pid}") from exc
    raise ProcStatsUnavailable(f"/proc/{pid}/status has no VmRSS")


def _delete(conn: HttpConnection, endpoint: _Endpoint, session_id: str | None) -> None:
    if session_id is None:
        return
    # Best effort: the session would be reaped anyway.
    with contextlib.suppress(LoadgenError):
        conn.roundtrip(endpoint.request(None, session_id, method="DELETE"))


def run_calls(
    url: str,
    n: int,
    *,
    sessions: int = 16,
    warmup: int = 20,
    pid: int | None = None,
    timeout: float = DEFAULT_TIMEOUT,
    protocol_version: str = DEFAULT_PROTOCOL_VERSION,
    headers: tuple[tuple[str, str], ...] = (),
) -> dict[str, Any]:
    """``n`` echo calls over ``sessions`` concurrent sessions (one call in flight each).

    ``headers``: extra headers on every request (e.g. ``Authorization``).

    ``warmup`` unmeasured calls per session come first. ``pid`` (the server process)
    enables server CPU figures. Latency runs from queueing a request to its complete
    answer. Sessions are deleted at the end (best effort).
    """
    if n <= 0 or sessions <= 0:
        raise ValueError("n and sessions must be positive")
    endpoint = _Endpoint(url, protocol_version, headers)
    conns = [HttpConnection(endpoint.host, endpoint.port, timeout) for _ in range(sessions)]
    ids: list[str | None] = []
    try:
        if endpoint.stateless:  # 2026-07-28: no handshake, no session
            ids = [None] * sessions
        else:
            ids = [_initialize(conn, endpoint) for conn in conns]
        answers = {"json": 0, "sse": 0}
        next_id = 1
        for conn, session_id in zip(conns, ids, strict=True):
            for _ in range(warmup):
                response = conn.roundtrip(endpoint.request(_echo(next_id), session_id))
                result, _ = parse_answer(response, next_id)
                _check_echo(result, next_id)
                next_id += 1

        bodies = [_echo(next_id + k) for k in range(n)]
        # Requests are encoded before the measured phase (as the stdio generator does).
        encoded = [b""] * n
        for k in range(n):
            encoded[k] = endpoint.request(bodies[k], ids[k % sessions])
        cpu0 = _cpu(pid)
        gen0 = time.process_time()
        t0 = time.perf_counter_ns()
        latencies = _drive(conns, encoded, next_id, sessions, timeout, answers)
        t1 = time.perf_counter_ns()
        gen1 = time.process_time()
        cpu1 = _cpu(pid)
        server_cpu = cpu1 - cpu0 if cpu0 is not None and cpu1 is not None else None
        out: dict[str, Any] = {
            "mode": "http-calls",
            "url": url,
            "sessions": sessions,
            "n": n,
            "warmup": warmup,
            "answers": answers,
            "reconnects": sum(c.reconnects for c in conns),
        }
        out |= aggregate(latencies, t1 - t0, server_cpu, gen1 - gen0)
        return out
    finally:
        for conn, session_id in zip(conns, ids, strict=False):
            _delete(conn, endpoint, session_id)
        for conn in conns:
            conn.close()


def _drive(
    conns: Sequence[HttpConnection],
    encoded: list[bytes],
    first_id: int,
    sessions: int,
    timeout: float,
    answers: dict[str, int],
) -> list[int]:
    """The measured phase: call ``k`` goes to session ``k % sessions``."""
    n = len(encoded)
    clock = time.perf_counter_ns
    latencies: list[int] = []
    poller = select.poll()
    by_fd: dict[int, int] = {}
    started: list[int] = [0] * len(conns)
    current: list[int] = [-1] * len(conns)
    pending: list[list[int]] = [list(range(s, n, sessions))[::-1] for s in range(len(conns))]
    registered: list[int] = [-1] * len(conns)  # the fd each connection is polled on
    masks: list[int] = [0] * len(conns)

    def watch(s: int, mask: int) -> None:
        fd = conns[s].fileno()
        old = registered[s]
        if old != fd:
            if old >= 0:
                by_fd.pop(old, None)
                with contextlib.suppress(KeyError):
                    poller.unregister(old)
            poller.register(fd, mask)
            by_fd[fd] = s
            registered[s] = fd
        elif masks[s] != mask:
            poller.modify(fd, mask)
        masks[s] = mask

    def launch(s: int) -> None:
        if not pending[s]:
            if registered[s] >= 0:
                by_fd.pop(registered[s], None)
                poller.unregister(registered[s])
                registered[s] = -1
            return
        k = pending[s].pop()
        conn = conns[s]
        conn.start(encoded[k])  # may reconnect: a new fd
        current[s] = k
        started[s] = clock()
        # Send at once: a request left for the next poll() round would wait for every
        # other answer of this round to be handled, and count that as server latency.
        conn.on_writable()
        watch(s, select.POLLIN | (select.POLLOUT if conn.wants_write else 0))

    for s in range(len(conns)):
        launch(s)
    while len(latencies) < n:
        events = poller.poll(timeout * 1000.0)
        if not events:
            raise ServerTimeout(f"no HTTP answer within {timeout}s")
        for fd, mask in events:
            s = by_fd.get(fd, -1)
            if s < 0:
                continue  # a connection replaced since this round began
            conn = conns[s]
            if mask & select.POLLOUT and conn.wants_write:
                conn.on_writable()
                if not conn.wants_write:
                    watch(s, select.POLLIN)
            if not mask & (select.POLLIN | select.POLLHUP | select.POLLERR):
                continue
            response = conn.on_readable()
            if response is None:
                continue
            now = clock()
            k = current[s]
            latencies.append(now - started[s])
            result, kind = parse_answer(response, first_id + k)
            _check_echo(result, first_id + k)
            answers[kind] += 1
            launch(s)
    return latencies


def idle_sessions(
    url: str,
    count: int,
    *,
    pid: int | None,
    warmup: int = 20,
    timeout: float = DEFAULT_TIMEOUT,
    protocol_version: str = DEFAULT_PROTOCOL_VERSION,
    settle: float = 0.5,
    cleanup: bool = False,
) -> dict[str, Any]:
    """Open ``warmup`` then ``count`` sessions and leave them idle; report the server's
    resident memory growth over the ``count`` sessions (KiB, and bytes per session).

    Sessions are opened one after another over one keep-alive connection, so the figure
    is the cost of session state, not of sockets. ``settle`` seconds pass before each
    memory reading. With ``cleanup`` every session is deleted afterwards (use it for a
    server you did not start). Without ``pid`` only the session count is checked.
    """
    if count <= 0:
        raise ValueError("count must be positive")
    endpoint = _Endpoint(url, protocol_version)
    conn = HttpConnection(endpoint.host, endpoint.port, timeout)
    opened: list[str | None] = []
    try:
        for _ in range(warmup):
            opened.append(_initialize(conn, endpoint))
        time.sleep(settle)
        rss0 = rss_kib(pid) if pid is not None else None
        t0 = time.perf_counter()
        for _ in range(count):
            opened.append(_initialize(conn, endpoint))
        elapsed = time.perf_counter() - t0
        time.sleep(settle)
        rss1 = rss_kib(pid) if pid is not None else None
        # The sessions must still be alive: a ping on the first and the last one.
        alive = 0
        for session_id in (opened[warmup], opened[-1]):
            ping = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
            parse_answer(conn.roundtrip(endpoint.request(ping, session_id)), 1)
            alive += 1
        out: dict[str, Any] = {
            "mode": "http-idle",
            "url": url,
            "sessions": count,
            "warmup_sessions": warmup,
            "stateless": opened[-1] is None,
            "open_s": elapsed,
            "sessions_per_s": count / elapsed if elapsed > 0 else None,
            "rss_before_kib": rss0,
            "rss_after_kib": rss1,
            "kib_per_session": None,
            "bytes_per_session": None,
            "checked_alive": alive,
        }
        if rss0 is not None and rss1 is not None:
            out["kib_per_session"] = (rss1 - rss0) / count
            out["bytes_per_session"] = (rss1 - rss0) * 1024 / count
        return out
    finally:
        if cleanup:
            for session_id in opened:
                _delete(conn, endpoint, session_id)
        conn.close()


# ----------------------------------------------------------------------------- CLI


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.loadgen_http",
        description="Raw HTTP/1.1 load generator for MCP Streamable HTTP servers.",
    )
    parser.add_argument("url")
    parser.add_argument("-n", type=int, default=2000, help="measured calls")
    parser.add_argument("--sessions", type=int, default=16, help="concurrent sessions")
    parser.add_argument("--warmup", type=int, default=20, help="unmeasured calls per session")
    parser.add_argument("--idle", type=int, metavar="COUNT", help="measure idle sessions")
    parser.add_argument("--pid", type=int, help="server pid, for CPU and memory figures")
    parser.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT)
    parser.add_argument("--protocol-version", default=DEFAULT_PROTOCOL_VERSION)
    opts = parser.parse_args(sys.argv[1:] if argv is None else argv)
    try:
        if opts.idle:
            result = idle_sessions(
                opts.url,
                opts.idle,
                pid=opts.pid,
                timeout=opts.timeout,
                protocol_version=opts.protocol_version,
                cleanup=True,
            )
        else:
            result = run_calls(
                opts.url,
                opts.n,
                sessions=opts.sessions,
                warmup=opts.warmup,
                pid=opts.pid,
                timeout=opts.timeout,
                protocol_version=opts.protocol_version,
            )
    except (LoadgenError, OSError, ValueError) as exc:
        print(f"loadgen_http: error: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    json.dump(result, sys.stdout, indent=2)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
