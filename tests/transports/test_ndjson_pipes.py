"""NdjsonTransport on pipes (what stdio uses on both sides): direct reads and writes,
``send_now`` whole-or-nothing, and the same errors as Trio's own pipe stream."""

from __future__ import annotations

import os

import pytest
import trio
import trio.testing

from trimcp.session.transport import MessageTooLarge, Outgoing
from trimcp.transports.ndjson import NdjsonTransport


def pipe_pair() -> tuple[NdjsonTransport, NdjsonTransport]:
    """Two transports joined by two pipes: (a, b); a's sends arrive at b and back."""
    a_to_b = os.pipe()
    b_to_a = os.pipe()
    a = NdjsonTransport(trio.lowlevel.FdStream(b_to_a[0]), trio.lowlevel.FdStream(a_to_b[1]))
    b = NdjsonTransport(trio.lowlevel.FdStream(a_to_b[0]), trio.lowlevel.FdStream(b_to_a[1]))
    return a, b


async def test_messages_cross_whole_and_in_order_both_ways() -> None:
    a, b = pipe_pair()
    await a.send([Outgoing(b'{"n":1}'), Outgoing(b'{"n":2}')])
    assert a.send_now(Outgoing(b'{"n":3}'))
    assert [await b.receive() for _ in range(3)] == [b'{"n":1}', b'{"n":2}', b'{"n":3}']
    await b.send([Outgoing(b'{"back":true}')])
    assert await a.receive() == b'{"back":true}'
    await a.aclose()
    with pytest.raises(trio.EndOfChannel):
        await b.receive()
    await b.aclose()


async def test_send_now_writes_a_whole_line_or_nothing() -> None:
    a, b = pipe_pair()
    line = b'{"fill":"' + b"x" * 1000 + b'"}'
    sent = 0
    while a.send_now(Outgoing(line)):  # until the pipe is full
        sent += 1
    assert sent > 0
    # Full: nothing was written by the refused call; the ordinary send waits for room.
    async with trio.open_nursery() as nursery:
        nursery.start_soon(a.send, [Outgoing(b'{"last":1}')])
        for _ in range(sent):
            assert await b.receive() == line
        assert await b.receive() == b'{"last":1}'
    # Bigger than the pipe's atomic size: never written at once.
    assert not a.send_now(Outgoing(b'"' + b"y" * 70000 + b'"'))
    await a.aclose()
    await b.aclose()


async def test_a_closed_transport_raises_closed_and_a_gone_peer_raises_broken() -> None:
    a, b = pipe_pair()
    await b.aclose()
    with pytest.raises(trio.BrokenResourceError):
        await a.send([Outgoing(b"{}")])
    assert not a.send_now(Outgoing(b"{}"))
    await a.aclose()
    with pytest.raises(trio.ClosedResourceError):
        await a.receive()


async def test_a_waiting_receive_is_cancellable_and_loses_nothing() -> None:
    a, b = pipe_pair()
    with trio.move_on_after(1) as scope:
        await b.receive()
    assert scope.cancelled_caught
    await a.send([Outgoing(b'{"after":1}')])
    assert await b.receive() == b'{"after":1}'
    await a.aclose()
    await b.aclose()


async def test_a_reader_that_always_has_input_still_lets_others_run() -> None:
    a, b = pipe_pair()
    ran = trio.Event()

    async def other() -> None:
        ran.set()

    async with trio.open_nursery() as nursery:
        nursery.start_soon(other)
        for _ in range(32):  # each receive finds its line waiting: no need to wait
            assert a.send_now(Outgoing(b"{}"))
            await b.receive()
        assert ran.is_set()  # a real schedule point came within those reads
    await a.aclose()
    await b.aclose()


async def test_receive_many_hands_over_what_one_read_brought() -> None:
    a, b = pipe_pair()
    await a.send([Outgoing(b'{"n":%d}' % n) for n in range(50)])
    got = await b.receive_many()
    assert got == [b'{"n":%d}' % n for n in range(50)]  # one read, one call
    a.send_now(Outgoing(b'{"n":50}'))
    assert await b.receive_many() == [b'{"n":50}']
    await a.aclose()
    with pytest.raises(trio.EndOfChannel):
        await b.receive_many()
    await b.aclose()


async def test_receive_many_reports_an_over_long_line_in_its_place() -> None:
    a_to_b = os.pipe()
    b_to_a = os.pipe()
    b = NdjsonTransport(
        trio.lowlevel.FdStream(a_to_b[0]), trio.lowlevel.FdStream(b_to_a[1]), max_message_bytes=16
    )
    os.write(a_to_b[1], b'{"n":1}\n{"n":2}\n' + b"x" * 40 + b'\n{"n":3}\r\n{"n":4}\n')
    os.close(a_to_b[1])
    seen: list[object] = []
    while True:
        try:
            seen += await b.receive_many()
        except MessageTooLarge as exc:
            seen.append(exc.dropped)
        except trio.EndOfChannel:
            break
    assert seen == [b'{"n":1}', b'{"n":2}', 40, b'{"n":3}', b'{"n":4}']
    await b.aclose()
    os.close(b_to_a[0])
