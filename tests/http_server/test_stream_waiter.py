"""OutStream.wait_done: what ``done.wait()`` does, for the one POST waiting for its JSON
answer (autojump clock; no test asserts a time)."""

from __future__ import annotations

import pytest
import trio
import trio.testing

from trimcp.transports.http_server.streams import OutStream

WAIT = 60.0  # bound on every wait (instant under the autojump clock)


async def _waits(stream: OutStream, woken: list[str]) -> None:
    await stream.wait_done()
    woken.append("woken")


@pytest.mark.parametrize("end", ["finish", "release_waiter"])
async def test_the_waiter_wakes_when_the_stream_ends_or_is_released(
    autojump_clock: trio.abc.Clock, end: str
) -> None:
    stream = OutStream(None, json_mode=True, requests=[1])
    woken: list[str] = []
    with trio.fail_after(WAIT):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(_waits, stream, woken)
            await trio.testing.wait_all_tasks_blocked()
            assert woken == []
            getattr(stream, end)()
    assert woken == ["woken"]
    assert stream.done.is_set()  # the Event says the same
    assert stream.finished is (end == "finish")  # released: the stream itself goes on
    with trio.testing.assert_checkpoints():
        await stream.wait_done()  # over: at once (a checkpoint, as Event.wait)


async def test_a_cancelled_waiter_leaves_the_stream_usable(autojump_clock: trio.abc.Clock) -> None:
    stream = OutStream(None, json_mode=True, requests=[1])
    with trio.move_on_after(1):
        await stream.wait_done()
    woken: list[str] = []
    with trio.fail_after(WAIT):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(_waits, stream, woken)  # a new waiter is welcome
            await trio.testing.wait_all_tasks_blocked()
            with pytest.raises(trio.BusyResourceError):
                await stream.wait_done()  # but one at a time
            stream.finish()
            stream.finish()  # (twice: nothing more)
    assert woken == ["woken"]
