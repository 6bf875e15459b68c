"""Who owns what, across replicas: sessions and tasks follow their principal, not a replica.

Two replicas (``serve_http(store=RedisStore(...))`` in this process, each with its own
server, verifier and store client, as two processes would have) share one real
redis-server. The callers are authorized by real signed JWTs (``JwtVerifier``), or by an
``authenticate`` hook that returns plain user ids, or are anonymous:

- a 2025-11-25 session started on replica A is served on replica B to the same principal,
  also with a refreshed, stepped-up token (another token string, more scopes, a later
  expiry): the shared session record names the principal's key, not the token (before it
  held ``repr(AuthInfo)``, so B answered 404);
- another principal gets 404 for that session id on either replica (POST, GET, DELETE),
  whether or not the replica holds the session yet, and leaves it usable;
- a task created on A (in the Redis task store) is seen, listed, read and cancelled by its
  principal on B, from a new connection with a new token; to anyone else on B it looks
  unknown (``-32602``) and ``tasks/list`` is empty, in 2025-11-25 and 2026-07-28;
- without authorization, a 2025 task belongs to its session, keyed by the HTTP session id
  (the same on every replica): the session continued on B sees it, another does not.

Real clock over loopback; every wait is bounded by ``fail_after``.
"""

from __future__ import annotations

import json
import secrets
import time
from collections.abc import AsyncIterator, Callable, Hashable, Sequence
from contextlib import asynccontextmanager
from functools import partial
from typing import Any, Literal, NamedTuple

import pytest
import trio
import trio.testing

import trimcp
from tests.auth.tokens import ISSUER, RESOURCE, KeySet, SigningKey
from tests.http_server.test_real_socket import HEADERS, RawHttp, sse_messages
from tests.scale.peers import RedisServer
from tests.tasks.helpers import cancelled, make_app
from trimcp.auth import JwtVerifier, ProtectedResource
from trimcp.client import connect_http
from trimcp.stores import RedisStore
from trimcp.transports.http_server import HttpServerConfig, serve_http

BOUND = 40.0
KEY = SigningKey("principals")
V2025 = "2025-11-25"
V2026 = "2026-07-28"

Auth = Literal["jwt", "hook"]


async def _user_from_header(scope: dict[str, Any]) -> Hashable | None:
    """An ``authenticate`` hook: the bearer value is the user id (as an API key maps to one)."""
    for name, value in scope["headers"]:
        if name.lower() == b"authorization":
            return str(value.decode().removeprefix("Bearer "))
    return None


def _config(auth: Auth | None) -> HttpServerConfig:
    """One replica's settings; each gets its own verifier (and token cache)."""
    if auth is None:
        return HttpServerConfig()
    if auth == "hook":
        return HttpServerConfig(authenticate=_user_from_header)
    verifier = JwtVerifier(
        issuer=ISSUER, jwks_url="https://as.example.com/jwks", fetch=KeySet(KEY).fetch
    )
    resource = ProtectedResource(
        resource=RESOURCE, authorization_servers=[ISSUER], verifier=verifier
    )
    return HttpServerConfig(auth=resource)


def bearer(auth: Auth | None, user: str, *, step_up: bool = False) -> str | None:
    """What ``user`` sends: a freshly minted JWT (``step_up``: more scopes, a later expiry,
    as a refresh after consent would give), or its user id for the hook."""
    if auth is None:
        return None
    if auth == "hook":
        return user
    if step_up:
        return KEY.mint(sub=user, scope="mcp tasks:admin", exp=int(time.time()) + 3000)
    return KEY.mint(sub=user)


class Replica(NamedTuple):
    url: str
    app: trimcp.Server


@asynccontextmanager
async def two_replicas(
    redis: RedisServer, auth: Auth | None, make: Callable[[], trimcp.Server] = make_app
) -> AsyncIterator[list[Replica]]:
    """Two replicas (A, B) on one Redis, under a prefix of this test's own, each serving
    its own server made by ``make``."""
    prefix = f"pr{secrets.token_hex(4)}:"
    stores = [RedisStore(redis.url, prefix=prefix) for _ in range(2)]
    try:
        async with trio.open_nursery() as nursery:
            replicas = []
            for store in stores:
                app = make()
                port: int = await nursery.start(
                    partial(serve_http, app, port=0, config=_config(auth), store=store)
                )
                replicas.append(Replica(f"http://127.0.0.1:{port}/mcp", app))
            yield replicas
            nursery.cancel_scope.cancel()
    finally:
        with trio.CancelScope(shield=True):
            for store in stores:
                await store.aclose()


# --- one HTTP request at a time, to the replica a test names ---------------------------------


async def http(
    url: str, method: str, body: Any = None, headers: Sequence[tuple[str, str]] = ()
) -> tuple[int, dict[str, str], Any]:
    """One request on its own connection: status, headers and the JSON-RPC answer (the
    last SSE message, or the JSON body; None when there is none)."""
    host, port = url.removeprefix("http://").split("/", 1)[0].rsplit(":", 1)
    stream = await trio.open_tcp_stream(host, int(port))
    try:
        client = RawHttp(stream, f"{host}:{port}")
        data = b"" if body is None else json.dumps(body).encode()
        status, names, raw = await client.request(method, data, [*HEADERS, *headers])
    finally:
        await stream.aclose()
    answer: Any = None
    if raw and names.get("content-type", "").startswith("application/json"):
        answer = json.loads(raw)
    elif raw and names.get("content-type", "").startswith("text/event-stream"):
        messages = sse_messages(raw)
        answer = messages[-1] if messages else None
    return status, names, answer


class LegacySession:
    """A 2025-11-25 session over raw HTTP, each request sent to the replica named."""

    def __init__(self, session_id: str) -> None:
        self.session_id = session_id
        self._ids = 1

    @classmethod
    async def start(cls, url: str, token: str | None) -> LegacySession:
        params = {
            "protocolVersion": V2025,
            "capabilities": {},
            "clientInfo": {"name": "principals", "version": "1"},
        }
        status, headers, answer = await http(
            url,
            "POST",
            {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": params},
            _authorization(token),
        )
        assert status == 200, answer
        session = cls(headers["mcp-session-id"])
        status, _, _ = await session.send(
            url, token, {"jsonrpc": "2.0", "method": "notifications/initialized"}
        )
        assert status == 202
        return session

    def headers(self, token: str | None) -> list[tuple[str, str]]:
        return [
            ("mcp-session-id", self.session_id),
            ("mcp-protocol-version", V2025),
            *_authorization(token),
        ]

    async def send(
        self, url: str, token: str | None, message: Any, method: str = "POST"
    ) -> tuple[int, dict[str, str], Any]:
        return await http(url, method, message, self.headers(token))

    async def request(
        self, url: str, token: str | None, method: str, params: dict[str, Any]
    ) -> tuple[int, Any]:
        """Send one request: the HTTP status and the JSON-RPC answer."""
        self._ids += 1
        message = {"jsonrpc": "2.0", "id": self._ids, "method": method, "params": params}
        status, _, answer = await self.send(url, token, message)
        return status, answer

    async def call(self, url: str, token: str | None, method: str, params: dict[str, Any]) -> Any:
        """A request that must succeed: its result."""
        status, answer = await self.request(url, token, method, params)
        assert status == 200, (status, answer)
        assert "result" in answer, answer
        return answer["result"]


def _authorization(token: str | None) -> list[tuple[str, str]]:
    return [] if token is None else [("authorization", f"Bearer {token}")]


def _text(result: Any) -> str:
    text: str = result["content"][0]["text"]
    return text


# --- sessions ----------------------------------------------------------------------------------


@pytest.mark.parametrize("auth", ["jwt", "hook"])
async def test_a_session_is_its_principals_on_every_replica(
    redis_server: RedisServer, auth: Auth
) -> None:
    # Fails before the one principal key (jwt): B compared repr(AuthInfo), which holds
    # the token, its scopes and expiry, so the refreshed token's request got 404.
    with trio.fail_after(BOUND):
        async with two_replicas(redis_server, auth) as (replica_a, replica_b):
            a, b = replica_a.url, replica_b.url
            session = await LegacySession.start(a, bearer(auth, "alice"))
            sleep0 = {"name": "sleep", "arguments": {"seconds": 0}}

            async def refused_to_bob(url: str) -> None:
                """Bob, with his own valid credentials, finds no such session."""
                token = bearer(auth, "bob")
                status, answer = await session.request(url, token, "tools/call", sleep0)
                assert status == 404, answer
                for method in ("GET", "DELETE"):
                    status, _, _ = await session.send(url, token, None, method)
                    assert status == 404, method

            # B does not hold the session yet: it decides on the shared record.
            await refused_to_bob(b)
            # Alice, with a refreshed, stepped-up token, on B (which takes the session
            # over) and on A (which holds it).
            refreshed = bearer(auth, "alice", step_up=True)
            assert _text(await session.call(b, refreshed, "tools/call", sleep0)) == "slept 0"
            assert _text(await session.call(a, refreshed, "tools/call", sleep0)) == "slept 0"
            # Both hold it now: each decides on its own copy.
            await refused_to_bob(b)
            await refused_to_bob(a)
            # Bob's attempts ended nothing: Alice goes on, then ends it herself.
            assert _text(await session.call(b, refreshed, "tools/call", sleep0)) == "slept 0"
            status, _, _ = await session.send(b, bearer(auth, "alice"), None, "DELETE")
            assert status in (200, 204)
            status, _ = await session.request(b, refreshed, "tools/call", sleep0)
            assert status == 404


# --- tasks -------------------------------------------------------------------------------------


def _extension_meta() -> dict[str, Any]:
    """What a raw 2026 request of a tasks-extension client carries in ``_meta``."""
    return {
        "_meta": {
            "io.modelcontextprotocol/protocolVersion": V2026,
            "io.modelcontextprotocol/clientCapabilities": {
                "extensions": {"io.modelcontextprotocol/tasks": {}}
            },
            "io.modelcontextprotocol/clientInfo": {"name": "bob", "version": "1"},
        }
    }


async def _looks_unknown(client: trimcp.Client, method: str, task_id: str, mode: str) -> None:
    params: dict[str, Any] = {"taskId": task_id}
    if mode == V2026:
        params.update(_extension_meta())
        if method == "tasks/update":
            params["inputResponses"] = {}
    with pytest.raises(trimcp.McpError) as unknown:
        await client.session.send_request(method, params)
    assert unknown.value.code == -32602, (method, unknown.value)


@pytest.mark.parametrize("mode", ["legacy", V2026])
@pytest.mark.parametrize("auth", ["jwt", "hook"])
async def test_a_task_is_its_principals_on_every_replica(
    redis_server: RedisServer, auth: Auth, mode: str
) -> None:
    methods = ("tasks/get", "tasks/result", "tasks/cancel")
    if mode == V2026:  # the extension has no tasks/result; tasks/update answers a task
        methods = ("tasks/get", "tasks/update", "tasks/cancel")

    def as_user(url: str, user: str, *, step_up: bool = False) -> Any:
        token = bearer(auth, user, step_up=step_up)
        return connect_http(url, headers={"Authorization": f"Bearer {token}"}, mode=mode)

    with trio.fail_after(BOUND):
        async with two_replicas(redis_server, auth) as (replica_a, replica_b):
            a, b = replica_a.url, replica_b.url
            async with as_user(a, "alice") as alice:
                quick = await alice.call_tool_as_task("sleep", {"seconds": 0})
                assert (await quick.result()).content[0].text == "slept 0"
                long = await alice.call_tool_as_task("sleep", {"seconds": 3600})
            async with as_user(b, "bob") as bob:
                for task_id in (quick.task_id, long.task_id):
                    for method in methods:
                        await _looks_unknown(bob, method, task_id, mode)
                if mode == "legacy":
                    assert (await bob.list_tasks()).tasks == []
            # A cancel heard on the bus stops work only when the store records the cancel
            # (which only an owner's tasks/cancel does): the message alone stops nothing.
            seen = cancelled.get("sleep", 0)
            await replica_a.app.tasks.stop_if_cancelled(long.task_id)
            await trio.testing.wait_all_tasks_blocked()  # a cancelled sleep has woken
            assert cancelled.get("sleep", 0) == seen
            # Alice on B, from a new connection with a refreshed token: her tasks.
            async with as_user(b, "alice", step_up=True) as alice_on_b:
                if mode == "legacy":
                    listed = [t.task_id for t in (await alice_on_b.list_tasks()).tasks]
                    assert sorted(listed) == sorted([quick.task_id, long.task_id])
                done = await alice_on_b.get_task(quick.task_id)
                assert (await done.result()).content[0].text == "slept 0"
                running = await alice_on_b.get_task(long.task_id)
                assert running.status.status == "working"
                assert (await running.cancel()).status == "cancelled"
            # Bob's refusals left it as it was; Alice's cancel on B stops the work on A
            # (which runs it), and the task stays cancelled.
            await replica_a.app.tasks.wait_idle()
            assert cancelled.get("sleep", 0) == seen + 1
            async with as_user(a, "alice") as alice_again:
                again = await alice_again.get_task(long.task_id)
                assert again.status.status == "cancelled"


async def test_an_anonymous_task_belongs_to_its_session_on_every_replica(
    redis_server: RedisServer,
) -> None:
    with trio.fail_after(BOUND):
        async with two_replicas(redis_server, None) as (replica_a, replica_b):
            a, b = replica_a.url, replica_b.url
            mine = await LegacySession.start(a, None)
            created = await mine.call(
                a,
                None,
                "tools/call",
                {"name": "sleep", "arguments": {"seconds": 3600}, "task": {"ttl": 60_000}},
            )
            task_id = created["task"]["taskId"]
            # Another session (started on B): the task is not its.
            other = await LegacySession.start(b, None)
            assert (await other.call(b, None, "tasks/list", {}))["tasks"] == []
            for method in ("tasks/get", "tasks/result", "tasks/cancel"):
                status, answer = await other.request(b, None, method, {"taskId": task_id})
                assert status == 200
                assert answer["error"]["code"] == -32602, (method, answer)
            # The same session, continued on B: its task.
            listed = (await mine.call(b, None, "tasks/list", {}))["tasks"]
            assert [task["taskId"] for task in listed] == [task_id]
            got = await mine.call(b, None, "tasks/get", {"taskId": task_id})
            assert got["status"] == "working"
            cancelled = await mine.call(b, None, "tasks/cancel", {"taskId": task_id})
            assert cancelled["status"] == "cancelled"
            await replica_a.app.tasks.wait_idle()  # the work on A stopped
            got = await mine.call(a, None, "tasks/get", {"taskId": task_id})
            assert got["status"] == "cancelled"
