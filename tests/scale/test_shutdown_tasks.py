"""A replica stopped (SIGTERM) while a task runs: the task ends ``cancelled`` in the shared
store, where every replica reads it, and nothing fails on a store already closed.

Two ``trimcp run tests/scale/replica_app.py --store redis://...`` replicas on one Redis;
trimcp's client at 2026-07-28 (an anonymous task: readable from any connection).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import trio

from tests.scale.peers import RedisServer, Replica, stop
from trimcp import connect_http

WAIT = 40.0


@pytest.fixture
def marks(tmp_path: Path) -> Path:
    return tmp_path


@pytest.fixture
def replicas(redis_server: RedisServer, marks: Path) -> Iterator[list[Replica]]:
    started: list[Replica] = []
    try:
        for _ in range(2):
            started.append(Replica(redis_server.url, env={"SCALE_MARKS": str(marks)}))
        yield started
    finally:
        for replica in started:
            replica.stop()


async def test_a_task_running_at_sigterm_ends_cancelled_for_every_replica(
    replicas: list[Replica], marks: Path
) -> None:
    runner, other = replicas
    with trio.fail_after(WAIT):
        async with connect_http(runner.url, mode="auto") as client:
            assert client.protocol_version == "2026-07-28"
            task = await client.call_tool_as_task("job", {"tag": "term", "seconds": 600})
            mark = marks / "term.pid"
            for _ in range(1000):  # another process writes it: poll, bounded
                if mark.exists():
                    break
                await trio.sleep(0.02)
            assert (await task.refresh()).status == "working"
        log = runner.log
        await trio.to_thread.run_sync(stop, runner.process)  # SIGTERM, then wait
        output = log.read_text(errors="replace")
        async with connect_http(other.url, mode="auto") as reader:
            handle = await reader.get_task(task.task_id)
    status = handle.status
    assert status.status == "cancelled", f"{status!r}\n{output[-3000:]}"
    assert "closed" not in output, output[-3000:]
