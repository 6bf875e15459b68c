"""trimcp/_fastio.py: direct syscalls on a stream's socket or pipe, with one checkpoint
policy (a cancel point per call, a schedule point when waiting and every FAIR_EVERY-th
call otherwise), and the plain Trio path where they are not used (off POSIX): the stdio
transport and the lean HTTP server work end to end on that path too."""

from __future__ import annotations

import os
from types import SimpleNamespace

import pytest
import trio
import trio.testing

import trimcp._fastio as fastio
from tests.http_server import test_real_socket
from tests.transports.test_ndjson_pipes import pipe_pair
from trimcp._fastio import FAIR_EVERY, FastReceive, FastSend
from trimcp.session.transport import Outgoing


def pipe() -> tuple[trio.lowlevel.FdStream, trio.lowlevel.FdStream]:
    read_fd, write_fd = os.pipe()
    return trio.lowlevel.FdStream(read_fd), trio.lowlevel.FdStream(write_fd)


async def test_a_cancelled_call_reads_or_writes_nothing() -> None:
    reader, writer = pipe()
    fast_in, fast_out = FastReceive(reader), FastSend(writer)
    assert fast_in.direct
    assert fast_out.direct
    await fast_out.send_all(b"there")
    with trio.CancelScope() as scope:
        scope.cancel()
        with pytest.raises(trio.Cancelled):
            await fast_in.receive_some(100)
    with trio.CancelScope() as scope:
        scope.cancel()
        with pytest.raises(trio.Cancelled):
            await fast_out.send_all(b"not sent")
    assert await fast_in.receive_some(100) == b"there"
    await reader.aclose()
    await writer.aclose()


class _Yields(trio.abc.Instrument):
    """Counts how often one task gave the scheduler a turn (was rescheduled)."""

    def __init__(self, task: trio.lowlevel.Task) -> None:
        self.task = task
        self.count = 0

    def task_scheduled(self, task: trio.lowlevel.Task) -> None:
        if task is self.task:
            self.count += 1


async def test_calls_that_never_wait_still_let_other_tasks_run() -> None:
    # Counted, not raced: which of two runnable tasks Trio runs first is random on purpose.
    reader, writer = pipe()
    fast_in = FastReceive(reader)
    await FastSend(writer).send_all(b"x" * FAIR_EVERY)
    yields = _Yields(trio.lowlevel.current_task())
    trio.lowlevel.add_instrument(yields)
    try:
        for _ in range(FAIR_EVERY - 1):
            assert await fast_in.receive_some(1) == b"x"  # there: no schedule point
        assert yields.count == 0
        assert await fast_in.receive_some(1) == b"x"
        assert yields.count == 1
    finally:
        trio.lowlevel.remove_instrument(yields)
    await reader.aclose()
    await writer.aclose()


async def test_a_read_that_waits_is_a_schedule_point() -> None:
    reader, writer = pipe()
    fast_in = FastReceive(reader)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(FastSend(writer).send_all, b"late")
        assert await fast_in.receive_some(100) == b"late"  # waited for the writer task
    await reader.aclose()
    await writer.aclose()


async def test_receive_nowait_reads_what_is_there_and_never_waits() -> None:
    reader, writer = pipe()
    fast_in = FastReceive(reader)
    yields = _Yields(trio.lowlevel.current_task())
    trio.lowlevel.add_instrument(yields)
    try:
        assert fast_in.receive_nowait(100) is None  # nothing yet: would wait
        await FastSend(writer).send_all(b"here")
        yields.count = 0
        assert fast_in.receive_nowait(100) == b"here"
        assert fast_in.receive_nowait(100) is None
        assert yields.count == 0  # no checkpoint
    finally:
        trio.lowlevel.remove_instrument(yields)
    await writer.aclose()
    assert fast_in.receive_nowait(100) == b""  # the end of input
    await reader.aclose()
    with pytest.raises(trio.ClosedResourceError):
        fast_in.receive_nowait(100)


async def test_a_blocked_read_waits_for_the_kernel_first() -> None:
    # receive_nowait found nothing: the read then waits (a schedule point) and reads.
    reader, writer = pipe()
    fast_in = FastReceive(reader)
    assert fast_in.receive_nowait(100) is None
    async with trio.open_nursery() as nursery:
        nursery.start_soon(FastSend(writer).send_all, b"late")
        assert await fast_in.receive_some(100, blocked=True) == b"late"
    with trio.CancelScope() as scope:
        scope.cancel()
        with pytest.raises(trio.Cancelled):
            await fast_in.receive_some(100, blocked=True)  # a cancel point too
    await writer.aclose()
    assert await fast_in.receive_some(100, blocked=True) == b""
    await reader.aclose()


async def test_wait_readable_waits_for_input_and_reads_nothing() -> None:
    reader, writer = pipe()
    fast_in = FastReceive(reader)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(FastSend(writer).send_all, b"late")
        assert await fast_in.wait_readable() is True
    assert fast_in.receive_nowait(100) == b"late"  # still there to read
    with trio.CancelScope() as scope:
        scope.cancel()
        with pytest.raises(trio.Cancelled):
            await fast_in.wait_readable()  # a cancel point
    await writer.aclose()
    assert await fast_in.wait_readable() is True  # the end of input is readable too
    await reader.aclose()
    assert await fast_in.wait_readable() is False  # closed here: nothing to wait for
    _, receive = trio.testing.memory_stream_pair()
    assert await FastReceive(receive).wait_readable() is False  # not read directly


async def test_closed_here_raises_closed_and_gone_there_raises_broken() -> None:
    reader, writer = pipe()
    fast_in, fast_out = FastReceive(reader), FastSend(writer)
    await reader.aclose()
    with pytest.raises(trio.ClosedResourceError):
        await fast_in.receive_some(100)
    with pytest.raises(trio.BrokenResourceError):
        await fast_out.send_all(b"nobody reads")
    with pytest.raises(trio.BrokenResourceError):
        fast_out.send_now(b"nobody reads")
    await writer.aclose()


@pytest.fixture
def not_posix(monkeypatch: pytest.MonkeyPatch) -> None:
    """As on Windows: no direct syscalls, and a direct one would fail the test."""
    monkeypatch.setattr(fastio, "POSIX", False)
    monkeypatch.setattr(fastio, "os", SimpleNamespace())  # no os.read, no os.write


@pytest.mark.usefixtures("not_posix")
async def test_off_posix_stdio_uses_the_streams_own_methods() -> None:
    a, b = pipe_pair()
    assert not a._in.direct
    assert not a._out.direct
    await a.send([Outgoing(b'{"n":1}'), Outgoing(b'{"n":2}')])
    assert not a.send_now(Outgoing(b'{"n":3}'))  # never at once: the ordinary path
    assert FastReceive(trio.testing.MemoryReceiveStream()).receive_nowait(100) is None
    await a.send([Outgoing(b'{"n":3}')])
    assert [await b.receive() for _ in range(3)] == [b'{"n":1}', b'{"n":2}', b'{"n":3}']
    await b.send([Outgoing(b'{"back":true}')])
    assert await a.receive() == b'{"back":true}'
    await a.aclose()
    with pytest.raises(trio.EndOfChannel):
        await b.receive()
    await b.aclose()


@pytest.mark.usefixtures("not_posix")
async def test_off_posix_the_lean_http_server_serves_a_session() -> None:
    # initialize, initialized, three calls on one keep-alive connection, DELETE
    await test_real_socket.test_serve_http_on_port_zero_answers_a_session("lean")


@pytest.mark.usefixtures("not_posix")
async def test_off_posix_the_lean_http_server_answers_pipelined_requests() -> None:
    await test_real_socket.test_lean_pipelined_requests_are_answered_in_order()
