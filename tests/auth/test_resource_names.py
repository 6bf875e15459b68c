"""Resource scopes decide on the canonical URI, the one the server serves (real signed JWTs).

A ``ProtectedResource`` with ``resource_scopes={"notes://private*": ["admin"]}`` in front of
a server with the template ``notes://{name}``, over Streamable HTTP on a loopback socket, in
a 2025-11-25 session and in 2026-07-28: a token without ``admin`` reads no private note,
however the URI is spelled (``%70`` for ``p``, lower-case hex, an upper-case scheme), and is
told -32602 for a URI with no single reading (a dot segment, a malformed escape). Listening
(2026) and subscribing (2025) to a private note are refused like reading it; a server
mounted under a prefix is held to the same names. The real clock runs; every wait is
bounded by ``fail_after``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any

import pytest
import trio
from hypothesis import example, given
from hypothesis import strategies as st

import trimcp
from tests.auth.tokens import ISSUER, RESOURCE, KeySet, SigningKey
from tests.protocol.test_uris import spellings
from trimcp.auth import JwtVerifier, ProtectedResource
from trimcp.auth.principal import AuthInfo
from trimcp.client import connect_http
from trimcp.server.resolve import check_scopes
from trimcp.transports.http_server import HttpServerConfig, serve_http

BOUND = 30.0
KEY = SigningKey("names")
MODES = ["legacy", "2026-07-28"]
SCOPES = {
    "notes://private*": ["admin"],
    "files://secret/*": ["admin"],
    "notes://team/private*": ["admin"],
}


def make_app() -> trimcp.Server:
    app = trimcp.Server("notes")

    @app.resource("notes://{name}")
    def note(name: str) -> str:
        return f"note {name}"

    @app.resource("files://{+path}")
    def file(path: str) -> str:
        return f"file {path}"

    team = trimcp.Server("team")

    @team.resource("notes://{name}")
    def team_note(name: str) -> str:
        return f"team note {name}"

    app.mount(team, prefix="team")
    return app


@asynccontextmanager
async def protected_server() -> AsyncIterator[str]:
    verifier = JwtVerifier(
        issuer=ISSUER, jwks_url="https://as.example.com/jwks", fetch=KeySet(KEY).fetch
    )
    resource = ProtectedResource(
        resource=RESOURCE,
        authorization_servers=[ISSUER],
        verifier=verifier,
        resource_scopes=SCOPES,
    )
    async with trio.open_nursery() as nursery:
        port: int = await nursery.start(
            lambda task_status: serve_http(
                make_app(), port=0, config=HttpServerConfig(auth=resource), task_status=task_status
            )
        )
        yield f"http://127.0.0.1:{port}/mcp"
        nursery.cancel_scope.cancel()


def as_user(url: str, mode: str, scope: str = "mcp") -> AbstractAsyncContextManager[trimcp.Client]:
    token = KEY.mint(scope=scope)
    return connect_http(url, headers={"Authorization": f"Bearer {token}"}, mode=mode)


async def _read_text(client: trimcp.Client, uri: str) -> str:
    contents = (await client.read_resource(uri)).contents
    text = getattr(contents[0], "text", None)
    assert isinstance(text, str)
    return text


# Each spelling the template matcher serves as the private note "private-plan".
PRIVATE_SPELLINGS = [
    "notes://private-plan",
    "notes://%70rivate-plan",
    "notes://%70%72%69%76%61%74%65-plan",
    "notes://pr%69vate%2dplan",
    "NOTES://private-plan",
    "Notes://%70rivate-plan",
    "files://secret/key",
    "files://%73ecret/key",
    "files://secret%2Fkey",  # {+path} decodes %2F: served as files://secret/key
    "files://secret%2fkey",
    "notes://team/private-plan",  # the mounted server's
    "notes://%74eam/%70rivate-plan",
]


async def _outcome(client: trimcp.Client, uri: str) -> str:
    try:
        return f"served {await _read_text(client, uri)!r}"
    except trimcp.McpError as exc:
        return f"refused {exc.code}"


@pytest.mark.parametrize("mode", MODES)
async def test_no_spelling_of_a_private_uri_passes_the_scope_check(mode: str) -> None:
    with trio.fail_after(BOUND):
        async with protected_server() as url:
            async with as_user(url, mode) as user:
                assert await _read_text(user, "notes://public") == "note public"
                served = {uri: await _outcome(user, uri) for uri in PRIVATE_SPELLINGS}
                assert [uri for uri, seen in served.items() if seen.startswith("served")] == [], (
                    served
                )
            async with as_user(url, mode, "mcp admin") as admin:
                assert await _read_text(admin, "notes://%70rivate-plan") == "note private-plan"
                assert await _read_text(admin, "files://secret%2Fkey") == "file secret/key"


@pytest.mark.parametrize("mode", MODES)
async def test_names_with_no_single_reading_are_invalid_params(mode: str) -> None:
    with trio.fail_after(BOUND):
        async with protected_server() as url:
            async with as_user(url, mode, "mcp admin") as admin:
                for uri in ["notes://a/../private-plan", "notes://%2E%2E/x", "notes://%7"]:
                    with pytest.raises(trimcp.McpError) as refused:
                        await admin.read_resource(uri)
                    assert refused.value.code == -32602, uri
                    assert uri in refused.value.message
                # %25 is a literal '%': the value is "%70rivate-plan", never "private-plan".
                assert await _read_text(admin, "notes://%2570rivate-plan") == "note %70rivate-plan"
            async with as_user(url, mode) as user:
                assert await _read_text(user, "notes://%2570rivate-plan") == "note %70rivate-plan"


async def test_subscribe_holds_every_spelling_to_the_scope_2025() -> None:
    with trio.fail_after(BOUND):
        async with protected_server() as url:
            async with as_user(url, "legacy") as user:
                await user.subscribe_resource("notes://public")
                for uri in PRIVATE_SPELLINGS:
                    with pytest.raises(trimcp.McpError):
                        await user.subscribe_resource(uri)
            async with as_user(url, "legacy", "mcp admin") as admin:
                await admin.subscribe_resource("notes://%70rivate-plan")


async def test_listen_holds_resource_subscriptions_to_the_scope_2026() -> None:
    with trio.fail_after(BOUND):
        async with protected_server() as url:
            async with as_user(url, "2026-07-28") as user:
                async with user.listen(resource_subscriptions=["notes://public"]) as sub:
                    assert sub.acknowledged is not None
                    assert sub.acknowledged.resource_subscriptions == ["notes://public"]
                for uri in PRIVATE_SPELLINGS:
                    with pytest.raises(trimcp.McpError):
                        async with user.listen(resource_subscriptions=[uri]):
                            pytest.fail(f"listening to {uri} was acknowledged without admin")
            async with (
                as_user(url, "2026-07-28", "mcp admin") as admin,
                admin.listen(resource_subscriptions=["notes://%70rivate-plan"]) as sub,
            ):
                assert sub.acknowledged is not None
                # Followed, and acknowledged, under its canonical URI.
                assert sub.acknowledged.resource_subscriptions == ["notes://private-plan"]


# --- the property, without a socket: what a handler receives decides the scope -------------


async def _refuse_every_token(token: str) -> None:
    return None


RULES = ProtectedResource(
    resource=RESOURCE,
    authorization_servers=[ISSUER],
    verifier=_refuse_every_token,
    resource_scopes=SCOPES,
)
APP = make_app()
WITHOUT_ADMIN = AuthInfo(subject="user", scopes="mcp", rules=RULES.scopes_for)
_PIECES = ["p", "r", "i", "v", "a", "t", "e", "s", "c", "k", "y", "-", "/", ".", "%"]
_ESCAPES = ["%70", "%50", "%72", "%73", "%2F", "%2f", "%25", "%2E", "%2e", "%41", "%7"]
URIS = st.lists(st.sampled_from(_PIECES + _ESCAPES), max_size=16).flatmap(
    lambda pieces: st.sampled_from(
        ["notes://", "NOTES://", "files://", "Files://", "notes://team/"]
    ).map(lambda start: start + "".join(pieces))
)


def _private(template: str, arguments: dict[str, Any]) -> bool:
    """Whether the handler is asked for what the rules protect, judged on its values."""
    if template == "files://{+path}":
        return str(arguments["path"]).startswith("secret/")
    return str(arguments["name"]).startswith("private")


@given(st.one_of(URIS, spellings("notes://private-plan"), spellings("files://secret/k")))
@example("notes://%70rivate-plan")
@example("files://secret%2Fkey")
@example("notes://%74eam/%70rivate")
def test_a_handler_asked_for_a_protected_value_always_needs_the_scope(uri: str) -> None:
    code: int | None = None
    try:
        resolved = APP.resolve_resource(uri)
    except trimcp.McpError as ambiguous:
        code, resolved = ambiguous.code, None
    assert code in (None, -32602)
    if resolved is None or resolved.template is None:
        return
    if _private(resolved.template.uri_template, resolved.arguments):
        # Refused whether or not the edge saw it: the server asks the rules again about
        # the URI as asked and the name it would serve.
        with pytest.raises(trimcp.McpError) as without_admin:
            check_scopes(resolved, "resources/read", WITHOUT_ADMIN)
        assert without_admin.value.code == -32602
    # The edge decides on the URI as asked: never less than on its canonical form.
    assert RULES.scopes_for("resources/read", uri) == RULES.scopes_for(
        "resources/read", resolved.uri
    )
