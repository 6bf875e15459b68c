"""Tasks belong to the principal whose bearer token created them (real signed JWTs).

Two users, authenticated by ``JwtVerifier`` over Streamable HTTP on a loopback socket, in a
2025-11-25 session and in 2026-07-28: Bob cannot see, fetch, cancel or list Alice's task (it
looks unknown), and Alice can, from a new connection with a fresh token. The real clock
runs; every wait is bounded by ``fail_after``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager

import pytest
import trio

import trimcp
from tests.auth.tokens import ISSUER, RESOURCE, KeySet, SigningKey
from tests.tasks.helpers import make_app
from trimcp.auth import JwtVerifier, ProtectedResource
from trimcp.client import connect_http
from trimcp.transports.http_server import HttpServerConfig, serve_http

BOUND = 30.0
KEY = SigningKey("owners")


@asynccontextmanager
async def protected_server() -> AsyncIterator[str]:
    verifier = JwtVerifier(
        issuer=ISSUER, jwks_url="https://as.example.com/jwks", fetch=KeySet(KEY).fetch
    )
    resource = ProtectedResource(
        resource=RESOURCE, authorization_servers=[ISSUER], verifier=verifier
    )
    app = make_app()
    async with trio.open_nursery() as nursery:
        port: int = await nursery.start(
            lambda task_status: serve_http(
                app, port=0, config=HttpServerConfig(auth=resource), task_status=task_status
            )
        )
        yield f"http://127.0.0.1:{port}/mcp"
        nursery.cancel_scope.cancel()


def as_user(url: str, subject: str, mode: str) -> AbstractAsyncContextManager[trimcp.Client]:
    token = KEY.mint(sub=subject)
    return connect_http(url, headers={"Authorization": f"Bearer {token}"}, mode=mode)


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
async def test_another_users_task_looks_unknown(mode: str) -> None:
    with trio.fail_after(BOUND):
        async with protected_server() as url:
            async with as_user(url, "alice", mode) as alice:
                handle = await alice.call_tool_as_task("sleep", {"seconds": 3600})
                task_id = handle.task_id
            async with as_user(url, "bob", mode) as bob:
                with pytest.raises(trimcp.McpError) as unknown:
                    await bob.get_task(task_id)
                assert unknown.value.code == -32602
                with pytest.raises(trimcp.McpError) as refused:
                    await bob.session.send_request(
                        "tasks/cancel", {"taskId": task_id, **_meta(bob, mode)}
                    )
                assert refused.value.code == -32602
                if mode == "legacy":  # tasks/list exists in 2025-11-25 only
                    assert (await bob.list_tasks()).tasks == []
            # Alice, from a new connection with a new token, still owns it.
            async with as_user(url, "alice", mode) as alice_again:
                again = await alice_again.get_task(task_id)
                assert again.status.status == "working"
                if mode == "legacy":
                    listed = (await alice_again.list_tasks()).tasks
                    assert [t.task_id for t in listed] == [task_id]
                assert (await again.cancel()).status == "cancelled"


def _meta(client: trimcp.Client, mode: str) -> dict[str, object]:
    if mode == "legacy":
        return {}
    return {
        "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {
                "extensions": {"io.modelcontextprotocol/tasks": {}}
            },
            "io.modelcontextprotocol/clientInfo": {"name": "bob", "version": "1"},
        }
    }
