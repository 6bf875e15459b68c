"""Token verifiers: turn a bearer token into an :class:`AuthInfo`, or refuse it.

One small interface, :class:`TokenVerifier`: ``verify(token)`` and ``run()`` (background
work such as refreshing keys, run in the server's nursery). Three implementations:
:class:`JwtVerifier` (signed JWTs against a JWKS), :class:`~trimcp.auth.introspection.
IntrospectionVerifier` (RFC 7662) and :class:`CallableVerifier` (your own function).

JWT signatures are checked by PyJWT (the ``trimcp[auth]`` extra, with ``cryptography``);
trimcp chooses keys, algorithms and claims, and does no cryptography itself.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from typing import Any, Protocol

import trio

from trimcp.auth.errors import InvalidToken
from trimcp.auth.jwks import FetchJson, JwksCache, key_type_for
from trimcp.auth.principal import AuthInfo

#: Asymmetric JWS algorithms accepted by default (never ``none``, never HMAC: a
#: resource server must not hold the secret that mints tokens).
DEFAULT_ALGORITHMS: tuple[str, ...] = (
    "RS256",
    "RS384",
    "RS512",
    "PS256",
    "PS384",
    "PS512",
    "ES256",
    "ES384",
    "ES512",
    "EdDSA",
)
#: Tokens longer than this are refused before parsing.
DEFAULT_MAX_TOKEN_BYTES = 8192


class TokenVerifier(Protocol):
    """Checks bearer tokens for a :class:`~trimcp.auth.ProtectedResource`."""

    async def verify(self, token: str) -> AuthInfo:
        """The principal ``token`` stands for; :class:`InvalidToken` (with a message safe
        to show the client) when it is not acceptable. Must be bounded in time."""
        ...

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Background work for as long as the server runs (may return at once after
        ``task_status.started()``). Cancellation: stops."""
        ...


def require_jwt_library() -> None:
    """Raise ImportError with the install hint when PyJWT/cryptography are missing."""
    try:
        import jwt  # noqa: F401
        from jwt.algorithms import has_crypto
    except ImportError:
        raise ImportError(
            "JWT support needs the 'auth' extra: pip install 'trimcp[auth]'"
        ) from None
    if not has_crypto:
        raise ImportError("JWT support needs 'cryptography': pip install 'trimcp[auth]'")


def scopes_of(claims: Mapping[str, Any]) -> frozenset[str]:
    """Granted scopes from ``scope`` (space-separated, RFC 9068) or ``scp`` (a list)."""
    value = claims.get("scope", claims.get("scp"))
    if isinstance(value, str):
        return frozenset(value.split())
    if isinstance(value, list):
        return frozenset(v for v in value if isinstance(v, str))
    return frozenset()


def audiences_of(claims: Mapping[str, Any]) -> tuple[str, ...]:
    value = claims.get("aud")
    if isinstance(value, str):
        return (value,)
    if isinstance(value, list):
        return tuple(v for v in value if isinstance(v, str))
    return ()


def auth_from_claims(claims: Mapping[str, Any], token: str) -> AuthInfo:
    """An :class:`AuthInfo` from JWT claims or an RFC 7662 introspection answer."""
    exp = claims.get("exp")
    client_id = claims.get("client_id", claims.get("azp", claims.get("cid")))
    subject = claims.get("sub")
    issuer = claims.get("iss")
    return AuthInfo(
        subject=subject if isinstance(subject, str) else None,
        issuer=issuer if isinstance(issuer, str) else None,
        client_id=client_id if isinstance(client_id, str) else None,
        scopes=scopes_of(claims),
        expires_at=float(exp) if isinstance(exp, int | float) else None,
        audience=audiences_of(claims),
        claims=dict(claims),
        token=token,
    )


class JwtVerifier:
    """Verifies JWT access tokens (RFC 9068) signed by an authorization server.

    ``issuer``: the exact ``iss`` required. ``jwks_url``: the key set (None: discovered
    from the issuer's OpenID/RFC 8414 metadata). ``audience``: accepted ``aud`` values
    (None: the :class:`~trimcp.auth.ProtectedResource` checks its own resource URI).
    ``algorithms``: accepted ``alg`` values (asymmetric only; ``none`` and HMAC are
    refused). ``leeway``: seconds of clock skew allowed for ``exp``/``nbf``/``iat``.
    ``required_claims``: claims that must be present. ``max_token_bytes``: longer tokens
    are refused unread. Key set: see :class:`JwksCache` (``refresh_interval``,
    ``min_refresh_interval``, ``fetch_timeout``, ``max_keys``; ``fetch`` replaces the
    HTTP GET, for tests). ``cache_size`` / ``cache_ttl``: a token accepted recently is
    not checked again for ``cache_ttl`` seconds (never past its ``exp``; LRU of
    ``cache_size``): clients send the same token with every request, and a signature
    check costs more than a small call (``cache_ttl=0``: check every time).
    """

    def __init__(
        self,
        *,
        issuer: str,
        jwks_url: str | None = None,
        audience: str | Iterable[str] | None = None,
        algorithms: Sequence[str] = DEFAULT_ALGORITHMS,
        leeway: float = 30.0,
        required_claims: Sequence[str] = ("exp",),
        max_token_bytes: int = DEFAULT_MAX_TOKEN_BYTES,
        refresh_interval: float = 3600.0,
        min_refresh_interval: float = 30.0,
        fetch_timeout: float = 10.0,
        max_keys: int = 32,
        fetch: FetchJson | None = None,
        cache_size: int = 1024,
        cache_ttl: float = 60.0,
    ) -> None:
        require_jwt_library()
        self.cache_size = cache_size
        self.cache_ttl = cache_ttl
        self._accepted: OrderedDict[str, tuple[float, AuthInfo]] = OrderedDict()
        bad = [a for a in algorithms if key_type_for(a) is None]
        if bad:
            raise ValueError(
                f"algorithms {bad} are not asymmetric signatures; a resource server accepts "
                f"only {', '.join(DEFAULT_ALGORITHMS)}"
            )
        self.issuer = issuer
        self.audience: tuple[str, ...] | None = (
            None
            if audience is None
            else (audience,)
            if isinstance(audience, str)
            else tuple(audience)
        )
        self.algorithms = tuple(algorithms)
        self.leeway = leeway
        self.required_claims = tuple(required_claims)
        self.max_token_bytes = max_token_bytes
        self.keys = JwksCache(
            jwks_url,
            issuer=issuer,
            refresh_interval=refresh_interval,
            min_refresh_interval=min_refresh_interval,
            fetch_timeout=fetch_timeout,
            max_keys=max_keys,
            fetch=fetch,
        )

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Fetch and refresh the key set (see :class:`JwksCache`). Cancellation: stops."""
        await self.keys.run(task_status=task_status)

    async def verify(self, token: str) -> AuthInfo:
        """Check signature, ``alg``, ``iss``, ``aud``, ``exp``, ``nbf``; see the class.

        Waits only when the key it needs is being fetched (at most ``fetch_timeout``).
        """
        cached = self._accepted.get(token)
        if cached is not None:
            until, known = cached
            if until > trio.current_time() and (
                known.expires_at is None or known.expires_at > time.time() - self.leeway
            ):
                return known
            del self._accepted[token]
        info = await self._verify(token)
        if self.cache_ttl > 0:
            self._accepted[token] = (trio.current_time() + self.cache_ttl, info)
            if len(self._accepted) > self.cache_size:
                self._accepted.popitem(last=False)
        return info

    async def _verify(self, token: str) -> AuthInfo:
        import jwt

        if len(token) > self.max_token_bytes:
            raise InvalidToken(f"the token is longer than {self.max_token_bytes} bytes")
        try:
            header = jwt.get_unverified_header(token)
        except jwt.PyJWTError:
            raise InvalidToken("the token is not a signed JWT") from None
        alg = header.get("alg")
        if not isinstance(alg, str) or alg not in self.algorithms:
            raise InvalidToken(f"the token's algorithm {str(alg)[:20]!r} is not accepted")
        kid = header.get("kid")
        if kid is not None and not isinstance(kid, str):
            raise InvalidToken("the token's kid is not a string")
        jwk = await self.keys.get(kid)
        if jwk.key_type != key_type_for(alg) or _declared_alg(jwk) not in (None, alg):
            raise InvalidToken(f"the key {kid!r} is not for algorithm {alg}")
        options: dict[str, Any] = {"require": list(self.required_claims)}
        if self.audience is None:
            options["verify_aud"] = False
        try:
            claims: dict[str, Any] = jwt.decode(
                token,
                jwk.key,
                algorithms=[alg],
                audience=self.audience,
                issuer=self.issuer,
                leeway=self.leeway,
                options=options,  # type: ignore[arg-type]
            )
        except jwt.ExpiredSignatureError:
            raise InvalidToken("the token has expired") from None
        except jwt.ImmatureSignatureError:
            raise InvalidToken("the token is not valid yet (nbf/iat in the future)") from None
        except jwt.InvalidAudienceError:
            raise InvalidToken("the token was issued for another audience") from None
        except jwt.InvalidIssuerError:
            raise InvalidToken("the token was issued by another issuer") from None
        except jwt.MissingRequiredClaimError as exc:
            raise InvalidToken(f"the token has no {exc.claim!r} claim") from None
        except jwt.PyJWTError:
            raise InvalidToken("the token's signature or format is invalid") from None
        return auth_from_claims(claims, token)


def _declared_alg(jwk: Any) -> str | None:
    # The JWK's own "alg" member, when it declares one.
    data = getattr(jwk, "_jwk_data", None)
    alg = data.get("alg") if isinstance(data, dict) else None
    return alg if isinstance(alg, str) else None


#: ``verify(token) -> AuthInfo | None``: None (or raising :class:`InvalidToken`) refuses.
VerifyFunction = Callable[[str], Awaitable[AuthInfo | None]]


class CallableVerifier:
    """Wraps your ``async def verify(token) -> AuthInfo | None`` (None refuses).

    ``timeout`` bounds each call (then the token is refused). ``max_token_bytes`` as for
    :class:`JwtVerifier`.
    """

    def __init__(
        self,
        verify: VerifyFunction,
        *,
        timeout: float = 10.0,
        max_token_bytes: int = DEFAULT_MAX_TOKEN_BYTES,
    ) -> None:
        self._verify = verify
        self.timeout = timeout
        self.max_token_bytes = max_token_bytes

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        task_status.started()

    async def verify(self, token: str) -> AuthInfo:
        if len(token) > self.max_token_bytes:
            raise InvalidToken(f"the token is longer than {self.max_token_bytes} bytes")
        with trio.move_on_after(self.timeout):
            info = await self._verify(token)
            if info is None:
                raise InvalidToken("the token is not valid")
            if info.expires_at is not None and info.expires_at <= time.time():
                raise InvalidToken("the token has expired")
            return info
        raise InvalidToken(f"the token could not be checked within {self.timeout:g} s")
