"""Client-side refusals: a redirect back that is not ours (state, iss, host), a PKCE
mismatch the authorization server catches, unsafe metadata URLs (SSRF), metadata for
another resource, a server without PKCE S256, a token that is not a bearer token, a page
that is not http(s); and the token stores."""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

import pytest
import trio

from tests.auth.conftest import OidcProvider
from tests.auth.test_oidc_client import ScriptedUser, call_whoami
from tests.auth.test_oidc_server import whoami_server
from tests.http_client.fakeserver import App, FakeServer, Reply, Request, fake_server
from trimcp.auth import (
    AuthorizationFailed,
    FileTokenStore,
    FollowRedirects,
    IntrospectionVerifier,
    OAuthClient,
    ProtectedResource,
    TokenSet,
    UnsafeUrl,
)
from trimcp.auth.client import check_callback
from trimcp.auth.discovery import (
    Challenge,
    Discovery,
    as_metadata_urls,
    discover,
    fetch_resource_metadata,
    fetch_server_metadata,
    parse_challenge,
    prm_urls,
    resource_allowed,
)
from trimcp.auth.fetch import Fetcher, check_url
from trimcp.auth.pkce import challenge_of
from trimcp.auth.tokens import ClientRegistration, StoredAuth
from trimcp.errors import McpError
from trimcp.transports.http_server import HttpServerConfig, serve_http

FOUND = Discovery(
    resource="https://mcp.example.com/mcp",
    issuer="https://as.example.com",
    metadata={"issuer": "https://as.example.com"},
)
REDIRECT = "http://127.0.0.1:4000/callback"
#: Bound on one exchange with a loopback server.
WAIT = 10.0


def callback(**params: str) -> str:
    return f"{REDIRECT}?{urlencode(params)}"


def test_callback_accepted() -> None:
    url = callback(code="c1", state="s1", iss="https://as.example.com")
    assert check_callback(url, REDIRECT, "s1", FOUND) == "c1"


@pytest.mark.parametrize(
    ("url", "reason"),
    [
        (callback(code="c1", state="other"), "state does not match"),
        (callback(code="c1"), "state does not match"),
        (callback(code="c1", state="s1", iss="https://evil.example.com"), "RFC 9207"),
        ("http://evil.example.com/callback?code=c1&state=s1", "not to"),
        ("http://127.0.0.1:4001/callback?code=c1&state=s1", "not to"),
        ("http://127.0.0.1:4000/other?code=c1&state=s1", "not to"),
        (callback(state="s1", error="access_denied"), "access_denied"),
        (callback(state="s1"), "no code"),
    ],
)
def test_callback_refused(url: str, reason: str) -> None:
    with pytest.raises(AuthorizationFailed, match=reason):
        check_callback(url, REDIRECT, "s1", FOUND)


def test_iss_required_when_promised() -> None:
    promised = Discovery(
        resource=FOUND.resource,
        issuer=FOUND.issuer,
        metadata={"issuer": FOUND.issuer, "authorization_response_iss_parameter_supported": True},
    )
    with pytest.raises(AuthorizationFailed, match="promises an iss"):
        check_callback(callback(code="c", state="s"), REDIRECT, "s", promised)


def test_pkce_s256_challenge() -> None:
    import base64
    import hashlib

    from trimcp.auth.pkce import new_verifier

    verifier = new_verifier()
    assert 43 <= len(verifier) <= 128
    digest = hashlib.sha256(verifier.encode()).digest()
    assert challenge_of(verifier) == base64.urlsafe_b64encode(digest).rstrip(b"=").decode()


@pytest.mark.parametrize(
    "url",
    [
        "http://10.0.0.1/x",
        "http://192.168.1.1/.well-known/x",
        "http://169.254.169.254/latest",
        "http://[::1]/x",
        "http://127.0.0.1:8080/x",
        "http://localhost/x",
        "file:///etc/passwd",
        "ftp://as.example.com/",
        "http://user:pw@as.example.com/",
    ],
)
def test_ssrf_guard_refuses(url: str) -> None:
    with pytest.raises(UnsafeUrl):
        check_url(url, allow_private=False)


@pytest.mark.parametrize(
    "host",
    [
        "127.1",  # inet_aton forms of 127.0.0.1: resolvers accept them all
        "2130706433",
        "0x7f000001",
        "0X7F.1",
        "0177.0.0.1",
        "0177.1",
        "0",  # 0.0.0.0: this host
        "0x0",
        "10.1",  # 10.0.0.1
        "0xa9fea9fe",  # 169.254.169.254, the cloud metadata address
        "2852039166",
        "100.64.0.1",  # carrier-grade NAT, RFC 6598
        "100.127.255.254",
        "[2002:7f00:1::]",  # 6to4 around 127.0.0.1
        "[2002:a9fe:a9fe::1]",  # 6to4 around 169.254.169.254
        "\uff11\uff12\uff17.\uff10.\uff10.\uff11",  # full-width digits: IDNA folds them
        "127\u30020\u30020\u30021",  # ideographic full stops, folded to dots
        "localhost.",
        "127.0.0.1.",
        # Every name under localhost is loopback (RFC 6761 §6.3): resolvers answer 127.0.0.1.
        "app.localhost",
        "a.b.localhost",
        "APP.LocalHost.",
    ],
)
def test_ssrf_guard_reads_hosts_as_resolvers_do(host: str) -> None:
    with pytest.raises(UnsafeUrl, match="non-public address"):
        check_url(f"http://{host}/.well-known/x", allow_private=False)


@pytest.mark.parametrize(
    "host",
    [
        "[::1]",
        "[::ffff:127.0.0.1]",
        "[::ffff:7f00:1]",
        "[::ffff:100.64.0.1]",
        "[64:ff9b::a9fe:a9fe]",
        "[fe80::1%25eth0]",
        "[::]",
        "[fd00::1]",
        "[ff02::1]",
    ],
)
def test_ssrf_guard_refuses_ipv6_forms(host: str) -> None:
    with pytest.raises(UnsafeUrl, match="non-public address"):
        check_url(f"http://{host}/x", allow_private=False)


@pytest.mark.parametrize(
    "host",
    [
        "8.8.8.8",
        "134744072",
        "0x08080808",
        "100.128.0.1",
        "100.63.255.255",
        "[2606:4700::1111]",
        "123.example.com",
        "0x7f.example.com",
        "localhost.example.com",
    ],
)
def test_ssrf_guard_lets_public_hosts_through(host: str) -> None:
    assert check_url(f"https://{host}/x", allow_private=False).port == 443


def test_ssrf_guard_allows_public_and_opt_in() -> None:
    assert (
        check_url("https://as.example.com/.well-known/x", allow_private=False).host
        == "as.example.com"
    )
    assert check_url("http://127.0.0.1:8080/x", allow_private=True).port == 8080


def test_public_server_gets_no_private_metadata() -> None:
    fetcher = OAuthClient().fetcher("https://mcp.example.com/mcp")
    with pytest.raises(UnsafeUrl):
        fetcher.endpoint("http://169.254.169.254/latest/meta-data")
    local = OAuthClient().fetcher("http://127.0.0.1:8000/mcp")
    assert local.endpoint("http://127.0.0.1:9000/x").port == 9000


def test_discovery_urls_and_resource_match() -> None:
    challenge = parse_challenge(
        'Bearer error="invalid_token", scope="a b", resource_metadata="https://m/x"'
    )
    assert challenge.scope == "a b"
    assert challenge.error == "invalid_token"
    assert prm_urls("https://m/api/mcp", challenge) == [
        "https://m/x",
        "https://m/.well-known/oauth-protected-resource/api/mcp",
        "https://m/.well-known/oauth-protected-resource",
    ]
    assert as_metadata_urls("https://as/t1") == [
        "https://as/.well-known/oauth-authorization-server/t1",
        "https://as/.well-known/openid-configuration/t1",
        "https://as/t1/.well-known/openid-configuration",
    ]
    assert resource_allowed("https://m/mcp", "https://m/mcp")
    assert resource_allowed("https://m", "https://m/mcp")
    assert not resource_allowed("https://evil/mcp", "https://m/mcp")
    assert not resource_allowed("https://m/other", "https://m/mcp")


def _metadata_server(document: Mapping[str, object]) -> App:
    """Serves ``document`` as the RFC 8414 metadata (and nothing else: 404)."""

    async def app(request: Request, reply: Reply) -> None:
        if request.target.startswith("/.well-known/oauth-authorization-server"):
            await reply.json(document)
        else:
            await reply.status(404)

    return app


@pytest.mark.parametrize(
    ("issuer", "reason"),
    [
        (None, "names no issuer"),
        ("", "names no issuer"),
        (5, "names no issuer"),
        ("https://evil.example", "names issuer 'https://evil.example', not 'http://127"),
    ],
)
async def test_metadata_without_the_issuer_asked_for_is_refused(
    issuer: object, reason: str
) -> None:
    document: dict[str, object] = {"authorization_endpoint": "https://evil.example/authorize"}
    if issuer is not None:
        document["issuer"] = issuer
    async with fake_server(_metadata_server(document)) as server:
        asked = f"http://127.0.0.1:{server.port}"
        fetcher = Fetcher(timeout=WAIT)
        try:
            with pytest.raises(AuthorizationFailed, match=reason) as caught:
                await fetch_server_metadata(fetcher, asked)
        finally:
            await fetcher.aclose()
    assert f"{asked}/.well-known/oauth-authorization-server" in str(caught.value)


async def test_a_2025_03_26_servers_own_metadata_must_name_an_issuer_too() -> None:
    async with fake_server(_metadata_server({"token_endpoint": "https://x/token"})) as server:
        fetcher = Fetcher(timeout=WAIT)
        try:
            with pytest.raises(AuthorizationFailed, match="names no issuer"):
                await discover(fetcher, server.url, parse_challenge("Bearer"))
        finally:
            await fetcher.aclose()


async def test_metadata_naming_the_issuer_asked_for_is_used() -> None:
    async with fake_server(_metadata_server({})) as server:
        asked = f"http://127.0.0.1:{server.port}"
        document = {"issuer": asked + "/", "token_endpoint": f"{asked}/token"}
        server.app = _metadata_server(document)
        fetcher = Fetcher(timeout=WAIT)
        try:
            assert await fetch_server_metadata(fetcher, asked) == document
        finally:
            await fetcher.aclose()


async def test_file_token_store(tmp_path: Path) -> None:
    path = tmp_path / "tokens.json"
    store = FileTokenStore(path)
    value = StoredAuth(
        tokens=TokenSet(access_token="a", refresh_token="r", expires_at=5.0),
        registration=ClientRegistration(client_id="c", issuer="i"),
    )
    await store.save("https://m/mcp", value)
    assert path.stat().st_mode & 0o777 == 0o600
    assert await FileTokenStore(path).load("https://m/mcp") == value
    await store.delete("https://m/mcp")
    assert await store.load("https://m/mcp") is None
    path.write_text("not json")
    assert await store.load("x") is None


class TamperedChallenge(FollowRedirects):
    """Swaps the PKCE challenge on the way to the authorization server (an attacker's
    code injection would look like this to the token endpoint)."""

    async def authorize(self, url: str) -> str:
        parts = urlsplit(url)
        query = {k: v[0] for k, v in parse_qs(parts.query).items()}
        query["code_challenge"] = challenge_of("another-verifier-" + "x" * 40)
        return await super().authorize(parts._replace(query=urlencode(query)).geturl())


async def test_pkce_mismatch_fails_cleanly(oidc_provider: OidcProvider, free_port: int) -> None:
    resource = f"http://127.0.0.1:{free_port}/opaque"
    verifier = IntrospectionVerifier(
        f"{oidc_provider.issuer}/token/introspection", client_id="rs", client_secret="rs-secret"
    )
    protected = ProtectedResource(
        resource=resource,
        authorization_servers=[oidc_provider.issuer],
        verifier=verifier,
        required_scopes=["mcp"],
    )
    auth = OAuthClient(
        interaction=TamperedChallenge(f"http://127.0.0.1:{free_port}/cb", login=ScriptedUser()),
        allow_private_addresses=True,
    )
    with trio.fail_after(60):
        async with trio.open_nursery() as nursery:
            await nursery.start(
                lambda task_status: serve_http(
                    whoami_server(),
                    port=free_port,
                    path="/opaque",
                    config=HttpServerConfig(auth=protected),
                    task_status=task_status,
                )
            )
            with pytest.raises(McpError, match="invalid_grant"):
                await call_whoami(resource, auth)
            nursery.cancel_scope.cancel()


# --- discovery, PKCE, token type, what the user is sent to ---------------------------------


@asynccontextmanager
async def metadata_server(documents: dict[str, Any]) -> AsyncIterator[FakeServer]:
    """Serves ``documents`` by path (404 for any other), on a loopback port."""

    async def app(request: Request, reply: Reply) -> None:
        document = documents.get(request.target)
        if document is None:
            await reply.status(404)
        else:
            await reply.json(document)

    with trio.fail_after(WAIT):
        async with fake_server(app) as server:
            yield server


async def test_resource_metadata_for_another_resource_is_refused() -> None:
    documents: dict[str, Any] = {}
    async with metadata_server(documents) as server:
        mcp = f"http://127.0.0.1:{server.port}/mcp"
        fetcher = Fetcher(timeout=WAIT)
        try:
            documents["/.well-known/oauth-protected-resource/mcp"] = {"resource": mcp}
            assert await fetch_resource_metadata(fetcher, mcp, Challenge()) == {"resource": mcp}
            for other in ("http://127.0.0.1:1/mcp", f"http://127.0.0.1:{server.port}/other"):
                documents["/.well-known/oauth-protected-resource/mcp"] = {"resource": other}
                with pytest.raises(AuthorizationFailed, match="refusing to send credentials"):
                    await fetch_resource_metadata(fetcher, mcp, Challenge())
        finally:
            await fetcher.aclose()


class Recorded:
    """An interaction that records where the user would be sent, and stops there."""

    redirect_uri = REDIRECT

    def __init__(self) -> None:
        self.visited: list[str] = []

    async def authorize(self, url: str) -> str:
        self.visited.append(url)
        raise AuthorizationFailed("stopped by the test")


@pytest.mark.parametrize("methods", [["plain"], []])
async def test_no_s256_no_authorization(methods: list[str]) -> None:
    found = Discovery(
        resource=FOUND.resource,
        issuer=FOUND.issuer,
        metadata={
            "issuer": FOUND.issuer,
            "authorization_endpoint": "https://as.example.com/authorize",
            "token_endpoint": "https://as.example.com/token",
            "code_challenge_methods_supported": methods,
        },
    )
    user = Recorded()
    client = OAuthClient()
    fetcher = client.fetcher(FOUND.resource)
    try:
        with pytest.raises(AuthorizationFailed, match="does not support PKCE with S256"):
            await client.authorization_code(
                fetcher, found, ClientRegistration(client_id="c"), None, user
            )
    finally:
        await fetcher.aclose()
    assert user.visited == []


@pytest.mark.parametrize("token_type", ["mac", "PoP", 7])
def test_a_token_that_is_not_a_bearer_token_is_refused(token_type: object) -> None:
    with pytest.raises(ValueError, match="need Bearer or DPoP"):
        TokenSet.from_response({"access_token": "t", "token_type": token_type})
    assert TokenSet.from_response({"access_token": "t", "token_type": "bearer"}).access_token
    # DPoP-bound tokens are kept as such (token_request refuses one it did not ask for).
    dpop = TokenSet.from_response({"access_token": "t", "token_type": "dpop"})
    assert dpop.token_type == "DPoP"


@pytest.mark.parametrize(
    "url", ["javascript:alert(1)", "file:///etc/passwd", "data:text/html,hi", "ftp://as/x"]
)
async def test_the_user_is_only_sent_to_http_pages(url: str) -> None:
    with pytest.raises(AuthorizationFailed, match="not an http\\(s\\) URL"):
        await FollowRedirects(REDIRECT).authorize(url)


async def test_a_redirect_to_another_scheme_is_not_followed() -> None:
    async def app(request: Request, reply: Reply) -> None:
        await reply.status(302, headers={"location": "file:///etc/passwd"})

    with trio.fail_after(WAIT):
        async with fake_server(app) as server:
            with pytest.raises(AuthorizationFailed, match="not an http\\(s\\) URL"):
                await FollowRedirects(REDIRECT).authorize(f"http://127.0.0.1:{server.port}/a")
            assert len(server.requests) == 1
