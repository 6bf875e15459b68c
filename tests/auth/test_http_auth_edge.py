"""The HTTP edge of a protected server, for the checks no other test pinned: one
``Authorization`` header, a well-formed token before any verifier sees it, no token
from the query string, per-target scopes on ``resources/subscribe``, on exact resource
URIs and on 2026-07-28 requests, legacy sessions bound to their principal, and the
verifier's latest answer for a token being the one that counts.

Driven through the ASGI app under the autojump clock; tokens are JWTs from
``tests/auth/tokens`` or come from a table (a verify function).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest
import trio

from tests.auth.test_server_jwt import (
    KEY,
    Calls,
    bearer,
    challenge,
    make_server,
    protected,
)
from tests.auth.tokens import ISSUER, RESOURCE
from tests.http_server.helpers import AsgiClient, init_request, running_app, tool_call
from tests.http_server.test_modern_http import answer_of
from tests.http_server.test_modern_http import post as post_modern
from trimcp import AuthInfo
from trimcp.auth import ProtectedResource
from trimcp.transports.http_server import HttpServerConfig


class Table:
    """A verify function answering from a table the test may change; records each call."""

    def __init__(self) -> None:
        self.seen: list[str] = []
        self.answers: dict[str, AuthInfo] = {}

    async def __call__(self, token: str) -> AuthInfo | None:
        self.seen.append(token)
        return self.answers.get(token)


def principal(subject: str, scopes: str = "mcp") -> AuthInfo:
    return AuthInfo(subject=subject, scopes=scopes, audience=[RESOURCE])


@asynccontextmanager
async def with_table(**options: Any) -> AsyncIterator[tuple[AsgiClient, Calls, Table]]:
    table = Table()
    calls = Calls()
    resource = ProtectedResource(
        resource=RESOURCE, authorization_servers=[ISSUER], verifier=table, **options
    )
    async with running_app(HttpServerConfig(auth=resource), make_server(calls)) as (_, client):
        yield client, calls, table


# --- the Authorization header -------------------------------------------------------------


async def test_a_repeated_authorization_header_is_400(autojump_clock: trio.abc.Clock) -> None:
    # Two credentials: which one a proxy checked and which one the server would use could
    # differ, so neither is used.
    async with with_table() as (client, calls, table):
        table.answers = {"good": principal("alice"), "other": principal("bob")}
        for pair in (["good", "good"], ["good", "other"], ["nope", "good"]):
            headers = [h for token in pair for h in bearer(token)]
            reply = await client.post(tool_call(1, "whoami"), extra=headers)
            assert reply.status == 400, pair
            assert reply.json()["error"]["message"] == "Repeated Authorization header"
        assert table.seen == []
        assert calls.seen == []


@pytest.mark.parametrize("token", ['a"b', "a b", "a,b=", "=abc", "tök", "a\\b"])
async def test_a_malformed_token_never_reaches_the_verifier(
    autojump_clock: trio.abc.Clock, token: str
) -> None:
    async with with_table() as (client, calls, table):
        table.answers[token] = principal("alice")  # a verifier that would take it
        headers = [("authorization", f"Bearer {token}".encode().decode("latin-1"))]
        reply = await client.post(tool_call(1, "whoami"), extra=headers)
        assert reply.status == 401
        params = challenge(reply)
        assert (params["error"], params["error_description"]) == (
            "invalid_token",
            "the token is malformed",
        )
        assert table.seen == []
        assert calls.seen == []


async def test_a_token_in_the_query_string_is_not_read(autojump_clock: trio.abc.Clock) -> None:
    # Only the header carries a token (the metadata says bearer_methods_supported:
    # ["header"]); a URL's token would end up in logs and Referer headers.
    async with protected() as (client, calls, _):
        token = KEY.mint()
        for query in (f"access_token={token}", f"token={token}"):
            reply = await client.post(tool_call(1, "whoami"), query=query.encode())
            assert reply.status == 401
            assert "error" not in challenge(reply)  # as if no token was sent at all
        assert calls.seen == []


@pytest.mark.parametrize("kid", ['x", error="insufficient_scope', "k\u00f6", "a\\b"])
async def test_a_refusal_cannot_inject_challenge_parameters(
    autojump_clock: trio.abc.Clock, kid: str
) -> None:
    # The reason names the token's kid, which the caller chose: it is quoted so that it
    # stays inside error_description (no quote, backslash or non-ASCII gets through).
    async with protected() as (client, calls, _):
        reply = await client.post(
            tool_call(1, "whoami"), extra=bearer(KEY.mint(headers={"kid": kid}))
        )
        assert reply.status == 401
        params = challenge(reply)
        assert params["error"] == "invalid_token"
        assert set(params) == {"error", "error_description", "scope", "resource_metadata"}
        description = params["error_description"]
        assert description.startswith("no signing key with kid ")
        assert not set(description) & {'"', "\\", "\u00f6"}
        assert calls.seen == []


# --- per-target scopes ---------------------------------------------------------------------


async def test_resources_subscribe_needs_the_resources_scope(
    autojump_clock: trio.abc.Clock,
) -> None:
    async with protected() as (client, _calls, _):
        token = KEY.mint()
        session_id = await client.initialize(extra=bearer(token))
        subscribe = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "resources/subscribe",
            "params": {"uri": "files://private/keys"},
        }
        reply = await client.post(subscribe, session_id=session_id, extra=bearer(token))
        assert reply.status == 403
        params = challenge(reply)
        assert params["error"] == "insufficient_scope"
        assert "files:private" in params["scope"].split()
        assert params["error_description"] == (
            "the resource 'files://private/keys' needs scope files:private"
        )


async def test_an_exact_resource_uri_has_its_own_scopes(autojump_clock: trio.abc.Clock) -> None:
    # An exact URI wins over a prefix that also covers it.
    scopes = {"files://private/keys": "keys:read", "files://private/*": "files:private"}
    async with with_table(resource_scopes=scopes) as (client, calls, table):
        table.answers = {
            "prefix-only": principal("alice", "files:private"),
            "exact": principal("alice", "keys:read"),
        }
        session_id = await client.initialize(extra=bearer("exact"))
        read = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "resources/read",
            "params": {"uri": "files://private/keys"},
        }
        reply = await client.post(read, session_id=session_id, extra=bearer("prefix-only"))
        assert reply.status == 403
        assert challenge(reply)["error_description"] == (
            "the resource 'files://private/keys' needs scope keys:read"
        )
        assert calls.seen == []
        reply = await client.post(read, session_id=session_id, extra=bearer("exact"))
        assert reply.status == 200
        assert calls.seen == ["private read"]


@pytest.mark.parametrize(
    ("method", "params", "scope"),
    [
        ("tools/call", {"name": "delete_file", "arguments": {"path": "/x"}}, "files:write"),
        ("prompts/get", {"name": "secret_prompt"}, "prompts:secret"),
        ("resources/read", {"uri": "files://private/keys"}, "files:private"),
    ],
)
async def test_2026_requests_need_their_targets_scopes(
    autojump_clock: trio.abc.Clock, method: str, params: dict[str, Any], scope: str
) -> None:
    async with protected() as (client, calls, _):
        reply = await post_modern(client, method, params, extra=bearer(KEY.mint()))
        assert reply.status == 403
        challenged = challenge(reply)
        assert challenged["error"] == "insufficient_scope"
        assert scope in challenged["scope"].split()
        assert calls.seen == []
        stronger = KEY.mint(scope=f"mcp {scope}")
        reply = await post_modern(client, method, params, extra=bearer(stronger))
        assert reply.status == 200
        assert answer_of(reply)["result"]["resultType"] == "complete"


# --- principals ----------------------------------------------------------------------------


async def test_a_legacy_session_is_bound_to_its_principal(autojump_clock: trio.abc.Clock) -> None:
    async with protected() as (client, calls, _):
        alice = KEY.mint(sub="alice")
        sse = client.start("GET", "/sse", headers=[("accept", "text/event-stream"), *bearer(alice)])
        endpoint = await sse.next_event()
        query = endpoint.data.partition("?")[2].encode()

        async def post(message: object, token: str) -> Any:
            return await client.request(
                "POST",
                "/messages",
                headers=[("content-type", "application/json"), *bearer(token)],
                body=message,
                query=query,
            )

        assert (await post(init_request("2024-11-05"), alice)).status == 202
        await sse.next_message()
        assert (
            await post({"jsonrpc": "2.0", "method": "notifications/initialized"}, alice)
        ).status == 202
        bob = KEY.mint(sub="bob")
        reply = await post(tool_call(1, "whoami"), bob)
        assert reply.status == 404
        assert reply.read_requests == 0
        assert calls.seen == []
        assert (await post(tool_call(2, "whoami"), alice)).status == 202
        answer = await sse.next_message()
        assert json.loads(answer["result"]["content"][0]["text"])["sub"] == "alice"
        sse.disconnect()


async def test_the_verifiers_latest_answer_counts(autojump_clock: trio.abc.Clock) -> None:
    # The server remembers what it made of a token's principal, but only for as long as
    # the verifier gives the same answer: a scope withdrawn since is refused at once.
    async with with_table(required_scopes=["mcp"]) as (client, calls, table):
        table.answers["t"] = principal("alice", "mcp")
        session_id = await client.initialize(extra=bearer("t"))
        assert "result" in await client.call(session_id, 1, "whoami", extra=bearer("t"))
        table.answers["t"] = principal("alice", "other")
        reply = await client.post(tool_call(2, "whoami"), session_id=session_id, extra=bearer("t"))
        assert reply.status == 403
        assert challenge(reply)["error"] == "insufficient_scope"
        assert len(calls.seen) == 1
