"""SlowRequests: a disconnect watcher only for requests that outlive the grace."""

from __future__ import annotations

import trio
import trio.testing

from trimcp.transports.http_server.slow import SlowRequests, Watcher


class Watchers:
    """Makes watchers that record when they start and whether they were stopped."""

    def __init__(self) -> None:
        self.started: list[tuple[str, float]] = []
        self.stopped: list[str] = []
        self.origin = trio.current_time()

    def make(self, name: str) -> Watcher:
        async def watch() -> None:
            self.started.append((name, trio.current_time() - self.origin))
            try:
                await trio.sleep_forever()
            finally:
                self.stopped.append(name)

        return watch

    @property
    def names(self) -> list[str]:
        return [name for name, _ in self.started]


async def test_a_request_that_ends_within_the_grace_never_gets_a_watcher(
    autojump_clock: trio.abc.Clock,
) -> None:
    slow = SlowRequests(grace=0.02)
    watchers = Watchers()
    async with trio.open_nursery() as nursery:
        await nursery.start(slow.run)
        for i in range(100):
            watch = slow.add(watchers.make(str(i)))
            await trio.sleep(0.001)
            await watch.end()
            assert not watch.watched
        await trio.sleep(1)  # long past every grace
        nursery.cancel_scope.cancel()
    assert watchers.started == []


async def test_a_request_still_running_after_the_grace_gets_its_watcher(
    autojump_clock: trio.abc.Clock,
) -> None:
    slow = SlowRequests(grace=0.02)
    async with trio.open_nursery() as nursery:
        await nursery.start(slow.run)
        watchers = Watchers()
        first = slow.add(watchers.make("first"))
        await trio.sleep(0.01)
        second = slow.add(watchers.make("second"))
        await trio.sleep(0.005)
        quick = slow.add(watchers.make("quick"))
        await quick.end()
        await trio.sleep(0.1)
        assert watchers.names == ["first", "second"]
        assert abs(watchers.started[0][1] - 0.02) < 1e-9
        assert abs(watchers.started[1][1] - 0.03) < 1e-9
        # Ending a watched request stops its watcher before end() returns.
        await first.end()
        assert watchers.stopped == ["first"]
        await second.end()
        assert watchers.stopped == ["first", "second"]
        nursery.cancel_scope.cancel()


async def test_ending_a_watched_request_waits_for_its_watcher_even_when_cancelled(
    autojump_clock: trio.abc.Clock,
) -> None:
    slow = SlowRequests(grace=0.01)
    watchers = Watchers()
    async with trio.open_nursery() as nursery:
        await nursery.start(slow.run)
        watch = slow.add(watchers.make("w"))
        await trio.sleep(1)
        with trio.CancelScope() as scope:
            scope.cancel()
            await watch.end()  # shielded: the watcher is stopped all the same
        assert watchers.stopped == ["w"]
        nursery.cancel_scope.cancel()


async def test_without_the_promoting_task_nothing_is_watched(
    autojump_clock: trio.abc.Clock,
) -> None:
    slow = SlowRequests(grace=0.01)
    watchers = Watchers()
    watch = slow.add(watchers.make("w"))
    await trio.sleep(1)
    await watch.end()
    assert watchers.started == []


async def test_stopping_the_task_stops_the_watchers(autojump_clock: trio.abc.Clock) -> None:
    slow = SlowRequests(grace=0.01)
    watchers = Watchers()
    async with trio.open_nursery() as nursery:
        await nursery.start(slow.run)
        watch = slow.add(watchers.make("w"))
        await trio.sleep(1)
        assert watchers.names == ["w"]
        nursery.cancel_scope.cancel()
    assert watchers.stopped == ["w"]
    await watch.end()  # returns at once: the watcher already stopped


async def test_a_request_added_while_the_task_waits_for_work_wakes_it(
    autojump_clock: trio.abc.Clock,
) -> None:
    slow = SlowRequests(grace=0.5)
    async with trio.open_nursery() as nursery:
        await nursery.start(slow.run)
        await trio.sleep(5)  # the task waits for work with an empty queue
        watchers = Watchers()
        watch = slow.add(watchers.make("w"))
        await trio.testing.wait_all_tasks_blocked()
        await trio.sleep(1)
        assert len(watchers.started) == 1
        assert abs(watchers.started[0][1] - 0.5) < 1e-9
        await watch.end()
        nursery.cancel_scope.cancel()


async def test_the_queue_holds_about_the_requests_still_running(
    autojump_clock: trio.abc.Clock,
) -> None:
    slow = SlowRequests(grace=10)
    watchers = Watchers()
    async with trio.open_nursery() as nursery:
        await nursery.start(slow.run)
        for _ in range(10_000):
            await slow.add(watchers.make("w")).end()
        assert len(slow._queue) <= 1
        nursery.cancel_scope.cancel()


async def test_end_now_ends_an_unwatched_request_and_leaves_a_watched_one_to_end(
    autojump_clock: trio.abc.Clock,
) -> None:
    slow = SlowRequests(grace=0.02)
    watchers = Watchers()
    async with trio.open_nursery() as nursery:
        await nursery.start(slow.run)
        quick = slow.add(watchers.make("quick"))
        late = slow.add(watchers.make("late"))
        assert quick.end_now()  # within the grace: ended, and never watched
        await trio.sleep(0.1)
        assert watchers.names == ["late"]
        assert not late.end_now()  # its watcher runs: end() must stop it
        assert watchers.stopped == []
        await late.end()
        assert watchers.stopped == ["late"]
        nursery.cancel_scope.cancel()
