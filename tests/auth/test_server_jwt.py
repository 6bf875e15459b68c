"""The resource-server side: metadata, 401/403 challenges, JWT checks, scopes, ctx.auth,
sessions bound to the principal. Driven through the ASGI app under the autojump clock,
with a key set served by a fake fetch (no network)."""

from __future__ import annotations

import base64
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import attrs
import jwt
import pytest
import trio

from tests.auth.tokens import ISSUER, RESOURCE, KeySet, SigningKey
from tests.http_server.helpers import AsgiClient, init_request, running_app, tool_call
from trimcp import Context, Server
from trimcp.auth import JwtVerifier, ProtectedResource
from trimcp.transports.http_server import HttpServerConfig

KEY = SigningKey("k1")
OTHER_KEY = SigningKey("k1")  # same kid, different key: a forged signature


class Calls:
    def __init__(self) -> None:
        self.seen: list[Any] = []


def make_server(calls: Calls) -> Server:
    app = Server("protected")

    @app.tool()
    async def whoami(ctx: Context) -> str:
        auth = ctx.auth
        assert auth is not None
        calls.seen.append(auth)
        return json.dumps(
            {
                "sub": auth.subject,
                "client": auth.client_id,
                "scopes": sorted(auth.scopes),
                "exp": auth.expires_at,
                "claims": dict(auth.claims),
            }
        )

    @app.tool()
    async def delete_file(path: str, ctx: Context) -> str:
        calls.seen.append(("delete", path))
        return "deleted"

    @app.prompt()
    def secret_prompt() -> str:
        return "secret"

    @app.resource("files://public/readme")
    def readme() -> str:
        return "hello"

    @app.resource("files://private/keys")
    def private_keys() -> str:
        calls.seen.append("private read")
        return "secret"

    return app


def make_resource(keys: KeySet, **options: Any) -> ProtectedResource:
    verifier_options = options.pop("verifier_options", {})
    verifier = JwtVerifier(
        issuer=ISSUER, jwks_url="https://as.example.com/jwks", fetch=keys.fetch, **verifier_options
    )
    return ProtectedResource(
        resource=RESOURCE,
        authorization_servers=[ISSUER],
        verifier=verifier,
        required_scopes=["mcp"],
        tool_scopes={"delete_file": ["files:write"]},
        prompt_scopes={"secret_prompt": "prompts:secret"},
        resource_scopes={"files://private/*": ["files:private"]},
        **options,
    )


@asynccontextmanager
async def protected(
    keys: KeySet | None = None, **options: Any
) -> AsyncIterator[tuple[AsgiClient, Calls, ProtectedResource]]:
    calls = Calls()
    resource = make_resource(keys or KeySet(KEY), **options)
    config = HttpServerConfig(auth=resource)
    async with running_app(config, make_server(calls)) as (_, client):
        yield client, calls, resource


def bearer(token: str) -> list[tuple[str, str]]:
    return [("authorization", f"Bearer {token}")]


def challenge(reply: Any) -> dict[str, str]:
    """The parameters of a ``WWW-Authenticate: Bearer ...`` header."""
    value = reply.headers["www-authenticate"]
    assert value.startswith("Bearer "), value
    params: dict[str, str] = {}
    for part in value[len("Bearer ") :].split('", '):
        name, _, text = part.partition("=")
        params[name.strip()] = text.strip('"')
    return params


METADATA_URL = "http://127.0.0.1:8000/.well-known/oauth-protected-resource/mcp"

# --- metadata ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "path", ["/.well-known/oauth-protected-resource/mcp", "/.well-known/oauth-protected-resource"]
)
async def test_protected_resource_metadata(autojump_clock: trio.abc.Clock, path: str) -> None:
    async with protected() as (client, _, resource):
        reply = await client.request("GET", path)
        assert reply.status == 200
        assert reply.headers["access-control-allow-origin"] == "*"
        document = reply.json()
        assert document["resource"] == RESOURCE
        assert document["authorization_servers"] == [ISSUER]
        assert set(document["scopes_supported"]) == {
            "mcp",
            "files:write",
            "prompts:secret",
            "files:private",
        }
        assert resource.metadata_url == METADATA_URL
        options = await client.request("OPTIONS", path)
        assert options.status == 204


# --- 401 --------------------------------------------------------------------------------


async def test_no_token_is_401_with_resource_metadata(autojump_clock: trio.abc.Clock) -> None:
    async with protected() as (client, calls, _):
        for headers in ([], [("authorization", "Basic YTpi")], [("authorization", "Bearer")]):
            reply = await client.post(tool_call(1, "whoami"), extra=headers)
            assert reply.status == 401
            params = challenge(reply)
            assert params["resource_metadata"] == METADATA_URL
            assert params["scope"] == "mcp"
            assert "error" not in params
            assert reply.read_requests == 0  # refused before the body was read
        assert calls.seen == []


async def test_valid_token_reaches_ctx_auth(autojump_clock: trio.abc.Clock) -> None:
    async with protected() as (client, calls, _):
        token = KEY.mint(scope="mcp extra", tenant="t1")
        session_id = await client.initialize(extra=bearer(token))
        answer = await client.call(session_id, 1, "whoami", extra=bearer(token))
        seen = json.loads(answer["result"]["content"][0]["text"])
        assert seen["sub"] == "alice"
        assert seen["client"] == "client-1"
        assert seen["scopes"] == ["extra", "mcp"]
        assert seen["claims"]["tenant"] == "t1"
        assert seen["exp"] == jwt.decode(token, options={"verify_signature": False})["exp"]
        assert calls.seen[0].token == token


def _b64(value: Any) -> str:
    raw = json.dumps(value).encode()
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def _bad_tokens() -> dict[str, Any]:
    # Forge an HS256 token whose HMAC secret is the server's public key (the classic
    # algorithm-confusion attack); PyJWT refuses to sign with a PEM key, so build it by hand.
    import hashlib
    import hmac

    header = _b64({"alg": "HS256", "typ": "JWT", "kid": "k1"})
    payload = _b64(
        {"iss": ISSUER, "aud": RESOURCE, "sub": "mallory", "exp": 4102444800, "scope": "mcp"}
    )
    signature = hmac.new(KEY.public_pem, f"{header}.{payload}".encode(), hashlib.sha256)
    forged = (
        f"{header}.{payload}." + base64.urlsafe_b64encode(signature.digest()).rstrip(b"=").decode()
    )
    none_token = _b64({"alg": "none", "typ": "JWT"}) + "." + payload + "."
    return {
        "expired": (lambda: KEY.mint(exp=1_000_000, iat=999_000), "expired"),
        "not yet valid": (lambda: KEY.mint(nbf=4_102_444_800), "not valid yet"),
        "wrong audience": (lambda: KEY.mint(aud="http://127.0.0.1:9999/mcp"), "audience"),
        "wrong issuer": (lambda: KEY.mint(iss="https://evil.example.com"), "issuer"),
        "alg none": (lambda: none_token, "algorithm"),
        "HS256 with the public key": (lambda: forged, "algorithm"),
        "unknown kid": (lambda: KEY.mint(headers={"kid": "nope"}), "kid"),
        "forged signature": (lambda: OTHER_KEY.mint(), "signature"),
        "oversized": (lambda: KEY.mint(padding="x" * 9000), "longer than"),
        "no exp": (lambda: KEY.mint(exp=None), "'exp'"),
        "garbage": (lambda: "abc.def.ghi", "not a signed JWT"),
    }


@pytest.mark.parametrize("case", list(_bad_tokens()))
async def test_bad_tokens_are_401_and_nothing_runs(
    autojump_clock: trio.abc.Clock, case: str
) -> None:
    make, reason = _bad_tokens()[case]
    async with protected() as (client, calls, _):
        good = KEY.mint()
        session_id = await client.initialize(extra=bearer(good))
        reply = await client.post(
            tool_call(1, "whoami"), session_id=session_id, extra=bearer(make())
        )
        assert reply.status == 401, reply.body
        params = challenge(reply)
        assert params["error"] == "invalid_token"
        assert reason in params["error_description"], params
        assert params["resource_metadata"] == METADATA_URL
        assert reply.read_requests == 0
        assert calls.seen == []
        # An initialize with the bad token creates no session either.
        reply = await client.post(
            {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {}},
            version=None,
            extra=bearer(make()),
        )
        assert reply.status == 401
        assert "mcp-session-id" not in reply.headers


async def test_jwks_unreachable_is_a_clear_bounded_401(autojump_clock: trio.abc.Clock) -> None:
    keys = KeySet(KEY)
    keys.fail = True
    async with protected(keys) as (client, calls, _):
        reply = await client.post(tool_call(1, "whoami"), extra=bearer(KEY.mint()))
        assert reply.status == 401
        description = challenge(reply)["error_description"]
        assert "signing keys are unavailable" in description
        assert "connection refused" in description
        assert calls.seen == []


async def test_jwks_hanging_is_bounded(autojump_clock: trio.abc.Clock) -> None:
    keys = KeySet(KEY)
    keys.hang = True
    async with protected(keys, verifier_options={"fetch_timeout": 3.0}) as (client, _, _r):
        start = trio.current_time()
        reply = await client.post(tool_call(1, "whoami"), extra=bearer(KEY.mint()))
        assert reply.status == 401
        assert (
            "within 3 s" in challenge(reply)["error_description"]
            or "longer than 3 s" in challenge(reply)["error_description"]
        )
        assert trio.current_time() - start <= 3.0 + 1e-6


async def test_key_rotation_by_kid(autojump_clock: trio.abc.Clock) -> None:
    keys = KeySet(KEY)
    new_key = SigningKey("k2", kind="EC")
    async with protected(keys) as (client, _calls, _):
        session_id = await client.initialize(extra=bearer(KEY.mint()))
        keys.keys = [new_key]  # the authorization server rotated its key
        await trio.sleep(31)  # past min_refresh_interval
        before = keys.fetches
        answer = await client.call(session_id, 1, "whoami", extra=bearer(new_key.mint()))
        assert "result" in answer
        assert keys.fetches == before + 1
        # Made-up kids do not make the server fetch again and again.
        for n in range(5):
            reply = await client.post(
                tool_call(2 + n, "whoami"),
                session_id=session_id,
                extra=bearer(KEY.mint(headers={"kid": f"x{n}"})),
            )
            assert reply.status == 401
        assert keys.fetches == before + 1


# --- scopes -----------------------------------------------------------------------------


async def test_missing_server_wide_scope_is_403(autojump_clock: trio.abc.Clock) -> None:
    async with protected() as (client, _calls, _):
        reply = await client.post(tool_call(1, "whoami"), extra=bearer(KEY.mint(scope="other")))
        assert reply.status == 403
        params = challenge(reply)
        assert params["error"] == "insufficient_scope"
        assert set(params["scope"].split()) == {"mcp", "other"}


async def test_tool_scope_step_up(autojump_clock: trio.abc.Clock) -> None:
    async with protected() as (client, calls, _):
        token = KEY.mint()
        session_id = await client.initialize(extra=bearer(token))
        reply = await client.post(
            tool_call(1, "delete_file", {"path": "/x"}), session_id=session_id, extra=bearer(token)
        )
        assert reply.status == 403
        params = challenge(reply)
        assert params["error"] == "insufficient_scope"
        assert set(params["scope"].split()) == {"mcp", "files:write"}
        assert "delete_file" in params["error_description"]
        assert calls.seen == []
        # Step up: a token with more scopes, same principal, same session.
        stronger = KEY.mint(scope="mcp files:write")
        answer = await client.call(
            session_id, 2, "delete_file", {"path": "/x"}, extra=bearer(stronger)
        )
        assert answer["result"]["content"][0]["text"] == "deleted"


async def test_prompt_and_resource_scopes(autojump_clock: trio.abc.Clock) -> None:
    async with protected() as (client, calls, _):
        token = KEY.mint()
        session_id = await client.initialize(extra=bearer(token))
        get = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "prompts/get",
            "params": {"name": "secret_prompt"},
        }
        reply = await client.post(get, session_id=session_id, extra=bearer(token))
        assert reply.status == 403
        assert challenge(reply)["scope"].split().count("prompts:secret") == 1
        read = {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "resources/read",
            "params": {"uri": "files://private/keys"},
        }
        reply = await client.post(read, session_id=session_id, extra=bearer(token))
        assert reply.status == 403
        read["params"] = {"uri": "files://public/readme"}
        reply = await client.post(read, session_id=session_id, extra=bearer(token))
        assert reply.status == 200
        assert calls.seen == []


async def _list(client: AsgiClient, session_id: str, token: str, method: str) -> Any:
    reply = await client.post(
        {"jsonrpc": "2.0", "id": 9, "method": method}, session_id=session_id, extra=bearer(token)
    )
    assert reply.status == 200
    return next(m for m in reply.messages() if m.get("id") == 9)["result"]


async def test_hide_unauthorized(autojump_clock: trio.abc.Clock) -> None:
    async with protected(hide_unauthorized=True) as (client, _, _r):
        token = KEY.mint()
        session_id = await client.initialize(extra=bearer(token))
        tools = await _list(client, session_id, token, "tools/list")
        assert [t["name"] for t in tools["tools"]] == ["whoami"]
        prompts = await _list(client, session_id, token, "prompts/list")
        assert prompts["prompts"] == []
        resources = await _list(client, session_id, token, "resources/list")
        assert [r["uri"] for r in resources["resources"]] == ["files://public/readme"]
        full = KEY.mint(scope="mcp files:write prompts:secret files:private")
        tools = await _list(client, session_id, full, "tools/list")
        assert sorted(t["name"] for t in tools["tools"]) == ["delete_file", "whoami"]


async def test_lists_not_hidden_by_default(autojump_clock: trio.abc.Clock) -> None:
    async with protected() as (client, _, _r):
        token = KEY.mint()
        session_id = await client.initialize(extra=bearer(token))
        tools = await _list(client, session_id, token, "tools/list")
        assert sorted(t["name"] for t in tools["tools"]) == ["delete_file", "whoami"]


# --- sessions bound to the principal ---------------------------------------------------


async def test_session_of_a_used_with_b_token_is_404(autojump_clock: trio.abc.Clock) -> None:
    async with protected() as (client, calls, _):
        alice = KEY.mint(sub="alice")
        session_id = await client.initialize(extra=bearer(alice))
        bob = KEY.mint(sub="bob")
        reply = await client.post(tool_call(1, "whoami"), session_id=session_id, extra=bearer(bob))
        assert reply.status == 404
        assert reply.read_requests == 0
        get = await client.request(
            "GET",
            headers=[("accept", "text/event-stream"), ("mcp-session-id", session_id), *bearer(bob)],
        )
        assert get.status == 404
        delete = await client.request(
            "DELETE", headers=[("mcp-session-id", session_id), *bearer(bob)]
        )
        assert delete.status == 404
        assert calls.seen == []
        # Alice's refreshed token (new iat/exp, same subject) still reaches her session.
        again = KEY.mint(sub="alice", exp=exp_later())
        answer = await client.call(session_id, 2, "whoami", extra=bearer(again))
        assert "result" in answer


def exp_later() -> int:
    import time

    return int(time.time()) + 1200


def test_auth_info_equality_is_the_principal() -> None:
    from trimcp.auth import AuthInfo

    a = AuthInfo(subject="s", issuer="i", client_id="c", scopes="a b", token="t1")
    b = attrs.evolve(a, scopes=frozenset({"z"}), token="t2", expires_at=5.0)
    assert a == b
    assert hash(a) == hash(b)
    assert a != attrs.evolve(a, subject="other")
    assert "t1" not in repr(a)


def test_config_refuses_auth_and_authenticate() -> None:
    async def hook(scope: Any) -> None:
        return None

    with pytest.raises(ValueError, match="not both"):
        HttpServerConfig(auth=make_resource(KeySet(KEY)), authenticate=hook)


async def test_tool_scopes_hold_on_the_legacy_transport_too(autojump_clock: trio.abc.Clock) -> None:
    # Was: a POST to the legacy /messages endpoint was authenticated and bound to its
    # principal, but a tool's own scopes were not checked there.
    async with protected() as (client, calls, _):
        token = KEY.mint()
        sse = client.start("GET", "/sse", headers=[("accept", "text/event-stream"), *bearer(token)])
        endpoint = await sse.next_event()
        query = endpoint.data.partition("?")[2].encode()

        async def post(message: object, with_token: str) -> Any:
            return await client.request(
                "POST",
                "/messages",
                headers=[("content-type", "application/json"), *bearer(with_token)],
                body=message,
                query=query,
            )

        assert (await post(init_request("2024-11-05"), token)).status == 202
        await sse.next_message()
        note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        assert (await post(note, token)).status == 202
        reply = await post(tool_call(1, "delete_file", {"path": "/x"}), token)
        assert reply.status == 403
        assert challenge(reply)["error"] == "insufficient_scope"
        assert calls.seen == []
        stronger = KEY.mint(scope="mcp files:write")
        assert (await post(tool_call(2, "delete_file", {"path": "/x"}), stronger)).status == 202
        answer = await sse.next_message()
        assert answer["result"]["content"][0]["text"] == "deleted"
        sse.disconnect()
