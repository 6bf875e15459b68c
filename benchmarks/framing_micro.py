"""Micro-benchmark of the sans-IO codecs: cost per line (stdio) and per event (SSE).

Feeds 10,000 small JSON-RPC messages in 64 KiB chunks, draining events after each chunk as a
transport would, and prints the best of several runs in microseconds per message. Also
times one 4 MiB line arriving in 64 KiB chunks, the case where a framer that rescans its
buffer on every read goes quadratic.

Run: .venv/bin/python benchmarks/framing_micro.py
"""

from __future__ import annotations

import time
from collections.abc import Callable

from trimcp.protocol.framing import NEED_DATA, LineFramer, frame_message
from trimcp.protocol.sse import SSEDecoder, encode_event

MESSAGES = 10_000
CHUNK = 64 * 1024
REPEATS = 7


def _chunks(stream: bytes) -> list[bytes]:
    return [stream[i : i + CHUNK] for i in range(0, len(stream), CHUNK)]


def _message(i: int) -> str:
    return f'{{"jsonrpc":"2.0","id":{i},"method":"tools/call","params":{{"name":"echo"}}}}'


def _best_seconds(run: Callable[[], int], expected: int) -> float:
    best = float("inf")
    for _ in range(REPEATS):
        start = time.perf_counter()
        count = run()
        best = min(best, time.perf_counter() - start)
        assert count == expected, (count, expected)
    return best


def bench_framer(chunks: list[bytes]) -> int:
    framer = LineFramer()
    count = 0
    for chunk in chunks:
        framer.receive_data(chunk)
        while framer.next_event() is not NEED_DATA:
            count += 1
    return count


def bench_sse(chunks: list[bytes]) -> int:
    decoder = SSEDecoder()
    count = 0
    for chunk in chunks:
        decoder.receive_data(chunk)
        while decoder.next_event() is not NEED_DATA:
            count += 1
    return count


def main() -> None:
    lines = _chunks(b"".join(frame_message(_message(i).encode()) for i in range(MESSAGES)))
    events = _chunks(b"".join(encode_event(_message(i), id=str(i)) for i in range(MESSAGES)))
    big_line = _chunks(b"x" * (4 * 1024 * 1024 - 1) + b"\n")

    per_line = _best_seconds(lambda: bench_framer(lines), MESSAGES) / MESSAGES * 1e6
    per_event = _best_seconds(lambda: bench_sse(events), MESSAGES) / MESSAGES * 1e6
    big_framer = _best_seconds(lambda: bench_framer(big_line), 1) * 1e3
    big_sse = _best_seconds(lambda: bench_sse(_chunks(b"data: " + b"x" * 4_000_000 + b"\n\n")), 1)

    print(f"LineFramer:  {per_line:.3f} us/line  ({MESSAGES} lines, {CHUNK // 1024} KiB chunks)")
    print(f"SSEDecoder:  {per_event:.3f} us/event ({MESSAGES} events, id + data)")
    print(f"LineFramer:  {big_framer:.2f} ms for one 4 MiB line in {CHUNK // 1024} KiB chunks")
    print(f"SSEDecoder:  {big_sse * 1e3:.2f} ms for one ~4 MB event in {CHUNK // 1024} KiB chunks")


if __name__ == "__main__":
    main()
