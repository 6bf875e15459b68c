"""Tasks through nginx (round-robin, no stickiness): they outlive the replica that ran them.

Three ``trimcp run tests/scale/replica_app.py --store redis://...`` replicas behind nginx;
``serve_http(store=...)`` keeps their task records in Redis, so ``tasks/get`` and
``tasks/result`` reach any replica. trimcp's client, in a 2025-11-25 session and in
2026-07-28 (tasks extension), starts a task that finishes and one that runs long; the test
SIGKILLs the replica running the long one. Through the balancer, the long task then reads
as failed (its runner stopped: never silently lost, never "working" for ever) and the
finished one still reads as completed, with its result, in the same session; from a new
connection too in 2026 (an anonymous 2025 task belongs to the session that created it).
"""

from __future__ import annotations

import pytest
import trio

from tests.scale.peers import Cluster, cluster_fixture
from trimcp import Client, connect_http
from trimcp.errors import McpError
from trimcp.stores.redis_tasks import RUNNER_STOPPED
from trimcp.types import TextContent

WAIT = 40.0


cluster = cluster_fixture()


def _text(result: object) -> str:
    content = getattr(result, "content", None)
    assert isinstance(content, list)
    block = content[0]
    assert isinstance(block, TextContent)
    return block.text


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_a_task_whose_replica_died_reads_failed_through_the_balancer(
    cluster: Cluster, mode: str
) -> None:
    with trio.fail_after(WAIT):
        async with connect_http(cluster.nginx.url, mode=mode) as client:
            expected = "2026-07-28" if mode == "auto" else "2025-11-25"
            assert client.protocol_version == expected
            quick = await client.call_tool_as_task("job", {"tag": f"{mode}-quick"})
            assert _text(await quick.result()) == f"job {mode}-quick done"
            long = await client.call_tool_as_task("job", {"tag": f"{mode}-long", "seconds": 600})
            victim = await cluster.runner_of(f"{mode}-long")
            assert (await long.refresh()).status == "working"
            cluster.replicas[victim].kill()
            cluster.replicas[victim] = cluster.replicas[victim].respawn()
            # The dead replica's heartbeat lapses within seconds; until then the task
            # still reads "working" (its runner might be alive): poll, bounded above.
            for _ in range(100):
                status = await long.refresh()
                if status.status != "working":
                    break
                await trio.sleep(0.2)
            assert status.status == "failed"
            assert status.status_message == RUNNER_STOPPED
            await _read_back(client, mode, quick.task_id, long.task_id, len(cluster.replicas))
        async with connect_http(cluster.nginx.url, mode=mode) as fresh:
            if mode == "auto":  # an anonymous 2026 task: whoever holds its id
                await _read_back(fresh, mode, quick.task_id, long.task_id, len(cluster.replicas))
            else:  # an anonymous 2025 task belongs to its session: another finds nothing
                with pytest.raises(McpError) as unknown:
                    await fresh.get_task(long.task_id)
                assert unknown.value.code == -32602


async def _read_back(client: Client, mode: str, quick_id: str, long_id: str, replicas: int) -> None:
    lost = await client.get_task(long_id)
    finished = await client.get_task(quick_id)
    with pytest.raises(McpError, match="stopped"):
        await lost.result()
    assert _text(await finished.result()) == f"job {mode}-quick done"
    for _ in range(replicas):  # round-robin: each replica answers
        assert (await lost.refresh()).status == "failed"
        assert (await finished.refresh()).status == "completed"
