"""Workload identity (SEP-1933): the workload's JWT, read afresh for every token request
(a file the platform rotates in place, or a function), refused early when it expired.
The grant itself runs against the conformance suite's mock (``auth/wif-jwt-bearer`` in
tests/conformance) and is pinned here by its form."""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import jwt
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

from trimcp.auth import (
    AuthorizationFailed,
    AuthorizationServerChanged,
    ClientCredentials,
    EnterpriseManaged,
    PrivateKey,
    TokenSet,
    UntrustedAuthorizationServer,
    WorkloadIdentity,
)
from trimcp.auth.discovery import Discovery
from trimcp.auth.fetch import Fetcher, JsonResponse
from trimcp.auth.grants import JWT_BEARER
from trimcp.auth.tokens import ClientRegistration, StoredAuth


def workload_jwt(subject: str, lifetime: float = 600) -> str:
    now = int(time.time())
    claims = {
        "iss": "https://k8s.example",
        "sub": subject,
        "aud": "https://as.example.com",  # the authorization server it is for (FOUND)
        "exp": now + int(lifetime),
    }
    return jwt.encode(claims, "not-checked-by-the-client-" * 2, algorithm="HS256")


async def test_a_token_file_is_read_again_for_every_request(tmp_path: Path) -> None:
    path = tmp_path / "token"
    path.write_text(workload_jwt("first") + "\n")
    client = WorkloadIdentity(token_file=path)
    first = await client.workload_token()
    path.write_text(workload_jwt("rotated"))  # the platform rotates it in place
    second = await client.workload_token()
    assert jwt.decode(first, options={"verify_signature": False})["sub"] == "first"
    assert jwt.decode(second, options={"verify_signature": False})["sub"] == "rotated"


async def test_a_token_function_sync_or_async() -> None:
    tokens = iter([workload_jwt("a"), workload_jwt("b")])

    async def current() -> str:
        return next(tokens)

    client = WorkloadIdentity(token=current)
    assert await client.workload_token() != await client.workload_token()
    assert await WorkloadIdentity(token=lambda: workload_jwt("c")).workload_token()


async def test_an_expired_missing_or_malformed_token_is_refused_before_sending(
    tmp_path: Path,
) -> None:
    with pytest.raises(AuthorizationFailed, match=r"expired .* rotates it"):
        await WorkloadIdentity(token=workload_jwt("old", lifetime=-60)).workload_token()
    with pytest.raises(AuthorizationFailed, match="cannot read the workload token"):
        await WorkloadIdentity(token_file=tmp_path / "absent").workload_token()
    with pytest.raises(AuthorizationFailed, match="not a JWT"):
        await WorkloadIdentity(token="opaque").workload_token()
    with pytest.raises(ValueError, match="exactly one"):
        WorkloadIdentity()


class Recorded(Fetcher):
    """A fetcher whose token endpoint answers from a script and records each form."""

    def __init__(self, answer: bytes, status: int = 200) -> None:
        super().__init__()
        self.forms: list[dict[str, str]] = []
        self.answer = answer
        self.status = status

    async def post_form(
        self, url: str, form: Mapping[str, str], headers: Mapping[str, str] | None = None
    ) -> JsonResponse:
        self.forms.append(dict(form))
        return JsonResponse(self.status, {}, self.answer)


FOUND = Discovery(
    resource="https://mcp.example.com/mcp",
    issuer="https://as.example.com",
    metadata={"issuer": "https://as.example.com", "token_endpoint": "https://as.example.com/t"},
)


async def test_the_grant_and_a_refusal_that_is_not_retried() -> None:
    token = workload_jwt("w")
    fetcher = Recorded(b'{"access_token": "at", "token_type": "Bearer"}')
    stored = await WorkloadIdentity(token=token, client_id="wl").obtain(fetcher, FOUND, "mcp", None)
    assert stored.tokens is not None
    assert stored.tokens.access_token == "at"
    assert fetcher.forms == [
        {
            "grant_type": JWT_BEARER,
            "assertion": token,
            "resource": "https://mcp.example.com/mcp",
            "scope": "mcp",
            "client_id": "wl",
        }
    ]
    refusing = Recorded(b'{"error": "invalid_grant", "error_description": "untrusted"}', 400)
    with pytest.raises(AuthorizationFailed, match="invalid_grant: untrusted"):
        await WorkloadIdentity(token=token).obtain(refusing, FOUND, None, None)
    assert len(refusing.forms) == 1
    assert "client_id" not in refusing.forms[0]


def unsigned(claims: dict[str, Any]) -> str:
    return jwt.encode(claims, "not-checked-by-the-client-" * 2, algorithm="HS256")


@pytest.mark.parametrize(
    "token",
    [
        unsigned({"sub": "w"}),  # no exp: the authorization server decides
        unsigned({"sub": "w", "exp": True}),  # not a time: the server decides
        unsigned({"sub": "w", "exp": "1"}),
        "not-base64.at-all.really",  # not readable here: sent, the server decides
    ],
)
async def test_only_a_readable_past_exp_is_refused_early(token: str) -> None:
    assert await WorkloadIdentity(token=token).workload_token() == token


async def test_a_token_expiring_now_is_refused_naming_its_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "token"
    path.write_text(unsigned({"sub": "w", "exp": 1_000_000}))
    monkeypatch.setattr(time, "time", lambda: 1_000_000.0)
    with pytest.raises(AuthorizationFailed, match=f"workload token in {path} expired 0 s ago"):
        await WorkloadIdentity(token_file=path).workload_token()
    monkeypatch.setattr(time, "time", lambda: 999_999.0)
    assert await WorkloadIdentity(token_file=path).workload_token()


class Headers(Recorded):
    """:class:`Recorded`, keeping each request's headers too."""

    def __init__(self, answer: bytes) -> None:
        super().__init__(answer)
        self.headers: list[dict[str, str]] = []

    async def post_form(
        self, url: str, form: Mapping[str, str], headers: Mapping[str, str] | None = None
    ) -> JsonResponse:
        self.headers.append(dict(headers or {}))
        return await super().post_form(url, form, headers)


GOOD = b'{"access_token": "at", "token_type": "Bearer"}'


async def test_a_workload_client_authenticates_as_its_credentials_say() -> None:
    token = workload_jwt("w")
    issuer = FOUND.issuer
    with_secret = Headers(GOOD)
    client = WorkloadIdentity(
        token=token, client_id="wl", client_secret="s", authorization_server=issuer
    )
    stored = await client.obtain(with_secret, FOUND, None, None)
    assert with_secret.headers[0]["authorization"].startswith("Basic ")
    assert "client_secret" not in with_secret.forms[0]
    assert stored.registration is not None
    assert stored.registration.token_endpoint_auth_method == "client_secret_basic"
    key = ec.generate_private_key(ec.SECP256R1())
    pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    ).decode()
    with_key = Headers(GOOD)
    client = WorkloadIdentity(
        token=token,
        client_id="wl",
        private_key=PrivateKey(pem=pem, algorithm="ES256"),
        authorization_server=issuer,
    )
    await client.obtain(with_key, FOUND, None, None)
    assert with_key.forms[0]["client_assertion_type"].endswith("client-assertion-type:jwt-bearer")
    assert "authorization" not in with_key.headers[0]
    public = Headers(GOOD)
    await WorkloadIdentity(token=token, client_id="wl").obtain(public, FOUND, None, None)
    assert (public.forms[0]["client_id"], public.headers[0]) == ("wl", {})


async def test_a_server_without_a_token_endpoint_is_refused() -> None:
    bare = Discovery(
        resource=FOUND.resource, issuer=FOUND.issuer, metadata={"issuer": FOUND.issuer}
    )
    fetcher = Recorded(GOOD)
    with pytest.raises(AuthorizationFailed, match="publishes no token endpoint"):
        await WorkloadIdentity(token=workload_jwt("w")).obtain(fetcher, bare, None, None)
    client = ClientCredentials(
        client_id="bot", client_secret="s", authorization_server=FOUND.issuer
    )
    with pytest.raises(AuthorizationFailed, match="publishes no token endpoint"):
        await client.obtain(fetcher, bare, None, None)
    assert fetcher.forms == []


@pytest.mark.parametrize(
    ("supported", "method"),
    [
        (None, "client_secret_basic"),
        (["private_key_jwt", "client_secret_basic"], "client_secret_basic"),
        (["client_secret_post"], "client_secret_post"),
        (["private_key_jwt", "client_secret_post", "client_secret_basic"], "client_secret_basic"),
        (["private_key_jwt"], "client_secret_basic"),  # none it speaks: the default
        ("client_secret_post", "client_secret_basic"),  # not a list: not read
    ],
)
async def test_a_client_secret_goes_the_way_the_server_supports(
    supported: Any, method: str
) -> None:
    metadata = {**FOUND.metadata, "token_endpoint_auth_methods_supported": supported}
    found = Discovery(resource=FOUND.resource, issuer=FOUND.issuer, metadata=metadata)
    fetcher = Headers(GOOD)
    client = WorkloadIdentity(
        token=workload_jwt("w"),
        client_id="wl",
        client_secret="s",
        authorization_server=FOUND.issuer,
    )
    stored = await client.obtain(fetcher, found, None, None)
    assert stored.registration is not None
    assert stored.registration.token_endpoint_auth_method == method
    posted = "client_secret" in fetcher.forms[0]
    assert posted == (method == "client_secret_post")
    assert ("authorization" in fetcher.headers[0]) == (not posted)


async def test_a_workload_clients_private_key_needs_the_setting() -> None:
    key = ec.generate_private_key(ec.SECP256R1())
    pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    ).decode()
    client = WorkloadIdentity(
        token=workload_jwt("w"),  # its aud names FOUND's issuer
        client_id="wl",
        private_key=PrivateKey(pem=pem, algorithm="ES256"),
    )
    fetcher = Recorded(GOOD)
    with pytest.raises(UntrustedAuthorizationServer, match="the client's private key names no"):
        await client.obtain(fetcher, FOUND, None, None)
    assert fetcher.forms == []


def stored_from(issuer: str | None) -> StoredAuth:
    return StoredAuth(
        tokens=TokenSet(access_token="old", refresh_token="rt", issuer=issuer),
        registration=ClientRegistration(
            client_id="bot",
            client_secret="s",
            token_endpoint_auth_method="client_secret_basic",
            issuer=issuer,
        ),
    )


async def test_a_refresh_goes_only_to_the_configured_issuer() -> None:
    client = ClientCredentials(
        client_id="bot", client_secret="s", authorization_server=FOUND.issuer
    )
    other = Discovery(
        resource=FOUND.resource,
        issuer="https://other.example",
        metadata={"issuer": "https://other.example", "token_endpoint": "https://other.example/t"},
    )
    fetcher = Recorded(GOOD)
    said = r"issued by https://other.example, not by authorization_server='https://as.example.com'"
    with pytest.raises(AuthorizationServerChanged, match=said):
        await client.refresh(fetcher, other, stored_from("https://other.example"))
    with pytest.raises(AuthorizationServerChanged, match="issued by a server they do not name"):
        await client.refresh(fetcher, FOUND, stored_from(None))
    assert fetcher.forms == []  # nothing was sent
    refreshed = await client.refresh(fetcher, FOUND, stored_from(FOUND.issuer + "/"))
    assert refreshed.tokens is not None
    assert refreshed.tokens.access_token == "at"
    assert fetcher.forms[0]["grant_type"] == "refresh_token"


async def test_without_the_setting_a_refresh_goes_to_the_tokens_issuer() -> None:
    client = WorkloadIdentity(token=workload_jwt("w"), client_id="bot")
    fetcher = Recorded(GOOD)
    refreshed = await client.refresh(fetcher, FOUND, stored_from(FOUND.issuer))
    assert refreshed.tokens is not None
    assert fetcher.forms[0]["refresh_token"] == "rt"


def private_key() -> PrivateKey:
    key = ec.generate_private_key(ec.SECP256R1())
    pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    ).decode()
    return PrivateKey(pem=pem, algorithm="ES256")


def test_client_credentials_take_exactly_one_credential() -> None:
    with pytest.raises(ValueError, match="exactly one of client_secret= or private_key="):
        ClientCredentials(client_id="bot", client_secret="s", private_key=private_key())
    with pytest.raises(ValueError, match="exactly one of client_secret= or private_key="):
        ClientCredentials(client_id="bot")


async def test_a_refusal_names_the_credential_it_keeps() -> None:
    other = "https://other.example"
    for client, credential in [
        (ClientCredentials(client_id="bot", private_key=private_key()), "private-key assertion"),
        (ClientCredentials(client_id="bot", client_secret="s"), "client secret"),
        (
            ClientCredentials(client_id="bot", client_secret="s", authorization_server=other),
            "client secret",
        ),
    ]:
        with pytest.raises(
            UntrustedAuthorizationServer, match=f"refused to send the {credential} "
        ):
            await client.obtain(Recorded(GOOD), FOUND, None, None)


class Routes(Fetcher):
    """Answers form POSTs by URL from ``answers``, recording (url, form, headers)."""

    def __init__(self, answers: dict[str, bytes]) -> None:
        super().__init__()
        self.answers = answers
        self.sent: list[tuple[str, dict[str, str], dict[str, str]]] = []

    async def post_form(
        self, url: str, form: Mapping[str, str], headers: Mapping[str, str] | None = None
    ) -> JsonResponse:
        self.sent.append((url, dict(form), dict(headers or {})))
        return JsonResponse(200, {}, self.answers[url])


IDP = "https://idp.example/token"


def id_jag(audience: str) -> bytes:
    grant = unsigned({"aud": audience, "sub": "user"})
    return json.dumps({"access_token": grant, "token_type": "N_A"}).encode()


async def test_a_configured_id_jag_is_checked_before_the_identity_provider_is_asked() -> None:
    # Set to another issuer than the MCP server names: refused before anything is sent,
    # with or without a client secret.
    for secret in (None, "s"):
        fetcher = Routes({IDP: id_jag(FOUND.issuer), "https://as.example.com/t": GOOD})
        client = EnterpriseManaged(
            id_token="idt",
            idp_token_endpoint=IDP,
            client_id="app",
            client_secret=secret,
            authorization_server="https://other.example",
        )
        with pytest.raises(UntrustedAuthorizationServer, match="refused to send the ID-JAG"):
            await client.obtain(fetcher, FOUND, None, None)
        assert fetcher.sent == []
    # A client secret without the setting names no server: refused before the IdP too.
    fetcher = Routes({IDP: id_jag(FOUND.issuer)})
    client = EnterpriseManaged(
        id_token="idt", idp_token_endpoint=IDP, client_id="a", client_secret="s"
    )
    with pytest.raises(UntrustedAuthorizationServer, match="the client secret names no server"):
        await client.obtain(fetcher, FOUND, None, None)
    assert fetcher.sent == []


async def test_an_id_jag_exchange_authenticates_at_each_server_as_configured() -> None:
    answers = {IDP: id_jag(FOUND.issuer), "https://as.example.com/t": GOOD}
    fetcher = Routes(answers)
    client = EnterpriseManaged(
        id_token="idt",
        idp_token_endpoint=IDP,
        client_id="app",
        client_secret="s",
        idp_client_id="idp-app",
        authorization_server=FOUND.issuer,
    )
    stored = await client.obtain(fetcher, FOUND, None, None)
    (idp_url, idp_form, idp_headers), (as_url, as_form, as_headers) = fetcher.sent
    assert (idp_url, idp_form["client_id"], idp_headers) == (IDP, "idp-app", {})
    assert as_url == "https://as.example.com/t"
    assert as_headers["authorization"].startswith("Basic ")
    assert stored.registration is not None
    assert stored.registration.token_endpoint_auth_method == "client_secret_basic"
    # No idp_client_id: the IdP request names no client; no secret: "none" at the AS.
    fetcher = Routes(answers)
    client = EnterpriseManaged(id_token="idt", idp_token_endpoint=IDP, client_id="app")
    stored = await client.obtain(fetcher, FOUND, None, None)
    (_, idp_form, _), (_, as_form, as_headers) = fetcher.sent
    assert "client_id" not in idp_form
    assert (as_form["client_id"], as_headers) == ("app", {})
    assert stored.registration is not None
    assert stored.registration.token_endpoint_auth_method == "none"


async def test_an_id_jag_for_a_server_without_a_token_endpoint_is_not_sent() -> None:
    bare = Discovery(
        resource=FOUND.resource, issuer=FOUND.issuer, metadata={"issuer": FOUND.issuer}
    )
    fetcher = Routes({IDP: id_jag(FOUND.issuer)})
    client = EnterpriseManaged(id_token="idt", idp_token_endpoint=IDP, client_id="app")
    with pytest.raises(AuthorizationFailed, match="publishes no token endpoint"):
        await client.obtain(fetcher, bare, None, None)
    assert [url for url, _, _ in fetcher.sent] == [IDP]
