"""The documented ``verifier=fn`` path (docs/authorization.md): your ``async def fn(token)
-> AuthInfo | None``, given as is or wrapped in :class:`CallableVerifier`.

End to end over real HTTP (a loopback socket, the real clock, every wait bounded): what
``fn`` returns is ``ctx.auth``; ``None``, an :class:`InvalidToken`, an ``AuthInfo`` past
its expiry or for another audience are 401s naming why. Then, through the ASGI app under
the autojump clock: a ``fn`` that hangs is cut off at ``timeout``, and an oversized token
never reaches ``fn``.

Only ``async def`` functions are supported (the docs say so); a plain ``def`` fails at the
first request, not at start-up.
"""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import pytest
import trio

from tests.auth.test_server_jwt import Calls, bearer, challenge, make_server
from tests.auth.tokens import RESOURCE
from tests.http_server.helpers import running_app, tool_call
from trimcp import AuthInfo, Context, Server
from trimcp.auth import CallableVerifier, InvalidToken, ProtectedResource
from trimcp.auth.verifiers import VerifyFunction
from trimcp.client import connect_http
from trimcp.errors import McpError
from trimcp.transports.http_server import HttpServerConfig, serve_http

BOUND = 30.0
AS = "https://accounts.example.com"


def whoami_server() -> Server:
    app = Server("protected")

    @app.tool()
    async def whoami(ctx: Context) -> str:
        auth = ctx.auth
        assert auth is not None
        return json.dumps(
            {
                "sub": auth.subject,
                "client": auth.client_id,
                "scopes": sorted(auth.scopes),
                "exp": auth.expires_at,
                "tenant": auth.claims.get("tenant"),
            }
        )

    return app


class Tokens:
    """A verify function over a table of tokens; records every token it is asked about."""

    def __init__(self, resource: str) -> None:
        self.seen: list[str] = []
        self.expires_at = time.time() + 600
        self.table: dict[str, AuthInfo] = {
            "alice": AuthInfo(
                subject="alice",
                client_id="app-1",
                scopes=["mcp", "extra"],
                audience=[resource],
                expires_at=self.expires_at,
                claims={"tenant": "t1"},
            ),
            "expired": AuthInfo(
                subject="alice", scopes=["mcp"], audience=[resource], expires_at=time.time() - 1
            ),
            "elsewhere": AuthInfo(
                subject="alice", scopes=["mcp"], audience=["http://127.0.0.1:1/mcp"]
            ),
        }

    async def __call__(self, token: str) -> AuthInfo | None:
        self.seen.append(token)
        if token == "revoked":
            raise InvalidToken("the token was revoked at 12:00")
        return self.table.get(token)


@asynccontextmanager
async def served(port: int, verifier: CallableVerifier | VerifyFunction) -> AsyncIterator[str]:
    resource = f"http://127.0.0.1:{port}/mcp"
    protected = ProtectedResource(
        resource=resource, authorization_servers=[AS], verifier=verifier, required_scopes=["mcp"]
    )
    with trio.fail_after(BOUND):
        async with trio.open_nursery() as nursery:
            await nursery.start(
                lambda task_status: serve_http(
                    whoami_server(),
                    port=port,
                    config=HttpServerConfig(auth=protected),
                    task_status=task_status,
                )
            )
            yield resource
            nursery.cancel_scope.cancel()


async def whoami(url: str, token: str) -> Any:
    async with connect_http(url, headers={"authorization": f"Bearer {token}"}) as client:
        result = await client.call_tool("whoami", {})
        return json.loads(result.content[0].text)  # type: ignore[union-attr]


WRAPS: dict[str, Callable[[Tokens], CallableVerifier | VerifyFunction]] = {
    "verifier=fn": lambda fn: fn,
    "CallableVerifier(fn)": lambda fn: CallableVerifier(fn),
}


@pytest.mark.parametrize("wrap", list(WRAPS))
async def test_a_verify_function_over_http(free_port: int, wrap: str) -> None:
    tokens = Tokens(f"http://127.0.0.1:{free_port}/mcp")
    async with served(free_port, WRAPS[wrap](tokens)) as url:
        seen = await whoami(url, "alice")
        assert seen == {
            "sub": "alice",
            "client": "app-1",
            "scopes": ["extra", "mcp"],
            "exp": tokens.expires_at,
            "tenant": "t1",
        }
        refusals = {
            "unknown": "the token is not valid",  # fn returned None
            "revoked": "the token was revoked at 12:00",  # fn raised InvalidToken
            "expired": "the token has expired",
            "elsewhere": "the token was issued for another audience",
        }
        for token, reason in refusals.items():
            with pytest.raises(McpError, match=reason):
                await whoami(url, token)
        assert set(refusals) <= set(tokens.seen)


@asynccontextmanager
async def protected_app(
    verifier: CallableVerifier,
) -> AsyncIterator[tuple[Any, Calls]]:
    calls = Calls()
    resource = ProtectedResource(resource=RESOURCE, authorization_servers=[AS], verifier=verifier)
    async with running_app(HttpServerConfig(auth=resource), make_server(calls)) as (_, client):
        yield client, calls


async def test_a_hanging_function_is_cut_off_at_timeout(autojump_clock: trio.abc.Clock) -> None:
    async def hangs(token: str) -> AuthInfo | None:
        await trio.sleep_forever()
        raise AssertionError("unreachable")

    async with protected_app(CallableVerifier(hangs, timeout=2.0)) as (client, calls):
        start = trio.current_time()
        reply = await client.post(tool_call(1, "whoami"), extra=bearer("slow"))
        assert reply.status == 401
        assert challenge(reply)["error_description"] == "the token could not be checked within 2 s"
        assert trio.current_time() - start <= 2.0 + 1e-6
        assert calls.seen == []


async def test_an_oversized_token_never_reaches_the_function(
    autojump_clock: trio.abc.Clock,
) -> None:
    tokens = Tokens(RESOURCE)
    async with protected_app(CallableVerifier(tokens, max_token_bytes=64)) as (client, calls):
        reply = await client.post(tool_call(1, "whoami"), extra=bearer("a" * 65))
        assert reply.status == 401
        assert challenge(reply)["error_description"] == "the token is longer than 64 bytes"
        assert tokens.seen == []
        assert calls.seen == []
