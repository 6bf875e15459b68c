"""Who owns a task when no token is verified: an ``authenticate`` hook's user, or nobody.

Over Streamable HTTP on a loopback socket, as in ``test_task_owners_jwt.py``:
- with an ``authenticate`` hook returning a plain user id, each user owns their own tasks
  (before, every hook user shared one owner: Bob listed and read Alice's result);
- with no authorization at all, a 2025-11-25 task belongs to the session that created
  it: another session neither lists it nor reads it by id (before, ``tasks/list`` handed
  every client's task ids to anyone, and the id was all it took to read the result).
The real clock runs; every wait is bounded by ``fail_after``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Hashable
from contextlib import asynccontextmanager
from typing import Any

import pytest
import trio

import trimcp
from tests.tasks.helpers import make_app
from trimcp.client import connect_http
from trimcp.transports.http_server import HttpServerConfig, serve_http

BOUND = 30.0


async def _user_from_header(scope: dict[str, Any]) -> Hashable | None:
    """The bearer value is the user id (as an API-key hook would return it)."""
    for name, value in scope["headers"]:
        if name.lower() == b"authorization":
            return str(value.decode().removeprefix("Bearer "))
    return None


@asynccontextmanager
async def server(config: HttpServerConfig | None = None) -> AsyncIterator[str]:
    async with trio.open_nursery() as nursery:
        port: int = await nursery.start(
            lambda task_status: serve_http(
                make_app(), port=0, config=config, task_status=task_status
            )
        )
        yield f"http://127.0.0.1:{port}/mcp"
        nursery.cancel_scope.cancel()


async def _refused(client: trimcp.Client, method: str, task_id: str) -> None:
    with pytest.raises(trimcp.McpError) as unknown:
        await client.session.send_request(method, {"taskId": task_id})
    assert unknown.value.code == -32602


async def test_hook_users_each_own_their_tasks() -> None:
    with trio.fail_after(BOUND):
        async with server(HttpServerConfig(authenticate=_user_from_header)) as url:

            def as_user(name: str) -> Any:
                return connect_http(url, headers={"Authorization": f"Bearer {name}"}, mode="legacy")

            async with as_user("alice") as alice:
                handle = await alice.call_tool_as_task("sleep", {"seconds": 0})
                assert (await handle.result()).content[0].text == "slept 0"
            async with as_user("bob") as bob:
                assert (await bob.list_tasks()).tasks == []
                for method in ("tasks/get", "tasks/result", "tasks/cancel"):
                    await _refused(bob, method, handle.task_id)
            async with as_user("alice") as alice_again:  # a new session, the same user
                listed = (await alice_again.list_tasks()).tasks
                assert [task.task_id for task in listed] == [handle.task_id]


async def test_without_authorization_a_task_belongs_to_its_session() -> None:
    with trio.fail_after(BOUND):
        async with (
            server() as url,
            connect_http(url, mode="legacy") as first,
            connect_http(url, mode="legacy") as second,
        ):
            handle = await first.call_tool_as_task("sleep", {"seconds": 3600})
            assert (await second.list_tasks()).tasks == []
            for method in ("tasks/get", "tasks/result", "tasks/cancel"):
                await _refused(second, method, handle.task_id)
            listed = (await first.list_tasks()).tasks
            assert [task.task_id for task in listed] == [handle.task_id]
            assert (await first.get_task(handle.task_id)).status.status == "working"
            assert (await (await first.get_task(handle.task_id)).cancel()).status == ("cancelled")
