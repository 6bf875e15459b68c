"""A 2025-11-25 task waiting for input, created on replica A and followed from replica B:
the ``tasks/result`` that B takes forwards the task's elicitation to B's client and the
answer goes back to A, where the task runs (one real redis-server, two replicas in this
process, each with its own server and store client; JWT principals). Before, B only
polled the store, the question never reached the client and the task never ended.

Real clock over loopback; every wait is bounded by ``fail_after``.
"""

from __future__ import annotations

from typing import Any

import trio

from tests.scale.peers import RedisServer
from tests.scale.test_principals import BOUND, bearer, two_replicas
from tests.tasks.helpers import answer_elicitation
from trimcp.client import connect_http


async def test_tasks_result_on_the_other_replica_forwards_the_tasks_question(
    redis_server: RedisServer,
) -> None:
    asked: dict[str, list[Any]] = {"a": [], "b": []}

    def elicitation(replica: str) -> Any:
        async def answer(ctx: Any, params: Any) -> Any:
            asked[replica].append(params.message)
            return await answer_elicitation(ctx, params)

        return answer

    def as_alice(url: str, **kwargs: Any) -> Any:
        token = bearer("jwt", "alice")
        return connect_http(
            url, headers={"Authorization": f"Bearer {token}"}, mode="legacy", **kwargs
        )

    with trio.fail_after(BOUND):
        async with two_replicas(redis_server, "jwt") as (replica_a, replica_b):
            async with as_alice(replica_a.url, elicitation_handler=elicitation("a")) as on_a:
                task_id = (await on_a.call_tool_as_task("ask_name")).task_id
            assert replica_a.app.tasks.live_count() == 1  # A runs it
            async with as_alice(replica_b.url, elicitation_handler=elicitation("b")) as on_b:
                handle = await on_b.get_task(task_id)
                result = await handle.result()
            assert result.content[0].text == "hello Ada"
            assert asked == {"a": [], "b": ["Your name?"]}
            assert replica_b.app.tasks.live_count() == 0  # B never ran it
