"""The outbox's direct writes keep the order of what was queued before them.

A reply is written from its handler's task (``Outbox.reply_directly``) only while the
writer task is parked on an empty queue; the outbox counts what goes in and what the
writer takes instead of asking the channel per reply, so these pin the cases the count
must get right: a message handed to the parked writer but not yet written, a send given
up while the queue was full, and a queue carried over to the next outbox.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import trio
import trio.testing

from trimcp.session.transport import Outgoing
from trimcp.session.writer import Outbox


class _Recorder:
    """A transport that records each write's messages."""

    def __init__(self) -> None:
        self.writes: list[list[bytes]] = []

    async def receive(self) -> bytes:
        await trio.sleep_forever()
        raise AssertionError("unreachable")

    async def send(self, messages: list[Outgoing]) -> None:
        self.writes.append([m.data for m in messages])

    async def aclose(self) -> None:
        pass


def _outbox(transport: _Recorder, size: int = 4) -> Outbox:
    return Outbox(transport, size, on_peer_gone=lambda _unwritten: None)


@asynccontextmanager
async def _writing(outbox: Outbox) -> AsyncIterator[None]:
    """The outbox's writer task runs for the block, parked on its queue at the start;
    the queue is closed at the end (the writer then drains it and ends)."""
    async with trio.open_nursery() as nursery:
        nursery.start_soon(outbox.write_loop)
        await trio.testing.wait_all_tasks_blocked()
        yield
        outbox.send_end.close()


async def test_a_reply_waits_behind_a_message_handed_to_the_writer() -> None:
    transport = _Recorder()
    outbox = _outbox(transport)
    async with _writing(outbox):
        # Handed straight to the parked writer: the queue's buffer stays empty, and the
        # writer has not run yet.
        outbox.send_nowait(Outgoing(b"first"))
        assert not await outbox.reply_directly(Outgoing(b"reply", 1, (1,)))
        await outbox.queue(Outgoing(b"reply", 1, (1,)))
        await trio.testing.wait_all_tasks_blocked()
    assert [data for write in transport.writes for data in write] == [b"first", b"reply"]


async def test_a_reply_to_a_parked_writer_on_an_empty_queue_goes_directly() -> None:
    transport = _Recorder()
    outbox = _outbox(transport)
    async with _writing(outbox):
        outbox.send_nowait(Outgoing(b"queued"))
        await trio.testing.wait_all_tasks_blocked()  # written by the writer
        assert await outbox.reply_directly(Outgoing(b"reply", 1, (1,)))
        assert transport.writes == [[b"queued"], [b"reply"]]


async def test_a_send_given_up_on_a_full_queue_is_not_counted(
    autojump_clock: trio.abc.Clock,
) -> None:
    transport = _Recorder()
    outbox = _outbox(transport, size=1)
    outbox.send_nowait(Outgoing(b"fills"))  # no writer yet: the queue is full
    with trio.move_on_after(1):  # (autojump clock: no real wait)
        await outbox.send(Outgoing(b"never"))
    async with _writing(outbox):
        # Only what went in was taken: the counts agree, a reply goes directly again.
        assert await outbox.reply_directly(Outgoing(b"reply", 1, (1,)))
    assert transport.writes == [[b"fills"], [b"reply"]]


async def test_a_carried_queue_keeps_its_count(autojump_clock: trio.abc.Clock) -> None:
    transport = _Recorder()
    first = _outbox(transport)
    first.send_nowait(Outgoing(b"left over"))  # its writer never ran
    second = Outbox(transport, 4, on_peer_gone=lambda _unwritten: None, carry=first)
    async with _writing(second):
        assert await second.reply_directly(Outgoing(b"reply", 1, (1,)))
    assert transport.writes == [[b"left over"], [b"reply"]]


async def test_queue_nowait_on_a_full_queue_says_so_and_is_not_counted() -> None:
    transport = _Recorder()
    outbox = _outbox(transport, size=1)
    assert outbox.queue_nowait(Outgoing(b"fills"))  # no writer yet: now full
    assert not outbox.queue_nowait(Outgoing(b"refused"))
    async with _writing(outbox):
        # The refused one was not counted in: a reply goes directly again.
        assert await outbox.reply_directly(Outgoing(b"reply", 1, (1,)))
    assert transport.writes == [[b"fills"], [b"reply"]]


async def test_queue_nowait_once_the_peer_is_gone_drops_quietly() -> None:
    outbox = _outbox(_Recorder())
    outbox.send_end.close()
    assert outbox.queue_nowait(Outgoing(b"dropped"))  # dropped, not refused
    outbox.receive_end.close()
    assert outbox.queue_nowait(Outgoing(b"dropped too"))
