"""The tokens this authorization server issues, and the logins (families) behind them.

A *family* is one user's login for one client: made when an authorization code is
redeemed, it holds who logged in, the scopes granted, the DPoP key the tokens are bound to
(if any); the upstream tokens, sealed, are a record of their own beside it (refreshing
them must not race the family's rotation). Its access tokens are short-lived JWTs signed
with :class:`~trimcp.authserver.keys.SigningKeys` (``aud`` = the MCP server, ``fam`` = the
family); its refresh token is ``<family id>.<random>``, stored by digest, and replaced by
a new one at each use (rotation). A refresh token used a second time (stolen, or copied)
revokes the whole family: every refresh token and, within ``revocation_lag`` seconds,
every access token of that login stops working. Revoking either kind of token (RFC 7009)
ends its family the same way.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Callable, Mapping
from typing import Any

import trio

from trimcp.auth.errors import InvalidToken
from trimcp.auth.principal import AuthInfo
from trimcp.auth.verifiers import JwtVerifier
from trimcp.authserver.clients import digest
from trimcp.authserver.keys import SigningKeys
from trimcp.authserver.store import AuthStore

#: Digests of a family's former refresh tokens kept to recognise a reuse.
SPENT_KEPT = 32


class GrantError(Exception):
    """A token request refused: ``error`` is the RFC 6749 §5.2 code."""

    def __init__(self, error: str, description: str, status: int = 400) -> None:
        super().__init__(description)
        self.error = error
        self.description = description
        self.status = status


class Grants:
    """Issues, refreshes, checks and revokes this server's tokens (module docstring).

    ``issuer``: this server's issuer URL; ``audience``: the MCP server's resource URI.
    """

    def __init__(
        self,
        *,
        issuer: str,
        audience: str,
        store: AuthStore,
        keys: SigningKeys,
        access_token_ttl: float = 600.0,
        refresh_token_ttl: float = 14 * 86400.0,
        login_lifetime: float = 30 * 86400.0,
        revocation_lag: float = 5.0,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.issuer = issuer
        self.audience = audience
        self._store = store
        self._keys = keys
        self.access_token_ttl = access_token_ttl
        self.refresh_token_ttl = refresh_token_ttl
        self.login_lifetime = login_lifetime
        self.revocation_lag = revocation_lag
        self._clock = clock
        self._jwt = JwtVerifier(
            issuer=issuer,
            jwks_url=f"{issuer}/oauth/jwks",
            required_claims=("exp", "sub", "client_id", "fam"),
            fetch=self._local_jwks,
            min_refresh_interval=1.0,
            refresh_interval=60.0,
            leeway=5.0,
        )
        # family id -> Trio time until which it is known to be alive
        self._alive: dict[str, float] = {}

    async def _local_jwks(self, url: str) -> Mapping[str, Any]:
        await self._keys.current()  # read again when the period turned
        return self._keys.jwks()

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """The signing keys' and the verifier's refresh. Cancellation: stops."""
        async with trio.open_nursery() as nursery:
            await nursery.start(self._keys.run)
            await nursery.start(self._jwt.run)
            task_status.started()

    # --- issuing --------------------------------------------------------------------------

    async def start_family(self, login: Mapping[str, Any]) -> dict[str, Any]:
        """A new family from a redeemed code's ``login`` record, and its first tokens."""
        family_id = secrets.token_urlsafe(16)
        now = self._clock()
        family = {
            "client_id": login["client_id"],
            "sub": login["sub"],
            "idp": login["idp"],
            "profile": login.get("profile", {}),
            "scope": login["scope"],
            "jkt": login.get("jkt"),
            "expires": now + self.login_lifetime,
            "spent": [],
        }
        answer = await self._issue(family_id, family, login["scope"])
        sealed = login.get("upstream")
        if isinstance(sealed, str) and not await self.keep_upstream_tokens(family_id, sealed):
            await self.end_family(family_id)
            raise GrantError(
                "temporarily_unavailable", "too many logins are held for this client", 503
            )
        return answer

    async def _issue(self, family_id: str, family: dict[str, Any], scope: str) -> dict[str, Any]:
        now = self._clock()
        left = family["expires"] - now
        if left <= 0:
            raise GrantError("invalid_grant", "the login has expired: log in again")
        refresh = f"{family_id}.{secrets.token_urlsafe(32)}"
        family["current"] = digest(refresh)
        client = family["client_id"]
        if not await self._store.put("family", family_id, family, left, client=client):
            raise GrantError(
                "temporarily_unavailable", "too many logins are held for this client", 503
            )
        stored = await self._store.put(
            "refresh",
            digest(refresh),
            {"fam": family_id},
            min(self.refresh_token_ttl, left),
            client=client,
        )
        if not stored:
            await self._store.delete("family", family_id)
            raise GrantError(
                "temporarily_unavailable", "too many logins are held for this client", 503
            )
        claims: dict[str, Any] = {
            "iss": self.issuer,
            "sub": family["sub"],
            "aud": self.audience,
            "client_id": client,
            "scope": scope,
            "iat": int(now),
            "exp": int(now + min(self.access_token_ttl, left)),
            "jti": secrets.token_urlsafe(12),
            "fam": family_id,
            "idp": family["idp"],
            **{k: v for k, v in family.get("profile", {}).items() if k not in _RESERVED},
        }
        if family.get("jkt"):
            claims["cnf"] = {"jkt": family["jkt"]}
        access = await self._keys.sign(claims)
        answer: dict[str, Any] = {
            "access_token": access,
            "token_type": "DPoP" if family.get("jkt") else "Bearer",
            "expires_in": claims["exp"] - int(now),
            "refresh_token": refresh,
        }
        if scope:
            answer["scope"] = scope
        return answer

    async def refresh(
        self, refresh_token: str, *, client_id: str, scope: str | None, jkt: str | None
    ) -> dict[str, Any]:
        """Rotate ``refresh_token`` (see the module docstring). Raises :class:`GrantError`."""
        family_id = refresh_token.partition(".")[0]
        spent = digest(refresh_token)
        record = await self._store.take("refresh", spent)
        family = await self._store.get("family", family_id) if family_id else None
        if record is None or record.get("fam") != family_id or family is None:
            if family is not None and spent in family.get("spent", ()):
                await self.end_family(family_id)
                raise GrantError(
                    "invalid_grant",
                    "this refresh token was already used: the login it belongs to is revoked",
                )
            raise GrantError("invalid_grant", "the refresh token is unknown, expired or revoked")
        if family["client_id"] != client_id:
            await self.end_family(family_id)
            raise GrantError("invalid_grant", "the refresh token was issued to another client")
        bound = family.get("jkt")
        if bound and jkt != bound:
            # Put it back: a client that forgot its proof has not lost its login.
            await self._store.put(
                "refresh", spent, record, self.refresh_token_ttl, client=client_id
            )
            raise GrantError(
                "invalid_dpop_proof" if jkt is not None else "invalid_grant",
                "this login is bound to a DPoP key: send a proof made with that key",
            )
        granted = set(str(family["scope"]).split())
        asked = set(scope.split()) if scope is not None else granted
        if not asked <= granted:
            raise GrantError(
                "invalid_scope",
                f"the scopes {' '.join(sorted(asked - granted))} were not granted to this login",
            )
        family["spent"] = [*family.get("spent", [])[-(SPENT_KEPT - 1) :], spent]
        return await self._issue(family_id, family, " ".join(sorted(asked)))

    # --- checking and revoking ------------------------------------------------------------

    async def verify(self, token: str) -> AuthInfo:
        """An access token this server issued, whose login is not revoked. Raises
        :class:`InvalidToken` (a token from the upstream is "another issuer" or "not a
        signed JWT" here). Cancellation: safe."""
        info = await self._jwt.verify(token)
        family_id = info.claims.get("fam")
        if not isinstance(family_id, str):
            raise InvalidToken("the token names no login")
        now = trio.current_time()
        if self._alive.get(family_id, -1.0) < now:
            if await self._store.get("family", family_id) is None:
                self._alive.pop(family_id, None)
                raise InvalidToken("the token's login was revoked")
            if len(self._alive) >= 4096:
                self._alive.clear()
            self._alive[family_id] = now + self.revocation_lag
        return info

    async def end_family(self, family_id: str) -> None:
        """Revoke a login: its refresh token at once, its access tokens within
        ``revocation_lag`` seconds on every replica."""
        family = await self._store.take("family", family_id)
        if family is not None and isinstance(family.get("current"), str):
            await self._store.delete("refresh", family["current"])
        await self._store.delete("upstream", family_id)
        self._alive.pop(family_id, None)

    async def revoke(self, token: str, *, client_id: str) -> None:
        """RFC 7009: end the login ``token`` (refresh or access) belongs to, when it was
        issued to ``client_id``; anything else is ignored (the answer is the same)."""
        if token.count(".") == 1:
            family_id = token.partition(".")[0]
            family = await self._store.get("family", family_id)
            if (
                family is not None
                and family.get("current") == digest(token)
                and family["client_id"] == client_id
            ):
                await self.end_family(family_id)
            return
        try:
            info = await self._jwt.verify(token)
        except InvalidToken:
            return
        named = info.claims.get("fam")
        if isinstance(named, str) and info.client_id == client_id:
            await self.end_family(named)

    async def upstream_tokens(self, family_id: str) -> str | None:
        """The sealed upstream tokens of a login (None: none kept, or it ended)."""
        kept = await self._store.get("upstream", family_id)
        sealed = None if kept is None else kept.get("sealed")
        return sealed if isinstance(sealed, str) else None

    async def keep_upstream_tokens(self, family_id: str, sealed: str) -> bool:
        """Keep ``sealed`` as the upstream tokens of a login, for as long as it lasts;
        False when the login ended (or the store refused: the client's share is full)."""
        family = await self._store.get("family", family_id)
        if family is None:
            return False
        left = float(family["expires"]) - self._clock()
        if left <= 0:
            return False
        return await self._store.put(
            "upstream", family_id, {"sealed": sealed}, left, client=str(family["client_id"])
        )


#: Claims a profile field may not replace.
_RESERVED = frozenset(
    {"iss", "sub", "aud", "client_id", "scope", "iat", "exp", "nbf", "jti", "fam", "idp", "cnf"}
)
