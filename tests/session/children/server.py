"""A trimcp stdio server whose misbehaviour is picked by argv[1], for the stdio client tests.

- ``noisy``: writes 1 MiB to stderr before serving (the client must drain it).
- ``ignore-sigterm``: ignores SIGTERM and keeps running after stdin closes.
- ``die``: the ``die`` method kills the process mid-request.
- ``finish-after-eof``: after stdin closes, writes 1 MiB to stdout (work it was finishing)
  and exits 0 only if every write succeeded.
- ``gc-tuned``: sets its own GC thresholds (5000, 20, 30) before serving.
- anything else: a well-behaved server.

Every mode answers ``hello`` (its mode) and ``gc`` (``gc.get_freeze_count()`` and
``gc.get_threshold()``).
"""

from __future__ import annotations

import gc
import os
import signal
import sys
from typing import Any

import trio

from trimcp.server.lowlevel import LowLevelServer
from trimcp.session import RequestContext
from trimcp.transports.stdio import serve_stdio
from trimcp.types import Implementation

MODE = sys.argv[1] if len(sys.argv) > 1 else "plain"
if MODE == "gc-tuned":
    gc.set_threshold(5000, 20, 30)
server = LowLevelServer(Implementation(name=f"child-{MODE}", version="1"))


@server.request_handler("die")
async def die(ctx: RequestContext) -> dict[str, Any]:
    os._exit(3)


@server.request_handler("gc")
async def gc_state(ctx: RequestContext) -> dict[str, Any]:
    return {"frozen": gc.get_freeze_count(), "thresholds": list(gc.get_threshold())}


@server.request_handler("hello")
async def hello(ctx: RequestContext) -> dict[str, Any]:
    return {"mode": MODE}


async def main() -> None:
    if MODE == "noisy":
        sys.stderr.write(("x" * 1023 + "\n") * 1024)
        sys.stderr.flush()
    await serve_stdio(server)
    if MODE == "ignore-sigterm":
        await trio.sleep_forever()
    if MODE == "finish-after-eof":
        try:
            for _ in range(1024):
                os.write(1, b"y" * 1023 + b"\n")
        except BrokenPipeError:
            os._exit(1)


if __name__ == "__main__":
    if MODE == "ignore-sigterm":
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    trio.run(main)
