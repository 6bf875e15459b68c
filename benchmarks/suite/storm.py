"""The cancellation storm: many ``sleep`` calls over stdio, every one of them cancelled with
``notifications/cancelled`` at a random point, then a count of handlers still running.

Each call sleeps a random 0..``max_sleep_ms``. Its cancel goes out either in the same
write as the request (so it can arrive before the handler starts, or before the request
is even read) or after a random delay of up to 1.5 x ``max_sleep_ms`` (during the handler,
or after it already answered: a cancel for a finished request must be ignored). Up to
``in_flight`` calls wait for their cancel at any time.

Afterwards the generator asks the server's ``stats`` tool how many handlers are still
live, polling for up to ``settle`` seconds; whatever is still live then is reported as
``leaked``. Also reported: replies read after the call's cancel was sent
(``replies_to_cancelled``: a legal race when the handler finished before the cancel
arrived; a server that ignores cancels answers nearly every call), error replies,
duplicate replies (at most one reply per id is a MUST), and the server's own
started/finished/cancelled counts.
"""

from __future__ import annotations

import heapq
import json
import random
import time
from collections.abc import Sequence
from typing import Any

from benchmarks.loadgen_stdio import (
    DEFAULT_PROTOCOL_VERSION,
    DEFAULT_TIMEOUT,
    BadResponse,
    ServerTimeout,
    StdioServer,
    check_response,
)

#: Share of calls whose cancel is written together with the request.
IMMEDIATE_SHARE = 0.15


def _encode(message: dict[str, Any]) -> bytes:
    return json.dumps(message, separators=(",", ":")).encode() + b"\n"


def _pump_until(server: StdioServer, deadline: float) -> None:
    """One round of I/O on the server's pipes, returning by ``deadline`` at the latest.

    ``StdioServer`` has no public timed wait; its one-round pump raises ``ServerTimeout``
    exactly when the deadline passes with nothing to do, which here is not an error.
    """
    try:
        server._pump(deadline)
    except ServerTimeout:
        return


def _stats(server: StdioServer, request_id: int, tally: _Tally) -> dict[str, Any]:
    server.queue(
        _encode(
            {
                "jsonrpc": "2.0",
                "id": request_id,
                "method": "tools/call",
                "params": {"name": "stats", "arguments": {}},
            }
        )
    )
    while True:
        msg = server.next_message()
        if msg.get("id") == request_id:
            result = check_response(msg, request_id)
            try:
                stats: dict[str, Any] = json.loads(result["content"][0]["text"])
            except (KeyError, IndexError, TypeError, ValueError) as exc:
                raise BadResponse(f"stats tool answered {result}") from exc
            return stats
        tally.reply(msg)


class _Tally:
    def __init__(self) -> None:
        self.cancelled: set[int] = set()
        self.answered: set[int] = set()
        self.before_cancel = 0
        self.to_cancelled = 0
        self.errors = 0
        self.duplicates = 0
        self.unknown = 0

    def reply(self, msg: dict[str, Any]) -> None:
        request_id = msg.get("id")
        if not isinstance(request_id, int):
            self.unknown += 1
            return
        if request_id in self.answered:
            self.duplicates += 1
            return
        self.answered.add(request_id)
        if "error" in msg:
            self.errors += 1
        if request_id in self.cancelled:
            self.to_cancelled += 1
        else:
            self.before_cancel += 1


def cancel_storm(
    argv: Sequence[str],
    n: int,
    *,
    in_flight: int = 64,
    max_sleep_ms: float = 4.0,
    seed: int = 1,
    settle: float = 5.0,
    timeout: float = DEFAULT_TIMEOUT,
    protocol_version: str = DEFAULT_PROTOCOL_VERSION,
    stderr: int | None = None,
) -> dict[str, Any]:
    """Run the storm against the server ``argv`` (which must have ``sleep`` and ``stats``).

    Raises ``LoadgenError`` subclasses on a dead or silent server; the server is always
    stopped on the way out. Every wait is bounded (``timeout`` per wait, ``settle`` for
    the final count).
    """
    if n <= 0 or in_flight <= 0:
        raise ValueError("n and in_flight must be positive")
    rng = random.Random(seed)
    tally = _Tally()
    with StdioServer(argv, timeout=timeout, stderr=stderr) as server:
        server.initialize(protocol_version)
        first = 1
        waiting: list[tuple[float, int]] = []  # (when to cancel, id)
        cpu0 = server.cpu()
        gen0 = time.process_time()
        t0 = time.perf_counter()
        next_k = 0

        def cancel(request_id: int) -> None:
            tally.cancelled.add(request_id)
            server.queue(
                _encode(
                    {
                        "jsonrpc": "2.0",
                        "method": "notifications/cancelled",
                        "params": {"requestId": request_id, "reason": "storm"},
                    }
                )
            )

        while next_k < n or waiting:
            now = time.monotonic()
            while len(waiting) < in_flight and next_k < n:
                request_id = first + next_k
                next_k += 1
                ms = round(rng.uniform(0.0, max_sleep_ms), 3)
                server.queue(
                    _encode(
                        {
                            "jsonrpc": "2.0",
                            "id": request_id,
                            "method": "tools/call",
                            "params": {"name": "sleep", "arguments": {"ms": ms}},
                        }
                    )
                )
                if rng.random() < IMMEDIATE_SHARE:
                    cancel(request_id)
                else:
                    delay = rng.uniform(0.0, 1.5 * max_sleep_ms) / 1000.0
                    heapq.heappush(waiting, (now + delay, request_id))
            while waiting and waiting[0][0] <= now:
                cancel(heapq.heappop(waiting)[1])
            deadline = waiting[0][0] if waiting else now + 0.001
            _pump_until(server, deadline)
            while server.has_buffered():
                tally.reply(server.next_message())
        server.flush()
        t1 = time.perf_counter()
        gen1 = time.process_time()
        # Handlers that saw their cancel end promptly; give stragglers ``settle`` seconds.
        stats_id = first + n
        stats = _stats(server, stats_id, tally)
        settle_deadline = time.monotonic() + settle
        while stats.get("live", 0) > 0 and time.monotonic() < settle_deadline:
            time.sleep(0.02)
            stats_id += 1
            stats = _stats(server, stats_id, tally)
        cpu1 = server.cpu()
        server_cpu = cpu1 - cpu0 if cpu0 is not None and cpu1 is not None else None
        return {
            "mode": "storm",
            "argv": list(argv),
            "calls": n,
            "in_flight": in_flight,
            "max_sleep_ms": max_sleep_ms,
            "seed": seed,
            "wall_s": t1 - t0,
            "calls_per_s": n / (t1 - t0),
            "leaked": int(stats.get("live", 0)),
            "server_stats": stats,
            "replies_before_cancel": tally.before_cancel,
            "replies_to_cancelled": tally.to_cancelled,
            "error_replies": tally.errors,
            "duplicate_replies": tally.duplicates,
            "unknown_replies": tally.unknown,
            "gen_cpu_us_per_call": (gen1 - gen0) * 1e6 / n,
            "server_cpu_us_per_call": server_cpu.total * 1e6 / n if server_cpu else None,
            "server_peak_rss_kib": server.peak_rss_kib(),
        }
