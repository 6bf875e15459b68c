"""A server whose `hold` tool runs as a task and waits until cancelled, recording what its
handlers did: shared by the tests of following, cancelling and late task answers."""

from __future__ import annotations

from typing import Any

import trio

import trimcp
from trimcp.client import Client
from trimcp.server.tasks import TaskContext


class HoldingTools:
    """``self.app`` with the tool ``hold`` (``task_support="optional"``): it records its task
    id in ``task_ids``, waits forever, appends ``"cancelled"`` to ``how`` when cancelled and
    sets ``ended`` when it ends. Subclasses add their own tools to ``self.app``."""

    def __init__(self, name: str, **server_kwargs: Any) -> None:
        self.app = trimcp.Server(name, **server_kwargs)
        self.ended = trio.Event()
        self.how: list[str] = []
        self.task_ids: list[str] = []

        @self.app.tool(task_support="optional")
        async def hold(ctx: trimcp.Context) -> str:
            assert isinstance(ctx, TaskContext)
            self.task_ids.append(ctx.task_id)
            try:
                await trio.sleep_forever()
            except trio.Cancelled:
                self.how.append("cancelled")
                raise
            finally:
                self.ended.set()
            return "unreachable"


async def task_status(client: Client, task_id: str) -> str:
    """The task's status as the server reports it now."""
    return (await (await client.get_task(task_id)).refresh()).status
