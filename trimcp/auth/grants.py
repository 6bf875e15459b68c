"""Token endpoint requests: client authentication and the grants (client side).

Client authentication (RFC 6749 2.3, RFC 7523): ``none`` (``client_id`` in the form),
``client_secret_basic``, ``client_secret_post`` and ``private_key_jwt`` (a short-lived
JWT assertion signed with the client's key by PyJWT).
"""

from __future__ import annotations

import logging
import secrets
import time
from collections.abc import Mapping
from typing import Any

import attrs

from trimcp._record import Record
from trimcp.auth.errors import AuthorizationFailed
from trimcp.auth.fetch import Fetcher, FetchError
from trimcp.auth.introspection import basic_auth
from trimcp.auth.tokens import ClientRegistration, TokenSet

logger = logging.getLogger("trimcp.auth")

JWT_BEARER = "urn:ietf:params:oauth:grant-type:jwt-bearer"
TOKEN_EXCHANGE = "urn:ietf:params:oauth:grant-type:token-exchange"
CLIENT_ASSERTION_TYPE = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"


@attrs.frozen(kw_only=True, repr=False, eq=False)
class PrivateKey(Record):
    """A client's signing key for ``private_key_jwt``: a PEM private key, its algorithm
    (``RS256``, ``ES256``...) and optional ``kid``."""

    pem: str = attrs.field(repr=False)
    algorithm: str = "RS256"
    kid: str | None = None


def client_assertion(client_id: str, audience: str, key: PrivateKey, lifetime: float = 60) -> str:
    """An RFC 7523 client assertion: iss = sub = client_id, aud = the token endpoint's
    issuer, a fresh ``jti``, valid ``lifetime`` seconds. Signed by PyJWT."""
    from trimcp.auth.verifiers import require_jwt_library

    require_jwt_library()
    import jwt

    now = int(time.time())
    claims = {
        "iss": client_id,
        "sub": client_id,
        "aud": audience,
        "iat": now,
        "exp": now + int(lifetime),
        "jti": secrets.token_urlsafe(16),
    }
    headers = {"kid": key.kid} if key.kid else None
    return jwt.encode(claims, key.pem, algorithm=key.algorithm, headers=headers)


def authenticate_client(
    form: dict[str, str],
    registration: ClientRegistration,
    *,
    assertion_audience: str,
    private_key: PrivateKey | None = None,
) -> dict[str, str]:
    """Add the client's authentication to a token request; returns extra headers."""
    method = registration.token_endpoint_auth_method
    headers: dict[str, str] = {}
    if method == "client_secret_basic" and registration.client_secret is not None:
        headers["authorization"] = basic_auth(registration.client_id, registration.client_secret)
    elif method == "client_secret_post" and registration.client_secret is not None:
        form["client_id"] = registration.client_id
        form["client_secret"] = registration.client_secret
    elif method == "private_key_jwt" and private_key is not None:
        form["client_id"] = registration.client_id
        form["client_assertion_type"] = CLIENT_ASSERTION_TYPE
        form["client_assertion"] = client_assertion(
            registration.client_id, assertion_audience, private_key
        )
    else:
        form["client_id"] = registration.client_id
    return headers


async def token_request(
    fetcher: Fetcher,
    token_endpoint: str,
    form: Mapping[str, str],
    headers: Mapping[str, str],
    *,
    previous: TokenSet | None = None,
    issuer: str | None = None,
) -> TokenSet:
    """POST to the token endpoint; the new tokens (recording ``issuer``, the server the
    endpoint belongs to), or :class:`AuthorizationFailed` with the server's ``error`` and
    ``error_description``.

    With ``fetcher.dpop`` the request carries a DPoP proof (RFC 9449 §5) and, when the
    server answers ``use_dpop_nonce``, is sent once more with its nonce (§8)."""
    dpop = fetcher.dpop
    for attempt in (1, 2):
        extra = dict(headers)
        if dpop is not None:
            extra.update(dpop.headers("POST", token_endpoint))
        try:
            response = await fetcher.post_form(token_endpoint, form, extra)
        except FetchError as exc:
            raise AuthorizationFailed(f"the token request failed: {exc}") from None
        try:
            answer: Any = response.json()
        except FetchError:
            answer = None
        fresh = dpop is not None and dpop.remember_nonce(
            token_endpoint, response.headers.get("dpop-nonce")
        )
        wants_nonce = isinstance(answer, dict) and answer.get("error") == "use_dpop_nonce"
        if not (response.status == 400 and wants_nonce and fresh and attempt == 1):
            break
    if response.status != 200 or not isinstance(answer, dict):
        error = answer.get("error") if isinstance(answer, dict) else None
        description = answer.get("error_description") if isinstance(answer, dict) else None
        detail = f"{error}: {description}" if description else str(error or "")
        raise AuthorizationFailed(
            f"the token endpoint {token_endpoint} refused the {form.get('grant_type')} grant "
            f"(HTTP {response.status}{': ' + detail[:300] if detail else ''})"
        )
    try:
        tokens = TokenSet.from_response(answer, previous, issuer=issuer)
    except ValueError as exc:
        raise AuthorizationFailed(f"the token endpoint {token_endpoint}: {exc}") from None
    if dpop is None and tokens.token_type == "DPoP":
        raise AuthorizationFailed(
            f"the token endpoint {token_endpoint} issued a DPoP-bound token to a request "
            "without a DPoP proof: refused (it cannot be used)"
        )
    if dpop is not None and tokens.token_type != "DPoP":
        # RFC 9449 §5: a server that does not support DPoP issues a Bearer token instead;
        # it is used as one (the resource server decides whether that is enough).
        logger.info("%s issued a Bearer token to a DPoP request", token_endpoint)
    return tokens
