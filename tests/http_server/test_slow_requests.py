"""SlowRequests: a disconnect watcher only for requests that outlive the grace."""

from __future__ import annotations

import functools

import trio
import trio.testing

from trimcp.transports.http_server.slow import SlowRequests


async def test_a_request_that_ends_within_the_grace_never_gets_a_watcher(
    autojump_clock: trio.abc.Clock,
) -> None:
    slow = SlowRequests(grace=0.02)
    spawned: list[int] = []
    async with trio.open_nursery() as nursery:
        await nursery.start(slow.run)
        for i in range(100):
            watch = slow.add(functools.partial(spawned.append, i))
            await trio.sleep(0.001)
            watch.done()
        await trio.sleep(1)  # long past every grace
        nursery.cancel_scope.cancel()
    assert spawned == []


async def test_a_request_still_running_after_the_grace_gets_its_watcher(
    autojump_clock: trio.abc.Clock,
) -> None:
    slow = SlowRequests(grace=0.02)
    spawned: list[tuple[str, float]] = []
    async with trio.open_nursery() as nursery:
        await nursery.start(slow.run)
        start = trio.current_time()
        first = slow.add(lambda: spawned.append(("first", trio.current_time() - start)))
        await trio.sleep(0.01)
        second = slow.add(lambda: spawned.append(("second", trio.current_time() - start)))
        await trio.sleep(0.005)
        quick = slow.add(lambda: spawned.append(("quick", 0.0)))
        quick.done()
        await trio.sleep(0.1)
        first.done()
        second.done()
        nursery.cancel_scope.cancel()
    assert [name for name, _ in spawned] == ["first", "second"]
    assert abs(spawned[0][1] - 0.02) < 1e-9
    assert abs(spawned[1][1] - 0.03) < 1e-9


async def test_without_the_promoting_task_every_request_is_watched_at_once() -> None:
    slow = SlowRequests()
    spawned: list[int] = []
    slow.add(lambda: spawned.append(1))
    assert spawned == [1]


async def test_requests_queued_when_the_task_stops_are_watched_at_once(
    autojump_clock: trio.abc.Clock,
) -> None:
    slow = SlowRequests(grace=10)
    spawned: list[str] = []
    async with trio.open_nursery() as nursery:
        await nursery.start(slow.run)
        slow.add(lambda: spawned.append("running"))
        ended = slow.add(lambda: spawned.append("ended"))
        ended.done()
        await trio.testing.wait_all_tasks_blocked()
        assert spawned == []
        nursery.cancel_scope.cancel()
    assert spawned == ["running"]
    # After it stopped, a new request is watched at once again.
    slow.add(lambda: spawned.append("later"))
    assert spawned == ["running", "later"]


async def test_a_request_added_while_the_task_waits_for_work_wakes_it(
    autojump_clock: trio.abc.Clock,
) -> None:
    slow = SlowRequests(grace=0.5)
    spawned: list[float] = []
    async with trio.open_nursery() as nursery:
        await nursery.start(slow.run)
        await trio.sleep(5)  # the task waits for work with an empty queue
        start = trio.current_time()
        watch = slow.add(lambda: spawned.append(trio.current_time() - start))
        await trio.sleep(1)
        watch.done()
        nursery.cancel_scope.cancel()
    assert len(spawned) == 1
    assert abs(spawned[0] - 0.5) < 1e-9
