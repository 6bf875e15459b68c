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

All three reuse :class:`~trimcp.auth.OAuthClient`'s discovery, single-flight and storage;
only how a token is obtained differs, and where their credentials may go: only to the
authorization server set as ``authorization_server=``, or, with none set, to the one the
assertion's ``aud`` names (:class:`NonInteractiveClient`; docs/authorization.md, "Where
credentials go").
"""

from __future__ import annotations

import inspect
import os
import time
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any

import trio

from trimcp.auth.client import OAuthClient
from trimcp.auth.destinations import (
    SETTING,
    assertion_audiences,
    same_issuer,
    trusted_destination,
)
from trimcp.auth.discovery import Discovery
from trimcp.auth.errors import AuthorizationFailed, AuthorizationServerChanged
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


class NonInteractiveClient(OAuthClient):
    """What the clients without a user share: a credential the MCP server must not be
    able to redirect (docs/authorization.md, "Where credentials go").

    ``authorization_server``: the issuer identifier (``https://accounts.example.com``)
    of the one authorization server this client's credentials may be sent to. Without
    it, an assertion (a workload token, an ID-JAG) goes only to an authorization server
    its ``aud`` names, and a client secret or private key goes nowhere: a secret names
    no server. Every token request is checked, a refresh included, before anything is
    sent, and the token endpoint used is the one that issuer's own metadata names; a
    refusal is :class:`~trimcp.auth.errors.UntrustedAuthorizationServer`. ValueError
    when ``authorization_server`` is not an issuer identifier (http(s), a host, no query
    or fragment).
    """

    def __init__(self, *, authorization_server: str | None = None, **options: Any) -> None:
        super().__init__(authorization_server=authorization_server, **options)

    def _secret(self) -> str | None:
        """What goes along that names no server (a client secret or key), if anything."""
        if self.private_key is not None:
            return "the client's private key"
        if self.client_secret is not None:
            return "the client secret"
        return None

    async def destination(
        self,
        fetcher: Fetcher,
        found: Discovery,
        *,
        credential: str,
        audiences: Sequence[str] = (),
        audiences_from: str = "",
    ) -> Discovery:
        """``found`` narrowed to the authorization server ``credential`` may go to (see
        :func:`~trimcp.auth.destinations.trusted_destination`); ``audiences``: the
        issuers the credential names, ``audiences_from`` saying whose they are (for the
        refusal). Raises :class:`~trimcp.auth.errors.UntrustedAuthorizationServer`."""
        return await trusted_destination(
            fetcher,
            found,
            configured=self.authorization_server,
            audiences=audiences,
            audiences_from=audiences_from,
            credential=credential,
            secret=self._secret(),
            owner=type(self).__name__,
        )

    async def refresh(self, fetcher: Fetcher, found: Discovery, stored: StoredAuth) -> StoredAuth:
        """The refresh token (and the client's credentials) go back to the issuer that
        issued the tokens, and only if it is the configured one when one is set."""
        issued_by = stored.issuer
        configured = self.authorization_server
        if configured is not None and not same_issuer(issued_by, configured):
            raise AuthorizationServerChanged(
                f"the stored tokens were issued by {issued_by or 'a server they do not name'}, "
                f"not by {SETTING}={configured!r}: their refresh token is not sent",
                issued_by=issued_by,
                authorization_server=configured,
                mcp_server=found.resource,
            )
        found = await self.destination(
            fetcher,
            found,
            credential="refresh token",
            audiences=[issued_by] if issued_by else [],
            audiences_from="the tokens' issuer",
        )
        return await super().refresh(fetcher, found, stored)


class ClientCredentials(NonInteractiveClient):
    """Tokens by the ``client_credentials`` grant (no user). Give ``client_secret`` or
    ``private_key`` (a :class:`~trimcp.auth.grants.PrivateKey`), and
    ``authorization_server``, the issuer they are registered at: without it they are
    sent nowhere (see :class:`NonInteractiveClient`). Other options as for
    :class:`OAuthClient` (``scopes``, ``store``, ``timeout``...)."""

    def __init__(
        self,
        *,
        client_id: str,
        client_secret: str | None = None,
        private_key: PrivateKey | None = None,
        authorization_server: str | None = None,
        **options: Any,
    ) -> None:
        if (client_secret is None) == (private_key is None):
            raise ValueError("give exactly one of client_secret= or private_key=")
        super().__init__(
            client_id=client_id,
            client_secret=client_secret,
            private_key=private_key,
            authorization_server=authorization_server,
            **options,
        )

    async def obtain(
        self, fetcher: Fetcher, found: Discovery, scope: str | None, stored: StoredAuth | None
    ) -> StoredAuth:
        credential = "private-key assertion" if self.private_key is not None else "client secret"
        found = await self.destination(fetcher, found, credential=credential)
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
        tokens = await token_request(fetcher, token_endpoint, form, headers, issuer=found.issuer)
        return StoredAuth(tokens=tokens, registration=registration)


#: ``async def id_token() -> str``: the user's current ID token from the identity provider.
IdTokenSource = Callable[[], Awaitable[str]]


class EnterpriseManaged(NonInteractiveClient):
    """Enterprise-managed authorization (ID-JAG; see the module docstring).

    ``id_token``: the user's ID token (a string, or an async function returning a fresh
    one). ``idp_token_endpoint``: the identity provider's token endpoint, where
    ``idp_client_id`` (and ``idp_client_secret`` if it has one) identify this client.
    ``client_id`` / ``client_secret``: this client at the MCP server's authorization
    server. ``authorization_server``: that server's issuer; the ID-JAG is asked for it
    and sent only to it. Without it, the ID-JAG goes only to the server its ``aud``
    names (the identity provider's decision), and a ``client_secret`` goes nowhere (see
    :class:`NonInteractiveClient`).
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
        authorization_server: str | None = None,
        **options: Any,
    ) -> None:
        super().__init__(
            client_id=client_id,
            client_secret=client_secret,
            authorization_server=authorization_server,
            **options,
        )
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
        if self.authorization_server is not None or self.client_secret is not None:
            # Checked before the identity provider is asked for an ID-JAG aimed there.
            found = await self.destination(fetcher, found, credential="ID-JAG")
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
        if self.authorization_server is None:
            # Not configured: the ID-JAG goes only where the identity provider aimed it.
            found = await self.destination(
                fetcher,
                found,
                credential="ID-JAG",
                audiences=assertion_audiences(grant.access_token),
                audiences_from="the ID-JAG's aud",
            )
        token_endpoint = found.endpoint("token_endpoint")
        if token_endpoint is None:
            raise AuthorizationFailed(f"{found.issuer} publishes no token endpoint")
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
        tokens = await token_request(fetcher, token_endpoint, form, headers, issuer=found.issuer)
        return StoredAuth(tokens=tokens, registration=registration)


#: ``def token() -> str`` or ``async def token() -> str``: the workload's current JWT.
WorkloadTokenSource = Callable[[], "Awaitable[str] | str"]


class WorkloadIdentity(NonInteractiveClient):
    """Workload identity federation (MCP SEP-1933): the RFC 7523 JWT-bearer grant with
    the JWT the platform gives this workload (a Kubernetes service-account token, a SPIFFE
    JWT-SVID, a cloud instance token) as the ``assertion``; no user, no stored secret.

    Give exactly one of ``token_file`` (a path, read again for every token request, so a
    token the platform rotates in place is picked up) or ``token`` (the JWT, or a
    function, sync or async, returning the current one; called for every token request).
    ``client_id`` (+ ``client_secret`` or ``private_key``) when the authorization server
    wants the client named too. ``authorization_server``: the issuer the token is for;
    without it, the token goes only to a server its ``aud`` names, and a secret or key
    nowhere (see :class:`NonInteractiveClient`). A refused grant (``invalid_grant``,
    ``invalid_scope``, ``unauthorized_client``...) is reported as
    :class:`AuthorizationFailed`, never retried with another grant. Other options as for
    :class:`OAuthClient` (``scopes``, ``dpop``...).
    """

    def __init__(
        self,
        *,
        token_file: str | os.PathLike[str] | None = None,
        token: str | WorkloadTokenSource | None = None,
        client_id: str | None = None,
        client_secret: str | None = None,
        private_key: PrivateKey | None = None,
        authorization_server: str | None = None,
        **options: Any,
    ) -> None:
        if (token_file is None) == (token is None):
            raise ValueError("give exactly one of token_file= or token=")
        super().__init__(
            client_id=client_id,
            client_secret=client_secret,
            private_key=private_key,
            authorization_server=authorization_server,
            **options,
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
        assertion = await self.workload_token()
        found = await self.destination(
            fetcher,
            found,
            credential="workload token",
            audiences=assertion_audiences(assertion),
            audiences_from="the workload token's aud",
        )
        token_endpoint = found.endpoint("token_endpoint")
        if token_endpoint is None:
            raise AuthorizationFailed(f"{found.issuer} publishes no token endpoint")
        form = {"grant_type": JWT_BEARER, "assertion": assertion, "resource": found.resource}
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
        tokens = await token_request(fetcher, token_endpoint, form, headers, issuer=found.issuer)
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
