"""Instructions (callgrind) or Python calls (cProfile) per pipelined stdio ``tools/call``.

Machine-independent, so that two checkouts can be compared on a loaded machine: the server
runs under ``valgrind --tool=callgrind`` (``PYTHONHASHSEED=0``) or ``python -m cProfile``,
``tools/call`` of ``echo`` is sent in batches of ``--in-flight`` (each batch answered before
the next is written, as the ``pipe`` workloads keep that many in flight), and what one call
costs is the difference between a run of ``N2`` calls and one of ``N1``, over ``N2 - N1``
(start-up, warm-up and shutdown cancel out). ``--era 2026`` sends the 2026-07-28 ``_meta``
envelope and no ``initialize``; ``--era 2025`` opens a session first.

Usage::

    python -m benchmarks.count_stdio [--tree DIR] [--calls 1000 5000] [--era 2026|2025]
        [--profile] [-- server argv (default: benchmarks/servers/trimcp_lowlevel.py)]

``--tree``: the checkout whose trimcp the server imports (``PYTHONPATH``; default this one).
``--profile`` counts Python and C calls per request (cProfile) and lists the most called.
"""

from __future__ import annotations

import argparse
import json
import os
import pstats
import re
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from benchmarks.loadgen_stdio import stateless_meta

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_SERVER = ["benchmarks/servers/trimcp_lowlevel.py"]
_TOTAL = re.compile(rb"^(?:summary|totals): (\d+)", re.MULTILINE)


def _request(request_id: int, era: str) -> bytes:
    params: dict[str, Any] = {"name": "echo", "arguments": {"text": f"echo-{request_id}"}}
    if era == "2026":
        params["_meta"] = stateless_meta("2026-07-28")
    message = {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}
    return json.dumps(message, separators=(",", ":")).encode() + b"\n"


def _drive(proc: subprocess.Popen[bytes], calls: int, in_flight: int, era: str) -> None:
    assert proc.stdin is not None
    assert proc.stdout is not None
    if era == "2025":
        init = {
            "jsonrpc": "2.0",
            "id": 0,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "clientInfo": {"name": "count", "version": "1"},
            },
        }
        proc.stdin.write(json.dumps(init).encode() + b"\n")
        proc.stdin.flush()
        proc.stdout.readline()
        proc.stdin.write(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')
    first = 1
    while first <= calls:
        batch = range(first, min(first + in_flight, calls + 1))
        proc.stdin.write(b"".join(_request(i, era) for i in batch))
        proc.stdin.flush()
        for _ in batch:
            answer = json.loads(proc.stdout.readline())
            if "result" not in answer or answer["result"].get("isError"):
                raise SystemExit(f"count_stdio: a call failed: {answer}")
        first += len(batch)
    proc.stdin.close()
    proc.wait()


def _run(opts: argparse.Namespace, server: list[str], calls: int, out: str) -> None:
    env = dict(os.environ, PYTHONPATH=str(opts.tree), PYTHONHASHSEED="0")
    if opts.profile:
        cmd = [sys.executable, "-m", "cProfile", "-o", out, *server]
    else:
        cmd = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", sys.executable]
        cmd += server
    proc = subprocess.Popen(
        cmd,
        cwd=opts.tree,
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    _drive(proc, calls, opts.in_flight, opts.era)


def instructions(path: str) -> int:
    """The instruction total of a callgrind output file (also used by count_http)."""
    found = _TOTAL.search(Path(path).read_bytes())
    if found is None:
        raise SystemExit(f"no instruction total in {path}")
    return int(found.group(1))


def profile_report(first: str, second: str, span: int, top: int, unit: str = "request") -> None:
    """Print the Python and C calls per ``unit`` between two cProfile dumps ``span`` units
    apart, and the ``top`` most called (also used by count_http)."""
    before, after = pstats.Stats(first).stats, pstats.Stats(second).stats
    rows = []
    for key, value in after.items():
        calls = value[1] - before.get(key, (0, 0))[1]
        rows.append((calls / span, f"{key[0]}:{key[1]}({key[2]})"))
    print(f"Python and C calls per {unit}: {sum(c for c, _ in rows):.1f}")
    for per_unit, name in sorted(rows, reverse=True)[:top]:
        print(f"{per_unit:7.2f}  {name}")


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    server = DEFAULT_SERVER
    if "--" in args:
        cut = args.index("--")
        args, server = args[:cut], args[cut + 1 :]
    parser = argparse.ArgumentParser(prog="python -m benchmarks.count_stdio")
    parser.add_argument("--tree", type=Path, default=ROOT)
    parser.add_argument("--calls", type=int, nargs=2, default=(1000, 5000))
    parser.add_argument("--in-flight", type=int, default=100)
    parser.add_argument("--era", choices=("2026", "2025"), default="2026")
    parser.add_argument("--profile", action="store_true")
    parser.add_argument("--top", type=int, default=40)
    opts = parser.parse_args(args)
    small, large = opts.calls
    with tempfile.TemporaryDirectory() as tmp:
        outs = [str(Path(tmp) / f"run-{calls}") for calls in (small, large)]
        for calls, out in zip((small, large), outs, strict=True):
            _run(opts, server, calls, out)
        if opts.profile:
            profile_report(outs[0], outs[1], large - small, opts.top)
        else:
            per_call = (instructions(outs[1]) - instructions(outs[0])) / (large - small)
            print(f"{opts.tree}: {per_call:,.0f} instructions per call ({opts.era})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
