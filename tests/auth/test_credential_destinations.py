"""Where a non-interactive credential goes (docs/authorization.md, "Where credentials go").

A workload token, a client secret, a private-key assertion and an ID-JAG go only to the
authorization server the application set (``authorization_server=``) or, with none set,
to the one the assertion's ``aud`` names. Each case runs against real loopback servers:
a protected MCP server whose resource metadata names an authorization server, the
authorization server the credential belongs to, a foreign one that records everything
it receives (and would hand out a token, as a thief would), and an identity provider for
the ID-JAG. The foreign server must never receive a request carrying the credential, and
the client must end with the documented refusal naming both servers and the setting.
"""

from __future__ import annotations

import base64
import json
import time
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from typing import Any
from urllib.parse import parse_qs, urlencode

import attrs
import jwt
import pytest
import trio
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

from tests.http_client.fakeserver import FakeServer, McpApp, Reply, Request, fake_server
from trimcp import McpError, connect_http
from trimcp.auth import (
    ClientCredentials,
    EnterpriseManaged,
    MemoryTokenStore,
    OAuthClient,
    PrivateKey,
    TokenSet,
    UntrustedAuthorizationServer,
    WorkloadIdentity,
)
from trimcp.auth.destinations import (
    assertion_audiences,
    at_issuer,
    home_of_tokens,
    issuer_identifier,
    same_issuer,
    trusted_destination,
)
from trimcp.auth.discovery import Discovery
from trimcp.auth.errors import AuthorizationFailed, AuthorizationServerChanged
from trimcp.auth.fetch import Fetcher, JsonResponse
from trimcp.auth.grants import (
    CLIENT_ASSERTION_TYPE,
    JWT_BEARER,
    TOKEN_EXCHANGE,
    authenticate_client,
)
from trimcp.auth.tokens import ClientRegistration, StoredAuth

#: Bound on one whole connection attempt against loopback servers.
WAIT = 30.0
SECRET = "s3cret-of-the-reporting-bot"
ID_TOKEN = "the-users-id-token"
REFRESH = "refresh-token-from-the-real-server"
REGISTERED = "client-secret-the-real-server-registered"


def signed(claims: dict[str, Any]) -> str:
    """A JWT the client reads without verifying (the authorization server verifies it)."""
    now = int(time.time())
    return jwt.encode(
        {"iat": now, "exp": now + 600, **claims}, "demo-key-not-checked-here-32-bytes", "HS256"
    )


def private_key() -> PrivateKey:
    key = ec.generate_private_key(ec.SECP256R1())
    pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    ).decode()
    return PrivateKey(pem=pem, algorithm="ES256")


@attrs.define
class AuthorizationServer:
    """An authorization server (or, for the ID-JAG, an identity provider) on loopback:
    RFC 8414 metadata, a token endpoint handing out ``access_token``, every request kept
    (by the :class:`FakeServer` serving it). As an identity provider it answers a token
    exchange with an ID-JAG whose ``aud`` is the audience asked for, or ``jag_audience``
    when its policy fixes one.

    For interactive clients it also has a login page at ``/authorize`` (a form that
    ``tests.auth.scripted_browser.fill_in`` fills in; the login is kept in ``logins``)
    redirecting back with a code and RFC 9207 ``iss``, dynamic registration at
    ``/register`` (a confidential client: it hands out ``registration_secret``), and
    an authorization-code grant answered with ``refresh_token`` too."""

    access_token: str
    jag_audience: str | None = None
    server: FakeServer | None = None
    #: The ID-JAGs it issued.
    issued: list[str] = attrs.Factory(list)
    #: The token endpoint its metadata names (default: its own /token).
    token_endpoint: str | None = None
    #: The refresh token of its authorization-code answers.
    refresh_token: str = "a-refresh-token"
    #: The client secret its dynamic registration hands out.
    registration_secret: str = "a-registered-secret"
    #: Who logged in at its login page.
    logins: list[str] = attrs.Factory(list)

    @property
    def issuer(self) -> str:
        assert self.server is not None
        return f"http://127.0.0.1:{self.server.port}"

    @property
    def posts(self) -> list[Request]:
        assert self.server is not None
        return [r for r in self.server.requests if r.method == "POST"]

    def forms(self) -> list[dict[str, str]]:
        return [{k: v[0] for k, v in parse_qs(r.body.decode()).items()} for r in self.posts]

    def carrying(self, credentials: Sequence[str]) -> list[Request]:
        """The requests that hold any of ``credentials`` (in the target, a header or the
        body; a client secret also inside HTTP Basic)."""
        assert self.server is not None
        found = []
        for request in self.server.requests:
            text = request.target + json.dumps(request.headers) + request.body.decode()
            basic = request.headers.get("authorization", "")
            if basic.lower().startswith("basic "):
                text += base64.b64decode(basic[6:]).decode(errors="replace")
            if any(credential in text for credential in credentials):
                found.append(request)
        return found

    async def __call__(self, request: Request, reply: Reply) -> None:
        if request.method == "GET" and request.target.startswith("/.well-known/"):
            await reply.json(
                {
                    "issuer": self.issuer,
                    "token_endpoint": self.token_endpoint or f"{self.issuer}/token",
                    "authorization_endpoint": f"{self.issuer}/authorize",
                    "registration_endpoint": f"{self.issuer}/register",
                    "code_challenge_methods_supported": ["S256"],
                    "authorization_response_iss_parameter_supported": True,
                    "grant_types_supported": ["client_credentials", JWT_BEARER, TOKEN_EXCHANGE],
                    "token_endpoint_auth_methods_supported": [
                        "client_secret_basic",
                        "private_key_jwt",
                        "none",
                    ],
                }
            )
        elif request.method == "POST" and request.target == "/token":
            form = {k: v[0] for k, v in parse_qs(request.body.decode()).items()}
            if form.get("grant_type") == TOKEN_EXCHANGE:
                audience = self.jag_audience or form["audience"]
                jag = signed({"iss": self.issuer, "sub": "alice", "aud": audience})
                self.issued.append(jag)
                await reply.json(
                    {
                        "access_token": jag,
                        "issued_token_type": "urn:ietf:params:oauth:token-type:id-jag",
                        "token_type": "N_A",
                    }
                )
                return
            answer = {"access_token": self.access_token, "token_type": "Bearer", "expires_in": 3600}
            if form.get("grant_type") == "authorization_code":
                answer["refresh_token"] = self.refresh_token
            await reply.json(answer)
        elif request.method == "GET" and request.target.startswith("/authorize?"):
            asked = request.target.partition("?")[2]
            page = f'<form method="post" action="/login?{asked}"><input name="login"></form>'
            await reply.status(200, page.encode(), {"content-type": "text/html"})
        elif request.method == "POST" and request.target.startswith("/login?"):
            params = {k: v[0] for k, v in parse_qs(request.target.partition("?")[2]).items()}
            self.logins.append(parse_qs(request.body.decode())["login"][0])
            code = f"code-{len(self.logins)}"
            back = {"code": code, "state": params["state"], "iss": self.issuer}
            location = f"{params['redirect_uri']}?{urlencode(back)}"
            await reply.status(302, headers={"location": location})
        elif request.method == "POST" and request.target == "/register":
            registered = {
                "client_id": f"registered-at-{self.issuer}",
                "client_secret": self.registration_secret,
                "token_endpoint_auth_method": "client_secret_basic",
            }
            await reply.json(registered, status=201)
        else:
            await reply.status(404)


@attrs.define
class ProtectedMcp:
    """An MCP server that asks for a token (401 with resource metadata) and names
    ``names()`` as its authorization server (or servers, a list); it takes any token in
    ``accepts`` (a
    hostile one takes what its own authorization server stole for it). Without
    ``resource_metadata`` it is a 2025-03-26 server serving its own authorization server
    metadata (``own_metadata``)."""

    names: Callable[[], str | list[str]]
    accepts: set[str]
    resource_metadata: bool = True
    own_metadata: dict[str, Any] | None = None
    server: FakeServer | None = None
    mcp: McpApp = attrs.Factory(lambda: McpApp(sessions=False))

    @property
    def url(self) -> str:
        assert self.server is not None
        return self.server.url

    async def __call__(self, request: Request, reply: Reply) -> None:
        prm = f"http://127.0.0.1:{self.server.port if self.server else 0}"
        prm += "/.well-known/oauth-protected-resource/mcp"
        if request.method == "GET" and request.target.startswith("/.well-known/"):
            if request.target.startswith("/.well-known/oauth-protected-resource"):
                if self.resource_metadata:
                    named = self.names()
                    servers = named if isinstance(named, list) else [named]
                    await reply.json({"resource": self.url, "authorization_servers": servers})
                    return
            elif self.own_metadata is not None:
                await reply.json(self.own_metadata)
                return
            await reply.status(404)
            return
        token = request.headers.get("authorization", "").partition(" ")[2]
        if token not in self.accepts:
            challenge = f'Bearer resource_metadata="{prm}"' if self.resource_metadata else "Bearer"
            await reply.status(401, headers={"www-authenticate": challenge})
            return
        await self.mcp(request, reply)


@attrs.define
class World:
    mcp: ProtectedMcp
    real: AuthorizationServer
    foreign: AuthorizationServer
    idp: AuthorizationServer


@asynccontextmanager
async def world(
    names: str = "foreign",
    *,
    jag_audience: str | None = None,
    resource_metadata: bool = True,
) -> AsyncIterator[World]:
    """The servers: ``names`` says which authorization server the MCP server names
    (``"real"`` or ``"foreign"``); the MCP server takes the tokens of both."""
    real = AuthorizationServer(
        "token-from-the-real-server", refresh_token=REFRESH, registration_secret=REGISTERED
    )
    foreign = AuthorizationServer("token-the-thief-obtained")
    idp = AuthorizationServer("unused", jag_audience=jag_audience)
    chosen = real if names == "real" else foreign
    mcp = ProtectedMcp(
        names=lambda: chosen.issuer,
        accepts={real.access_token, foreign.access_token},
        resource_metadata=resource_metadata,
    )
    async with (
        fake_server(real) as real.server,
        fake_server(foreign) as foreign.server,
        fake_server(idp) as idp.server,
        fake_server(mcp) as mcp.server,
    ):
        if jag_audience == "real":
            idp.jag_audience = real.issuer
        yield World(mcp, real, foreign, idp)


async def tools_of(url: str, auth: OAuthClient) -> list[str]:
    with trio.fail_after(WAIT):
        async with connect_http(url, auth=auth, mode="legacy") as client:
            return [tool.name async for tool in client.iter_tools()]


async def refused(url: str, auth: OAuthClient) -> str | None:
    """The message the connection ends with; None when it got through (checked by the
    caller after what the servers received, so a leak is what a failure reports)."""
    with trio.fail_after(WAIT):
        try:
            async with connect_http(url, auth=auth, mode="legacy"):
                return None
        except McpError as exc:
            return exc.message


def assert_names_both_and_the_setting(message: str | None, w: World) -> None:
    assert message is not None, "the client got through"
    assert w.foreign.issuer in message
    assert w.mcp.url in message
    assert "authorization_server=" in message


COMMON: dict[str, Any] = {"timeout": 10.0, "flow_timeout": 20.0}


# --- WorkloadIdentity --------------------------------------------------------------


async def test_a_workload_token_never_goes_to_an_authorization_server_its_aud_does_not_name() -> (
    None
):
    async with world("foreign") as w:
        token = signed({"iss": "https://k8s.example", "sub": "pod", "aud": w.real.issuer})
        message = await refused(w.mcp.url, WorkloadIdentity(token=token, **COMMON))
        assert w.foreign.carrying([token]) == []
        assert w.foreign.posts == []
    assert_names_both_and_the_setting(message, w)
    assert message is not None
    assert "aud" in message


async def test_a_workload_token_never_goes_past_the_configured_authorization_server() -> None:
    async with world("foreign") as w:
        # Even a token naming the foreign server: the application's setting wins.
        token = signed({"sub": "pod", "aud": [w.real.issuer, w.foreign.issuer]})
        auth = WorkloadIdentity(token=token, authorization_server=w.real.issuer, **COMMON)
        message = await refused(w.mcp.url, auth)
        assert w.foreign.carrying([token]) == []
        assert w.foreign.posts == []
    assert_names_both_and_the_setting(message, w)


async def test_a_workload_token_goes_to_the_server_its_aud_names() -> None:
    async with world("real") as w:
        token = signed({"sub": "pod", "aud": w.real.issuer + "/"})  # one spelling of it
        assert await tools_of(w.mcp.url, WorkloadIdentity(token=token, **COMMON)) == ["echo"]
        assert [form["assertion"] for form in w.real.forms()] == [token]
        assert w.foreign.server is not None
        assert w.foreign.server.requests == []


async def test_a_workload_token_goes_to_the_configured_server() -> None:
    async with world("real") as w:
        token = signed({"sub": "pod", "aud": "api://not-an-issuer"})
        auth = WorkloadIdentity(token=token, authorization_server=w.real.issuer, **COMMON)
        assert await tools_of(w.mcp.url, auth) == ["echo"]
        assert [form["assertion"] for form in w.real.forms()] == [token]


async def test_a_workload_client_secret_needs_the_setting_even_when_aud_names_the_server() -> None:
    async with world("foreign") as w:
        token = signed({"sub": "pod", "aud": w.foreign.issuer})  # aud alone vouches for none
        auth = WorkloadIdentity(token=token, client_id="wl", client_secret=SECRET, **COMMON)
        message = await refused(w.mcp.url, auth)
        assert w.foreign.carrying([SECRET]) == []
        assert w.foreign.posts == []
    assert_names_both_and_the_setting(message, w)


# --- ClientCredentials -------------------------------------------------------------


@pytest.mark.parametrize("configured", [False, True])
async def test_a_client_secret_goes_only_to_the_configured_server(configured: bool) -> None:
    async with world("foreign") as w:
        setting = w.real.issuer if configured else None
        auth = ClientCredentials(
            client_id="bot", client_secret=SECRET, authorization_server=setting, **COMMON
        )
        message = await refused(w.mcp.url, auth)
        assert w.foreign.carrying([SECRET]) == []
        assert w.foreign.posts == []
    assert_names_both_and_the_setting(message, w)


async def test_a_private_key_assertion_goes_only_to_the_configured_server() -> None:
    async with world("foreign") as w:
        auth = ClientCredentials(
            client_id="bot", private_key=private_key(), authorization_server=w.real.issuer, **COMMON
        )
        message = await refused(w.mcp.url, auth)
        assert w.foreign.posts == []
    assert_names_both_and_the_setting(message, w)


async def test_a_private_key_assertion_without_the_setting_is_refused() -> None:
    async with world("real") as w:
        auth = ClientCredentials(client_id="bot", private_key=private_key(), **COMMON)
        message = await refused(w.mcp.url, auth)
        assert w.real.posts == []
    assert message is not None, "the client got through"
    assert w.real.issuer in message
    assert "authorization_server=" in message


@pytest.mark.parametrize("method", ["secret", "private_key"])
async def test_client_credentials_reach_the_configured_server(method: str) -> None:
    async with world("real") as w:
        credential: dict[str, Any] = (
            {"client_secret": SECRET} if method == "secret" else {"private_key": private_key()}
        )
        auth = ClientCredentials(
            client_id="bot", authorization_server=w.real.issuer.upper(), **credential, **COMMON
        )
        assert await tools_of(w.mcp.url, auth) == ["echo"]
        [form] = w.real.forms()
        assert form["grant_type"] == "client_credentials"
        if method == "private_key":
            claims = jwt.decode(form["client_assertion"], options={"verify_signature": False})
            assert claims["aud"] == w.real.issuer
        else:
            assert w.real.carrying([SECRET]) == w.real.posts


async def test_a_2025_servers_own_metadata_cannot_move_the_token_endpoint() -> None:
    """A server without resource metadata serves authorization server metadata naming the
    configured issuer but a token endpoint of its choosing: the secret goes to the token
    endpoint the configured issuer's own metadata names."""
    async with world("real", resource_metadata=False) as w:
        w.mcp.own_metadata = {
            "issuer": w.real.issuer,
            "token_endpoint": f"{w.foreign.issuer}/token",
        }
        auth = ClientCredentials(
            client_id="bot", client_secret=SECRET, authorization_server=w.real.issuer, **COMMON
        )
        assert await tools_of(w.mcp.url, auth) == ["echo"]
        assert w.foreign.carrying([SECRET]) == []
        assert len(w.real.posts) == 1


@pytest.mark.parametrize("client", ["secret-configured", "workload-by-aud"])
async def test_a_refresh_is_refused_too(client: str) -> None:
    """Tokens from the real server, and the MCP server now names another: neither the
    refresh token nor a secret goes there (the workload client, with no setting, sends
    its refresh token back only to the issuer of its tokens)."""
    async with world("foreign") as w:
        store = MemoryTokenStore()
        secret = SECRET if client == "secret-configured" else None
        stored = StoredAuth(
            tokens=TokenSet(access_token="old", expires_at=time.time() - 60, refresh_token=REFRESH),
            registration=ClientRegistration(
                client_id="bot",
                client_secret=secret,
                token_endpoint_auth_method="client_secret_basic" if secret else "none",
                issuer=w.real.issuer,
            ),
        )
        await store.save(w.mcp.url, stored)
        auth: OAuthClient
        if secret is not None:
            auth = ClientCredentials(
                client_id="bot",
                client_secret=secret,
                authorization_server=w.real.issuer,
                store=store,
                **COMMON,
            )
        else:
            token = signed({"sub": "pod", "aud": w.real.issuer})
            auth = WorkloadIdentity(token=token, client_id="bot", store=store, **COMMON)
        message = await refused(w.mcp.url, auth)
        assert w.foreign.carrying([SECRET, REFRESH]) == []
        assert w.foreign.posts == []
    assert_names_both_and_the_setting(message, w)


# --- EnterpriseManaged -------------------------------------------------------------


def enterprise(w: World, **options: Any) -> EnterpriseManaged:
    return EnterpriseManaged(
        id_token=ID_TOKEN,
        idp_token_endpoint=f"{w.idp.issuer}/token",
        idp_client_id="idp-client",
        client_id="mcp-client",
        **options,
        **COMMON,
    )


async def test_an_id_jag_for_the_real_server_never_goes_to_a_foreign_one() -> None:
    # The identity provider's policy fixes the audience: the ID-JAG is for the real server.
    async with world("foreign", jag_audience="real") as w:
        message = await refused(w.mcp.url, enterprise(w))
        assert len(w.idp.issued) == 1
        assert w.foreign.carrying([*w.idp.issued, ID_TOKEN]) == []
        assert w.foreign.posts == []
    assert_names_both_and_the_setting(message, w)
    assert message is not None
    assert "aud" in message


async def test_an_id_jag_goes_only_to_the_configured_server() -> None:
    async with world("foreign") as w:
        auth = enterprise(w, client_secret=SECRET, authorization_server=w.real.issuer)
        message = await refused(w.mcp.url, auth)
        assert w.foreign.carrying([SECRET, ID_TOKEN]) == []
        assert w.foreign.posts == []
        # Refused before the identity provider was asked for an ID-JAG for the foreign one.
        assert w.idp.posts == []
    assert_names_both_and_the_setting(message, w)


async def test_an_enterprise_client_secret_needs_the_setting() -> None:
    async with world("foreign") as w:
        message = await refused(w.mcp.url, enterprise(w, client_secret=SECRET))
        assert w.foreign.carrying([SECRET]) == []
        assert w.foreign.posts == []
    assert_names_both_and_the_setting(message, w)


@pytest.mark.parametrize("configured", [False, True])
async def test_an_id_jag_reaches_the_real_server(configured: bool) -> None:
    async with world("real") as w:
        options: dict[str, Any] = (
            {"client_secret": SECRET, "authorization_server": w.real.issuer} if configured else {}
        )
        assert await tools_of(w.mcp.url, enterprise(w, **options)) == ["echo"]
        [exchange] = w.idp.forms()
        assert exchange["audience"] == w.real.issuer
        [grant] = w.real.forms()
        assert grant["grant_type"] == JWT_BEARER
        claims = jwt.decode(grant["assertion"], options={"verify_signature": False})
        assert claims["aud"] == w.real.issuer


# --- the error, the setting and the reading of issuers -----------------------------


async def test_the_refusal_is_an_untrusted_authorization_server_error() -> None:
    found = Discovery(
        resource="https://mcp.example.com/mcp",
        issuer="https://evil.example",
        metadata={"issuer": "https://evil.example", "token_endpoint": "https://evil.example/t"},
    )
    token = signed({"sub": "pod", "aud": "https://as.example.com"})
    auth = WorkloadIdentity(token=token)
    fetcher = auth.fetcher(found.resource)
    try:
        with pytest.raises(UntrustedAuthorizationServer) as caught:
            await auth.obtain(fetcher, found, None, None)
    finally:
        await fetcher.aclose()
    assert caught.value.authorization_server == "https://evil.example"
    assert caught.value.mcp_server == "https://mcp.example.com/mcp"
    assert caught.value.setting == "authorization_server"


@pytest.mark.parametrize(
    "value", ["https://as.example/x?y=1", "https://as.example/#f", "as.example", "ftp://as/"]
)
def test_the_setting_must_be_an_issuer_identifier(value: str) -> None:
    with pytest.raises(ValueError, match="authorization_server"):
        ClientCredentials(client_id="bot", client_secret=SECRET, authorization_server=value)


def test_issuer_identifiers_compare_after_normalisation() -> None:
    same = ["https://AS.example.com", "https://as.example.com/", "HTTPS://as.example.com:443"]
    assert {issuer_identifier(value) for value in same} == {"https://as.example.com"}
    assert issuer_identifier("https://as.example.com/tenant/") == issuer_identifier(
        "https://as.example.com/tenant"
    )
    assert issuer_identifier("https://as.example.com/a") != issuer_identifier(
        "https://as.example.com/A"
    )
    assert issuer_identifier("https://as.example.com:8443") != issuer_identifier(
        "https://as.example.com"
    )
    for not_one in ("https://as.example?x=1", "https://as.example#f", "api://x", "", "https://"):
        assert issuer_identifier(not_one) is None
    # An empty query or fragment, user info, or a port that is none: not an issuer.
    for not_one in (
        "https://as.example?",
        "https://as.example/#",
        "https://user@as.example",
        "https://user:pw@as.example",
        "https://:pw@as.example",
        "https://as.example:99999",
        "https://as.example:port",
    ):
        assert issuer_identifier(not_one) is None, not_one
    assert issuer_identifier("HTTP://as.example:80/") == "http://as.example"
    assert issuer_identifier("http://as.example:8080") == "http://as.example:8080"
    assert issuer_identifier("https://[::1]:443/x") == "https://[::1]/x"


def test_same_issuer_needs_two_issuers() -> None:
    assert same_issuer("https://as.example/", "HTTPS://AS.example:443")
    assert not same_issuer("https://as.example", "https://other.example")
    assert not same_issuer(None, "https://as.example")
    assert not same_issuer("https://as.example", None)
    assert not same_issuer(None, None)
    assert not same_issuer("not an issuer", "not an issuer")  # no identifier, no match


def test_the_audiences_of_an_assertion_are_read_without_its_signature() -> None:
    assert assertion_audiences(signed({"aud": "https://as.example"})) == ["https://as.example"]
    assert assertion_audiences(signed({"aud": ["a", 7, "b"]})) == ["a", "b"]
    assert assertion_audiences(signed({"sub": "x"})) == []
    assert assertion_audiences("not.a.jwt") == []


def test_a_private_key_stays_out_of_repr() -> None:
    key = private_key()
    assert repr(key) == "PrivateKey(algorithm='ES256', kid=None)"
    assert "PRIVATE KEY" not in repr(key)
    assert key == PrivateKey(pem=key.pem, algorithm="ES256")
    made: Any = PrivateKey
    with pytest.raises(TypeError, match="positional"):
        made(key.pem)  # keyword-only: a PEM is never taken for another field


@pytest.mark.parametrize("method", ["none", "client_secret_basic", "client_secret_post"])
def test_a_private_key_is_used_only_by_private_key_jwt(method: str) -> None:
    registration = ClientRegistration(client_id="app", token_endpoint_auth_method=method)
    sent: dict[str, str] = {}
    headers = authenticate_client(
        sent, registration, assertion_audience="https://as", private_key=private_key()
    )
    assert (sent, headers) == ({"client_id": "app"}, {})


@pytest.mark.parametrize(
    ("method", "secret", "form", "basic"),
    [
        ("client_secret_basic", "s e/c", {}, True),
        ("client_secret_post", "s e/c", {"client_id": "app", "client_secret": "s e/c"}, False),
        ("client_secret_basic", None, {"client_id": "app"}, False),  # no secret: public
        ("client_secret_post", None, {"client_id": "app"}, False),
        ("none", "s e/c", {"client_id": "app"}, False),  # a secret but method none: unsent
        ("private_key_jwt", "s e/c", {"client_id": "app"}, False),  # no key given
    ],
)
def test_client_authentication_sends_exactly_what_the_method_says(
    method: str, secret: str | None, form: dict[str, str], basic: bool
) -> None:
    registration = ClientRegistration(
        client_id="app", client_secret=secret, token_endpoint_auth_method=method
    )
    sent: dict[str, str] = {"grant_type": "client_credentials"}
    headers = authenticate_client(sent, registration, assertion_audience="https://as")
    assert sent == {"grant_type": "client_credentials", **form}
    expected = "Basic " + base64.b64encode(b"app:s%20e%2Fc").decode() if basic else None
    assert headers.get("authorization") == expected
    assert len(headers) == (1 if basic else 0)


def test_a_private_key_jwt_assertion_is_for_the_token_endpoints_issuer() -> None:
    key = private_key()
    registration = ClientRegistration(client_id="app", token_endpoint_auth_method="private_key_jwt")
    sent: dict[str, str] = {}
    headers = authenticate_client(
        sent, registration, assertion_audience="https://as", private_key=key
    )
    assert headers == {}
    assert sent["client_id"] == "app"
    assert sent["client_assertion_type"] == CLIENT_ASSERTION_TYPE
    public = (
        serialization.load_pem_private_key(key.pem.encode(), None)
        .public_key()
        .public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
    )
    claims = jwt.decode(sent["client_assertion"], public, ["ES256"], audience="https://as")
    assert claims["iss"] == claims["sub"] == "app"
    assert claims["exp"] - claims["iat"] == 60


class Documents(Fetcher):
    """Answers GETs from ``documents`` (404 for any other URL), recording each URL."""

    def __init__(self, documents: dict[str, dict[str, Any]]) -> None:
        super().__init__()
        self.documents = documents
        self.asked: list[str] = []

    async def get(self, url: str, headers: Mapping[str, str] | None = None) -> JsonResponse:
        self.asked.append(url)
        document = self.documents.get(url)
        if document is None:
            return JsonResponse(404, {}, b"")
        return JsonResponse(200, {}, json.dumps(document).encode())


LISTED = {"authorization_servers": ["https://first.example", "https://asked.example"]}


def discovered(issuer: str = "https://asked.example", *, own: bool = True) -> Discovery:
    return Discovery(
        resource="https://mcp.example/mcp",
        issuer=issuer,
        metadata={"issuer": issuer, "token_endpoint": f"{issuer}/token"},
        resource_metadata=LISTED,
        metadata_from_issuer=own,
    )


async def test_a_refusal_names_the_server_the_mcp_server_asked_for() -> None:
    # Discovery settled on the second listed server: the refusal names it, not the first.
    with pytest.raises(UntrustedAuthorizationServer) as refused:
        await trusted_destination(
            Documents({}),
            discovered(),
            configured=None,
            credential="workload token",
            secret=None,
            owner="WorkloadIdentity",
        )
    assert refused.value.authorization_server == "https://asked.example"
    assert "the workload token names no server" in str(refused.value)
    with pytest.raises(UntrustedAuthorizationServer) as refused:
        await trusted_destination(
            Documents({}),
            discovered("https://unlisted.example"),
            configured=None,
            credential="workload token",
            secret=None,
            owner="WorkloadIdentity",
        )
    assert refused.value.authorization_server == "https://first.example"


async def test_the_issuers_own_metadata_is_not_fetched_again() -> None:
    fetcher = Documents({})
    found = discovered()
    assert await at_issuer(fetcher, found, "https://asked.example") is found
    assert fetcher.asked == []


async def test_a_chosen_server_without_metadata_of_its_own_is_refused() -> None:
    # The MCP server's own (2025-03-26) metadata named the issuer; the issuer publishes
    # none: its token endpoint is unknown, and the one the MCP server named is not used.
    fetcher = Documents({})
    found = discovered(own=False)
    assert await at_issuer(fetcher, found, "https://asked.example") is None
    assert fetcher.asked  # it was looked for at the issuer
    with pytest.raises(UntrustedAuthorizationServer, match="publishes no metadata"):
        await trusted_destination(
            fetcher,
            found,
            configured="https://asked.example",
            credential="client secret",
            secret="the client secret",
            owner="ClientCredentials",
        )
    metadata = {"issuer": "https://asked.example", "token_endpoint": "https://asked.example/t"}
    served = Documents({"https://asked.example/.well-known/oauth-authorization-server": metadata})
    fetched = await at_issuer(served, found, "https://asked.example")
    assert fetched is not None
    assert fetched.endpoint("token_endpoint") == "https://asked.example/t"


async def test_a_refresh_goes_only_where_tokens_and_registration_agree() -> None:
    found = discovered()
    tokens = TokenSet(access_token="at", refresh_token="rt", issuer="https://asked.example")
    agreeing = StoredAuth(
        tokens=tokens,
        registration=ClientRegistration(client_id="app", issuer="https://asked.example/"),
    )
    assert (await home_of_tokens(Documents({}), found, agreeing)) is found
    assert (await home_of_tokens(Documents({}), found, StoredAuth(tokens=tokens))) is found
    # Registered at one listed server, tokens from another: nothing is sent anywhere.
    split = StoredAuth(
        tokens=tokens,
        registration=ClientRegistration(client_id="app", issuer="https://first.example"),
    )
    with pytest.raises(AuthorizationServerChanged, match="their registration names another"):
        await home_of_tokens(Documents({}), found, split)
    unsaid = StoredAuth(tokens=TokenSet(access_token="at", refresh_token="rt"))
    with pytest.raises(AuthorizationServerChanged, match="they do not say which"):
        await home_of_tokens(Documents({}), found, unsaid)
    # The issuer publishes no metadata of its own: the refresh token is not sent.
    with pytest.raises(AuthorizationFailed, match="publishes no metadata: its token endpoint"):
        await home_of_tokens(Documents({}), discovered(own=False), StoredAuth(tokens=tokens))
