"""The authorization extensions: machine clients and enterprise-managed authorization.

- :class:`ClientCredentials` (``io.modelcontextprotocol/oauth-client-credentials``): no
  user; the client gets tokens with the ``client_credentials`` grant, authenticated by a
  client secret (``client_secret_basic``/``_post``) or a private key (``private_key_jwt``,
  RFC 7523).
- :class:`EnterpriseManaged` (enterprise-managed authorization, ID-JAG): the user's
  identity provider issues an Identity Assertion JWT Authorization Grant for the MCP
  server's authorization server (RFC 8693 token exchange of the user's ID token), which
  the client trades for an access token (RFC 7523 JWT bearer grant).
- :class:`WorkloadIdentity` (workload identity federation, SEP-1933): the workload's own
  platform-issued JWT is the RFC 7523 JWT-bearer grant.

Both reuse :class:`~trimcp.auth.OAuthClient`'s discovery, single-flight and storage; only
how a token is obtained differs.
"""

from __future__ import annotations

import inspect
import os
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import trio

from trimcp.auth.client import OAuthClient
from trimcp.auth.discovery import Discovery
from trimcp.auth.errors import AuthorizationFailed
from trimcp.auth.fetch import Fetcher
from trimcp.auth.grants import (
    JWT_BEARER,
    TOKEN_EXCHANGE,
    PrivateKey,
    authenticate_client,
    token_request,
)
from trimcp.auth.tokens import ClientRegistration, StoredAuth

ID_TOKEN_TYPE = "urn:ietf:params:oauth:token-type:id_token"
ID_JAG_TYPE = "urn:ietf:params:oauth:token-type:id-jag"


def _secret_method(found: Discovery, default: str = "client_secret_basic") -> str:
    supported = found.metadata.get("token_endpoint_auth_methods_supported")
    if isinstance(supported, list) and default not in supported:
        for method in ("client_secret_basic", "client_secret_post"):
            if method in supported:
                return method
    return default


class ClientCredentials(OAuthClient):
    """Tokens by the ``client_credentials`` grant (no user). Give ``client_secret`` or
    ``private_key`` (a :class:`~trimcp.auth.grants.PrivateKey`); other options as for
    :class:`OAuthClient` (``scopes``, ``store``, ``timeout``...)."""

    def __init__(
        self,
        *,
        client_id: str,
        client_secret: str | None = None,
        private_key: PrivateKey | None = None,
        **options: Any,
    ) -> None:
        if (client_secret is None) == (private_key is None):
            raise ValueError("give exactly one of client_secret= or private_key=")
        super().__init__(
            client_id=client_id, client_secret=client_secret, private_key=private_key, **options
        )

    async def obtain(
        self, fetcher: Fetcher, found: Discovery, scope: str | None, stored: StoredAuth | None
    ) -> StoredAuth:
        token_endpoint = found.endpoint("token_endpoint")
        if token_endpoint is None:
            raise AuthorizationFailed(f"{found.issuer} publishes no token endpoint")
        assert self.client_id is not None
        method = "private_key_jwt" if self.private_key is not None else _secret_method(found)
        registration = ClientRegistration(
            client_id=self.client_id,
            client_secret=self.client_secret,
            token_endpoint_auth_method=method,
            issuer=found.issuer,
        )
        form = {"grant_type": "client_credentials", "resource": found.resource}
        if scope:
            form["scope"] = scope
        headers = authenticate_client(
            form, registration, assertion_audience=found.issuer, private_key=self.private_key
        )
        tokens = await token_request(fetcher, token_endpoint, form, headers)
        return StoredAuth(tokens=tokens, registration=registration)


#: ``async def id_token() -> str``: the user's current ID token from the identity provider.
IdTokenSource = Callable[[], Awaitable[str]]


class EnterpriseManaged(OAuthClient):
    """Enterprise-managed authorization (ID-JAG; see the module docstring).

    ``id_token``: the user's ID token (a string, or an async function returning a fresh
    one). ``idp_token_endpoint``: the identity provider's token endpoint, where
    ``idp_client_id`` (and ``idp_client_secret`` if it has one) identify this client.
    ``client_id`` / ``client_secret``: this client at the MCP server's authorization server.
    """

    def __init__(
        self,
        *,
        id_token: str | IdTokenSource,
        idp_token_endpoint: str,
        client_id: str,
        client_secret: str | None = None,
        idp_client_id: str | None = None,
        idp_client_secret: str | None = None,
        **options: Any,
    ) -> None:
        super().__init__(client_id=client_id, client_secret=client_secret, **options)
        self._id_token = id_token
        self.idp_token_endpoint = idp_token_endpoint
        self.idp_client_id = idp_client_id
        self.idp_client_secret = idp_client_secret

    async def _current_id_token(self) -> str:
        if isinstance(self._id_token, str):
            return self._id_token
        return await self._id_token()

    async def obtain(
        self, fetcher: Fetcher, found: Discovery, scope: str | None, stored: StoredAuth | None
    ) -> StoredAuth:
        token_endpoint = found.endpoint("token_endpoint")
        if token_endpoint is None:
            raise AuthorizationFailed(f"{found.issuer} publishes no token endpoint")
        # 1. At the identity provider: the ID token for an ID-JAG aimed at the AS.
        exchange = {
            "grant_type": TOKEN_EXCHANGE,
            "subject_token": await self._current_id_token(),
            "subject_token_type": ID_TOKEN_TYPE,
            "requested_token_type": ID_JAG_TYPE,
            "audience": found.issuer,
            "resource": found.resource,
        }
        if scope:
            exchange["scope"] = scope
        idp_headers: dict[str, str] = {}
        if self.idp_client_id is not None:
            idp = ClientRegistration(
                client_id=self.idp_client_id,
                client_secret=self.idp_client_secret,
                token_endpoint_auth_method="client_secret_basic"
                if self.idp_client_secret
                else "none",
            )
            idp_headers = authenticate_client(exchange, idp, assertion_audience="")
        grant = await token_request(fetcher, self.idp_token_endpoint, exchange, idp_headers)
        # 2. At the MCP server's authorization server: the ID-JAG for an access token.
        assert self.client_id is not None
        registration = ClientRegistration(
            client_id=self.client_id,
            client_secret=self.client_secret,
            token_endpoint_auth_method=_secret_method(found)
            if self.client_secret is not None
            else "none",
            issuer=found.issuer,
        )
        form = {"grant_type": JWT_BEARER, "assertion": grant.access_token}
        if scope:
            form["scope"] = scope
        headers = authenticate_client(form, registration, assertion_audience=found.issuer)
        tokens = await token_request(fetcher, token_endpoint, form, headers)
        return StoredAuth(tokens=tokens, registration=registration)


#: ``def token() -> str`` or ``async def token() -> str``: the workload's current JWT.
WorkloadTokenSource = Callable[[], "Awaitable[str] | str"]


class WorkloadIdentity(OAuthClient):
    """Workload identity federation (MCP SEP-1933): the RFC 7523 JWT-bearer grant with
    the JWT the platform gives this workload (a Kubernetes service-account token, a SPIFFE
    JWT-SVID, a cloud instance token) as the ``assertion``; no user, no stored secret.

    Give exactly one of ``token_file`` (a path, read again for every token request, so a
    token the platform rotates in place is picked up) or ``token`` (the JWT, or a
    function, sync or async, returning the current one; called for every token request).
    ``client_id`` (+ ``client_secret`` or ``private_key``) when the authorization server
    wants the client named too. A refused grant (``invalid_grant``, ``invalid_scope``,
    ``unauthorized_client``...) is reported as :class:`AuthorizationFailed`, never retried
    with another grant. Other options as for :class:`OAuthClient` (``scopes``, ``dpop``...).
    """

    def __init__(
        self,
        *,
        token_file: str | os.PathLike[str] | None = None,
        token: str | WorkloadTokenSource | None = None,
        client_id: str | None = None,
        client_secret: str | None = None,
        private_key: PrivateKey | None = None,
        **options: Any,
    ) -> None:
        if (token_file is None) == (token is None):
            raise ValueError("give exactly one of token_file= or token=")
        super().__init__(
            client_id=client_id, client_secret=client_secret, private_key=private_key, **options
        )
        self.token_file = Path(token_file) if token_file is not None else None
        self._token = token

    async def workload_token(self) -> str:
        """The workload's current JWT (read now). Raises :class:`AuthorizationFailed`
        when it cannot be read or has expired (the platform should have rotated it)."""
        if self.token_file is not None:
            try:
                text = await trio.Path(self.token_file).read_text(encoding="utf-8")
            except OSError as exc:
                raise AuthorizationFailed(
                    f"cannot read the workload token {self.token_file}: {exc.strerror}"
                ) from None
        elif callable(self._token):
            value = self._token()
            text = await value if inspect.isawaitable(value) else value
        else:
            text = self._token or ""
        text = str(text).strip()
        if text.count(".") != 2:
            raise AuthorizationFailed("the workload token is not a JWT (header.payload.signature)")
        expires = _unverified_exp(text)
        if expires is not None and expires <= time.time():
            where = f" in {self.token_file}" if self.token_file is not None else ""
            raise AuthorizationFailed(
                f"the workload token{where} expired {time.time() - expires:.0f} s ago: check "
                "that the platform rotates it"
            )
        return text

    async def obtain(
        self, fetcher: Fetcher, found: Discovery, scope: str | None, stored: StoredAuth | None
    ) -> StoredAuth:
        token_endpoint = found.endpoint("token_endpoint")
        if token_endpoint is None:
            raise AuthorizationFailed(f"{found.issuer} publishes no token endpoint")
        form = {
            "grant_type": JWT_BEARER,
            "assertion": await self.workload_token(),
            "resource": found.resource,
        }
        if scope:
            form["scope"] = scope
        headers: dict[str, str] = {}
        registration = None
        if self.client_id is not None:
            method = (
                "private_key_jwt"
                if self.private_key is not None
                else _secret_method(found)
                if self.client_secret is not None
                else "none"
            )
            registration = ClientRegistration(
                client_id=self.client_id,
                client_secret=self.client_secret,
                token_endpoint_auth_method=method,
                issuer=found.issuer,
            )
            headers = authenticate_client(
                form, registration, assertion_audience=found.issuer, private_key=self.private_key
            )
        tokens = await token_request(fetcher, token_endpoint, form, headers)
        return StoredAuth(tokens=tokens, registration=registration)


def _unverified_exp(token: str) -> float | None:
    # Only to say early that the token expired; the authorization server verifies it.
    import jwt

    try:
        claims = jwt.decode(token, options={"verify_signature": False})
    except jwt.PyJWTError:
        return None
    exp = claims.get("exp")
    return float(exp) if isinstance(exp, int | float) and not isinstance(exp, bool) else None
