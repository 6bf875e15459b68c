"""What an OAuth client keeps: tokens and its registration, behind a small store interface.

:class:`TokenStore` has three async methods keyed by the protected resource's URI:
``load``, ``save`` and ``delete`` of a :class:`StoredAuth`. :class:`MemoryTokenStore`
keeps them for the process; :class:`FileTokenStore` in one JSON file readable only by
its owner (written whole, atomically), so the CLI logs in once.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Protocol

import attrs
import trio

from trimcp._record import Record


@attrs.frozen(kw_only=True, repr=False, eq=False)
class TokenSet(Record):
    """An access token and what came with it. ``expires_at``: seconds since the epoch;
    ``token_type``: ``Bearer``, or ``DPoP`` for a token bound to the client's DPoP key;
    ``issuer``: the authorization server that issued them, the only one their refresh
    token is sent to (None in a store written before it was recorded)."""

    access_token: str = attrs.field(repr=False)
    token_type: str = "Bearer"
    expires_at: float | None = None
    refresh_token: str | None = attrs.field(default=None, repr=False)
    scope: str | None = None
    issuer: str | None = None

    def expired(self, skew: float = 30.0) -> bool:
        """Whether it expires within ``skew`` seconds (so it is refreshed before use)."""
        return self.expires_at is not None and self.expires_at - skew <= time.time()

    @classmethod
    def from_response(
        cls,
        value: Mapping[str, Any],
        previous: TokenSet | None = None,
        *,
        issuer: str | None = None,
    ) -> TokenSet:
        """From a token endpoint's JSON answer (of ``issuer``, the authorization server
        whose token endpoint it is); ValueError when it holds no token.

        A refresh answer without a new refresh token keeps the previous one.
        """
        token = value.get("access_token")
        if not isinstance(token, str) or not token:
            raise ValueError("the token answer holds no access_token")
        token_type = value.get("token_type", "Bearer")
        if not isinstance(token_type, str) or token_type.lower() not in ("bearer", "n_a", "dpop"):
            raise ValueError(
                f"unsupported token_type {str(token_type)[:40]!r} (need Bearer or DPoP)"
            )
        expires_in = value.get("expires_in")
        expires_at = None
        if isinstance(expires_in, int | float) and not isinstance(expires_in, bool):
            expires_at = time.time() + float(expires_in)
        refresh = value.get("refresh_token")
        if not isinstance(refresh, str):
            refresh = previous.refresh_token if previous is not None else None
        scope = value.get("scope")
        return cls(
            access_token=token,
            token_type="DPoP" if token_type.lower() == "dpop" else "Bearer",
            expires_at=expires_at,
            refresh_token=refresh,
            scope=scope if isinstance(scope, str) else None,
            issuer=issuer,
        )


@attrs.frozen(kw_only=True, repr=False, eq=False)
class ClientRegistration(Record):
    """The client's identity at one authorization server (``issuer``): its secret (or
    the assertions of its private key) is sent to that server only."""

    client_id: str
    client_secret: str | None = attrs.field(default=None, repr=False)
    token_endpoint_auth_method: str = "none"
    issuer: str | None = None


@attrs.frozen(kw_only=True, repr=False, eq=False)
class StoredAuth(Record):
    """What is stored per protected resource: tokens, registration, and the client's
    DPoP key (a PKCS#8 PEM and its algorithm) that its DPoP tokens are bound to."""

    tokens: TokenSet | None = None
    registration: ClientRegistration | None = None
    dpop_key: str | None = attrs.field(default=None, repr=False)
    dpop_algorithm: str = "ES256"

    @property
    def issuer(self) -> str | None:
        """The authorization server the tokens came from: the one they record, else (a
        store written before tokens recorded it) the one the registration was made at."""
        if self.tokens is not None and self.tokens.issuer is not None:
            return self.tokens.issuer
        return self.registration.issuer if self.registration is not None else None


class TokenStore(Protocol):
    """Where an OAuth client keeps tokens and registrations, keyed by resource URI.

    Each call must be bounded in time. Cancellation: a cancelled ``save`` may or may not
    have stored the value (never half of it).
    """

    async def load(self, key: str) -> StoredAuth | None: ...

    async def save(self, key: str, value: StoredAuth) -> None: ...

    async def delete(self, key: str) -> None: ...


class MemoryTokenStore:
    """Keeps everything in this process (the default)."""

    def __init__(self) -> None:
        self._items: dict[str, StoredAuth] = {}

    async def load(self, key: str) -> StoredAuth | None:
        return self._items.get(key)

    async def save(self, key: str, value: StoredAuth) -> None:
        self._items[key] = value

    async def delete(self, key: str) -> None:
        self._items.pop(key, None)


def _to_json(value: StoredAuth) -> dict[str, Any]:
    return attrs.asdict(value)


def _from_json(value: Any) -> StoredAuth | None:
    if not isinstance(value, dict):
        return None
    try:
        tokens = value.get("tokens")
        registration = value.get("registration")
        dpop_key = value.get("dpop_key")
        return StoredAuth(
            tokens=TokenSet(**tokens) if isinstance(tokens, dict) else None,
            registration=ClientRegistration(**registration)
            if isinstance(registration, dict)
            else None,
            dpop_key=dpop_key if isinstance(dpop_key, str) else None,
            dpop_algorithm=str(value.get("dpop_algorithm") or "ES256"),
        )
    except TypeError:
        return None


class FileTokenStore:
    """One JSON file (mode 0600), rewritten whole and atomically on each change.

    A file that cannot be read as this store's format is treated as empty (and replaced
    on the next save). File I/O runs in a worker thread.
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self._lock = trio.Lock()

    def _read(self) -> dict[str, Any]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        return data if isinstance(data, dict) else {}

    def _write(self, data: dict[str, Any]) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        temporary = self.path.with_name(self.path.name + ".tmp")
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as file:
            json.dump(data, file, indent=1, sort_keys=True)
        os.replace(temporary, self.path)

    async def load(self, key: str) -> StoredAuth | None:
        async with self._lock:
            data = await trio.to_thread.run_sync(self._read)
        return _from_json(data.get(key))

    async def save(self, key: str, value: StoredAuth) -> None:
        async with self._lock:
            data = await trio.to_thread.run_sync(self._read)
            data[key] = _to_json(value)
            await trio.to_thread.run_sync(self._write, data)

    async def delete(self, key: str) -> None:
        async with self._lock:
            data = await trio.to_thread.run_sync(self._read)
            if data.pop(key, None) is not None:
                await trio.to_thread.run_sync(self._write, data)
