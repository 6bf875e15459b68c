"""Per-request identity: ``ctx.auth`` is the principal of the request's own HTTP request.

On a real loopback socket under both engines (the lean engine serves every request of a
keep-alive connection in one task, so state left in that task would leak): one caller's
principal never shows up in another's request, in either era. Real clock; every wait is
bounded by ``fail_after`` and none asserts a time.
"""

from __future__ import annotations

import json
from collections.abc import Hashable
from typing import Any

import pytest
import trio

from tests.http_server.test_modern_http import headers_for, meta
from tests.http_server.test_real_socket import HEADERS, RawHttp, sse_messages
from trimcp import Context, Server
from trimcp.auth import AuthInfo, principal_key
from trimcp.transports.http_server import HttpServerConfig, serve_http
from trimcp.transports.http_server.serve import Engine

BOUND = 30.0


def whoami_server() -> Server:
    app = Server("identity", "1.0")

    @app.tool()
    def whoami(ctx: Context) -> str:
        auth: Any = ctx.auth
        return "anonymous" if auth is None else str(auth)

    return app


async def _by_header(scope: dict[str, Any]) -> Hashable | None:
    """An ``authenticate`` hook: the bearer value is the user id; no header, anonymous."""
    for name, value in scope["headers"]:
        if name.lower() == b"authorization":
            return str(value.decode().removeprefix("Bearer "))
    return None


def _answer(status: int, headers: dict[str, str], body: bytes) -> Any:
    assert status == 200, body
    if headers["content-type"].startswith("application/json"):
        return json.loads(body)
    return sse_messages(body)[-1]


async def _call_2026(client: RawHttp, bearer: str | None, request_id: int) -> str:
    params = {"name": "whoami", "arguments": {}, "_meta": meta()}
    body = {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}
    headers = headers_for("tools/call", params)
    if bearer is not None:
        headers.append(("authorization", f"Bearer {bearer}"))
    answer = _answer(*await client.request("POST", json.dumps(body).encode(), headers))
    text: str = answer["result"]["content"][0]["text"]
    return text


@pytest.mark.parametrize("engine", ["lean", "hypercorn"])
async def test_ctx_auth_does_not_leak_across_a_keep_alive_connection(engine: Engine) -> None:
    # Fails before the fix on the lean engine: the anonymous requests saw "alice".
    with trio.fail_after(BOUND):
        async with trio.open_nursery() as nursery:
            port = await nursery.start(
                lambda task_status: serve_http(
                    whoami_server(),
                    port=0,
                    engine=engine,
                    config=HttpServerConfig(authenticate=_by_header),
                    task_status=task_status,
                )
            )
            stream = await trio.open_tcp_stream("127.0.0.1", port)
            client = RawHttp(stream, f"127.0.0.1:{port}")
            assert await _call_2026(client, "alice", 1) == "alice"
            assert await _call_2026(client, None, 2) == "anonymous"
            assert await _call_2026(client, "bob", 3) == "bob"
            assert await _call_2026(client, None, 4) == "anonymous"
            # A 2025 session on the same connection: its requests carry their own caller.
            status, headers, _ = await client.request(
                "POST",
                json.dumps(
                    {
                        "jsonrpc": "2.0",
                        "id": 0,
                        "method": "initialize",
                        "params": {
                            "protocolVersion": "2025-11-25",
                            "capabilities": {},
                            "clientInfo": {"name": "t", "version": "1"},
                        },
                    }
                ).encode(),
                HEADERS,
            )
            assert status == 200
            session = [("mcp-session-id", headers["mcp-session-id"])]
            session.append(("mcp-protocol-version", "2025-11-25"))
            params = {"name": "whoami", "arguments": {}}
            call = {"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": params}
            answer = _answer(
                *await client.request("POST", json.dumps(call).encode(), HEADERS + session)
            )
            assert answer["result"]["content"][0]["text"] == "anonymous"
            assert await _call_2026(client, None, 6) == "anonymous"
            await stream.aclose()
            nursery.cancel_scope.cancel()


def test_principal_key_is_one_key_per_principal() -> None:
    alice = AuthInfo(issuer="https://as", subject="alice", client_id="app", scopes=["a"])
    refreshed = AuthInfo(
        issuer="https://as", subject="alice", client_id="app", scopes=["a", "b"], token="t2"
    )
    assert principal_key(alice) == principal_key(refreshed)  # refresh or step-up keeps it
    others = [
        AuthInfo(issuer="https://as", subject="bob", client_id="app"),
        AuthInfo(issuer="https://other", subject="alice", client_id="app"),
        AuthInfo(issuer="https://as", subject="alice", client_id="other"),
        "alice",  # a hook's user id is not a token's subject
        "bob",
        ("alice",),
    ]
    keys = {principal_key(alice), *(principal_key(other) for other in others)}
    assert len(keys) == 1 + len(others)
    assert principal_key(None) is None
    assert principal_key("alice") == principal_key("alice")  # stable for hook values
    # A value with no stable identity is keyed by itself: never shared with another.
    first, second = object(), object()
    assert principal_key(first) != principal_key(second)
    # Tokens that name nobody are keyed by the token.
    assert principal_key(AuthInfo(token="x")) != principal_key(AuthInfo(token="y"))

    class User:
        def __init__(self, name: str) -> None:
            self.principal_key = name

    assert principal_key(User("carol")) == principal_key(User("carol"))
    assert principal_key(User("carol")) != principal_key(User("dave"))
    key = principal_key(alice)
    assert key is not None
    assert "alice" not in key  # a digest: reveals nothing


def test_auth_info_compares_who_not_what_was_granted() -> None:
    # A refreshed or stepped-up token of one principal is equal (and hashes alike) whatever
    # its scopes, expiry, audience, claims, raw token or the rules that admitted it.
    alice = AuthInfo(issuer="https://as", subject="alice", client_id="app")
    variants = [
        AuthInfo(issuer="https://as", subject="alice", client_id="app", scopes="a b"),
        AuthInfo(issuer="https://as", subject="alice", client_id="app", expires_at=5.0),
        AuthInfo(issuer="https://as", subject="alice", client_id="app", audience=["r"]),
        AuthInfo(issuer="https://as", subject="alice", client_id="app", token="t2"),
        AuthInfo(
            issuer="https://as", subject="alice", client_id="app", rules=lambda m, n: frozenset()
        ),
        AuthInfo(issuer="https://as", subject="alice", client_id="app", hide_unauthorized=True),
    ]
    for variant in variants:
        assert variant == alice, variant
        assert hash(variant) == hash(alice), variant
    assert AuthInfo(issuer="https://as", subject="alice", client_id="app", claims={"x": 1}) == alice
    assert AuthInfo(issuer="https://as", subject="bob", client_id="app") != alice


def test_auth_info_keeps_its_token_and_claims_out_of_repr() -> None:
    info = AuthInfo(
        subject="alice",
        scopes=["read"],
        claims={"secret": "c1aim"},
        token="s3cret-token",
        rules=lambda m, n: frozenset(),
        hide_unauthorized=True,
    )
    assert repr(info) == (
        "AuthInfo(subject='alice', issuer=None, client_id=None, scopes=frozenset({'read'}), "
        "expires_at=None, audience=())"
    )
    made: Any = AuthInfo
    with pytest.raises(TypeError, match="positional"):
        made("alice")  # keyword-only: no field is filled by position


def test_principal_key_of_tokens_and_of_values_that_look_like_tokens() -> None:
    # Any value with a token's identity attributes is keyed as that token's principal.
    class Verified:
        issuer = "https://as"
        subject = "alice"
        client_id = "app"

    alice = AuthInfo(issuer="https://as", subject="alice", client_id="app")
    assert principal_key(Verified()) == principal_key(alice)
    # A token naming nobody is keyed by the token: the same token, the same key...
    assert principal_key(AuthInfo(token="x")) == principal_key(AuthInfo(token="x"))
    # ...and with no token either, each value is its own principal, never a shared one.
    assert principal_key(AuthInfo()) != principal_key(AuthInfo())
    assert AuthInfo().hide_unauthorized is False
    assert AuthInfo().rules is None


def test_auth_info_scopes_and_allows() -> None:
    assert AuthInfo(scopes=None).scopes == frozenset()
    assert AuthInfo(scopes="read  write").scopes == frozenset({"read", "write"})
    assert AuthInfo(scopes=("read",)).scopes == frozenset({"read"})
    info = AuthInfo(scopes="read")
    assert info.allows("tools/call", "anything")  # no rules: the server-wide scopes sufficed

    def rules(method: str, name: str) -> frozenset[str]:
        return frozenset({"admin"}) if name == "delete" else frozenset({"read"})

    ruled = AuthInfo(scopes="read", rules=rules)
    assert ruled.allows("tools/call", "list")
    assert not ruled.allows("tools/call", "delete")
    assert ruled.has_scopes([])
    assert not ruled.has_scopes(["read", "admin"])
