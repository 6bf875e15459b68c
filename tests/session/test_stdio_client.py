"""The stdio client side against real child processes: stderr draining, shutdown ladder,
child death. These spawn processes, so they run on the real clock; every wait is bounded by
the ladder's own timeouts."""

from __future__ import annotations

import signal
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
import trio

from tests.support import NullClient, init_params
from trimcp.errors import SessionClosed
from trimcp.protocol.lifecycle import Role
from trimcp.session import Session, open_session
from trimcp.transports.stdio import ShutdownTimeouts, open_stdio_client_transport

CHILD = str(Path(__file__).parent / "children" / "server.py")
FAST_LADDER = ShutdownTimeouts(after_stdin_close=0.5, after_sigterm=0.5, after_sigkill=5)


@asynccontextmanager
async def child_session(mode: str, lines: list[str] | None = None) -> AsyncIterator[Session]:
    argv = [sys.executable, CHILD, mode]
    on_stderr = lines.append if lines is not None else None
    async with (
        open_stdio_client_transport(argv, on_stderr=on_stderr, shutdown=FAST_LADDER) as transport,
        open_session(transport, role=Role.CLIENT, handler=NullClient()) as session,
    ):
        with trio.fail_after(30):
            await session.initialize(init_params())
        yield session


async def test_a_well_behaved_child_answers_and_exits() -> None:
    async with child_session("plain") as session:
        assert await session.send_request("hello") == {"mode": "plain"}


async def test_serving_stdio_freezes_what_the_process_made_before() -> None:
    # The cyclic GC's full collections then skip the modules and tables of start-up.
    async with child_session("plain") as session:
        answer = await session.send_request("gc")
    assert answer["frozen"] > 1000


async def test_serving_stdio_raises_the_interpreters_young_gc_threshold() -> None:
    # 100 pipelined requests in flight then make no young collection per batch.
    async with child_session("plain") as session:
        answer = await session.send_request("gc")
    assert answer["thresholds"] == [2000, 10, 10]


async def test_serving_stdio_keeps_gc_thresholds_the_server_set() -> None:
    async with child_session("gc-tuned") as session:
        answer = await session.send_request("gc")
    assert answer["thresholds"] == [5000, 20, 30]


async def test_child_writing_1mib_to_stderr_still_completes() -> None:
    lines: list[str] = []
    async with child_session("noisy", lines) as session:
        assert await session.send_request("hello") == {"mode": "noisy"}
    assert len([line for line in lines if line.startswith("xxx")]) == 1024


async def test_child_ignoring_sigterm_is_killed() -> None:
    argv = [sys.executable, CHILD, "ignore-sigterm"]
    with trio.fail_after(30):
        async with (
            open_stdio_client_transport(argv, shutdown=FAST_LADDER) as transport,
            open_session(transport, role=Role.CLIENT, handler=NullClient()) as s,
        ):
            await s.initialize(init_params())
    # stdin closed: ignored; SIGTERM: ignored; SIGKILL ended it.
    assert transport.process.returncode == -signal.SIGKILL


async def test_well_behaved_child_exits_on_stdin_close() -> None:
    argv = [sys.executable, CHILD, "plain"]
    # The child exits by itself at once; the bound only has to outlast a loaded machine
    # (0.5 s did not, in a full run: SIGTERM came first, returncode -15).
    patient = ShutdownTimeouts(after_stdin_close=20, after_sigterm=0.5, after_sigkill=5)
    with trio.fail_after(30):
        async with (
            open_stdio_client_transport(argv, shutdown=patient) as transport,
            open_session(transport, role=Role.CLIENT, handler=NullClient()) as s,
        ):
            await s.initialize(init_params())
    assert transport.process.returncode == 0  # no signal was needed


async def test_a_child_may_finish_writing_after_its_stdin_closes() -> None:
    # Regression: closing the child's stdout together with its stdin made a server that
    # was still finishing work die of EPIPE (found against the TypeScript everything
    # server). The client now drains stdout until the child exits, so 1 MiB (more than a
    # pipe holds) goes through and the child exits 0 without a signal.
    argv = [sys.executable, CHILD, "finish-after-eof"]
    patient = ShutdownTimeouts(after_stdin_close=20, after_sigterm=0.5, after_sigkill=5)
    with trio.fail_after(60):
        async with (
            open_stdio_client_transport(argv, shutdown=patient) as transport,
            open_session(transport, role=Role.CLIENT, handler=NullClient()) as s,
        ):
            await s.initialize(init_params())
    assert transport.process.returncode == 0


async def test_child_dying_mid_request_fails_the_request_at_once() -> None:
    async with child_session("die") as session:
        with trio.fail_after(10), pytest.raises(SessionClosed):
            await session.send_request("die", timeout=None)
