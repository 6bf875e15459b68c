"""Ctrl-C for the CLI and ``Server.run``: the first SIGINT cancels the work (cleanly), a
second one exits now.

Trio's default turns SIGINT into ``KeyboardInterrupt`` at whatever checkpoint the main task
is at. Cancelling a scope instead lets every ``async with`` on the way out run its bounded,
shielded cleanup: an MCP request in flight sends ``notifications/cancelled``, the session
closes, the child server is stopped.
"""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable

import trio

from trimcp._groups import open_nursery_unwrapped

#: The exit status of a process stopped by Ctrl-C (128 + SIGINT), as shells use.
EXIT_INTERRUPTED = 130


async def run_until_interrupted(
    work: Callable[[], Awaitable[int]],
    *,
    signals: Iterable[int] = (signal.SIGINT,),
    on_interrupt: Callable[[int], None] | None = None,
    graceful: Callable[[], None] | None = None,
    hard_bound: float = 30.0,
) -> tuple[int, int | None]:
    """Run ``work`` until it returns or one of ``signals`` arrives.

    On the first signal ``on_interrupt(signum)`` is called, then either ``graceful()`` (the
    work stops by itself, e.g. a server's shutdown trigger) with a deadline of
    ``hard_bound`` seconds, or, without ``graceful``, the work is cancelled at once. A second
    signal exits the process immediately (``os._exit``), for a cleanup that hangs.

    Returns ``(exit code of work, the signal that stopped it or None)``; a cancelled work's
    exit code is 130. Errors from ``work`` propagate as themselves.
    """
    scope = trio.CancelScope()
    received: int | None = None

    async def watch(receiver: AsyncIterator[int]) -> None:
        nonlocal received
        async for signum in receiver:
            if received is not None:
                sys.stderr.write("trimcp: interrupted again; exiting now\n")
                sys.stderr.flush()
                os._exit(EXIT_INTERRUPTED)
            received = signum
            if on_interrupt is not None:
                on_interrupt(signum)
            if graceful is not None:
                graceful()
                scope.deadline = trio.current_time() + hard_bound
            else:
                scope.cancel()

    code = EXIT_INTERRUPTED
    with trio.open_signal_receiver(*signals) as receiver:
        async with open_nursery_unwrapped() as nursery:
            nursery.start_soon(watch, receiver)
            with scope:
                code = await work()
            nursery.cancel_scope.cancel()
    return code, received
