"""The keys that sign trimcp's access tokens, rotated through the store.

Key ``p<n>`` belongs to period ``n = floor(unix time / rotate_every)`` (stored as
``p<n>.<the sealing key's id>``: processes with one secret share keys). Each process makes
the keys of this period and the next with a write that only the first writer wins
(``only_new``), then reads them back, so every replica sharing a store signs with the same
key and publishes the same key set without coordination. Tokens are signed with this
period's key; the key set (JWKS) holds the previous, current and next keys, so a token
signed just before a rotation verifies until it expires (``rotate_every`` must exceed the
access-token lifetime). Private keys are sealed (:mod:`trimcp.authserver.sealing`) in the
store. Key pairs are made and used by ``cryptography`` and PyJWT
(:class:`~trimcp.auth.dpop.DpopKey`); nothing cryptographic is done here.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

import trio

from trimcp.auth.dpop import DpopKey
from trimcp.authserver.sealing import Sealer
from trimcp.authserver.store import AuthStore
from trimcp.stores.base import StoreUnavailable

logger = logging.getLogger("trimcp.authserver")

#: Seconds between two reads of the shared keys (at most).
REFRESH_EVERY = 60.0


class KeysUnavailable(Exception):
    """No signing key could be made or read (the store did not answer)."""


class SigningKeys:
    """This server's rotating signing keys (see the module docstring)."""

    def __init__(
        self,
        store: AuthStore,
        sealer: Sealer,
        *,
        algorithm: str = "ES256",
        rotate_every: float = 24 * 3600.0,
        clock: Callable[[], float] = time.time,
    ) -> None:
        if rotate_every <= 0:
            raise ValueError("rotate_every must be > 0 seconds")
        self._store = store
        self._sealer = sealer
        self.algorithm = algorithm
        self.rotate_every = rotate_every
        self._clock = clock
        self._keys: dict[str, DpopKey] = {}
        self._current: str | None = None
        self._loaded_period: int | None = None

    async def _load_period(self, period: int) -> DpopKey | None:
        name = f"p{period}"
        known = self._keys.get(name)
        if known is not None:
            return known
        ttl = self.rotate_every * (period + 3) - self._clock()
        fresh = DpopKey.generate(self.algorithm)
        record = {"pem": self._sealer.seal(fresh.pem), "alg": self.algorithm}
        # Stored under the sealing key's id: a process with another secret makes keys of
        # its own instead of finding keys it cannot open (which would leave it unable to
        # sign until they expired, days later).
        stored_as = f"{name}.{self._sealer.key_id}"
        await self._store.put("signkey", stored_as, record, ttl, only_new=True)
        stored = await self._store.get("signkey", stored_as)
        if stored is None:
            return None
        pem = self._sealer.open(str(stored.get("pem", "")))
        if pem is None:
            logger.error("signing key %s in the store does not open: it was altered", name)
            return None
        key = DpopKey(pem, str(stored.get("alg", self.algorithm)))
        self._keys[name] = key
        return key

    async def refresh(self) -> None:
        """Read (making them when missing) the keys of the previous, current and next
        periods. Raises :class:`KeysUnavailable`. Cancellation: safe."""
        period = int(self._clock() // self.rotate_every)
        try:
            found = {}
            for n in (period - 1, period, period + 1):
                key = await self._load_period(n)
                if key is not None:
                    found[f"p{n}"] = key
        except StoreUnavailable as error:
            raise KeysUnavailable(f"the signing keys could not be read: {error}") from None
        if f"p{period}" not in found:
            raise KeysUnavailable("the current signing key could not be made or opened")
        self._keys = found
        self._current = f"p{period}"
        self._loaded_period = period

    async def current(self) -> DpopKey:
        """The key to sign with now (read again when the period turned)."""
        period = int(self._clock() // self.rotate_every)
        if period != self._loaded_period or self._current is None:
            await self.refresh()
        assert self._current is not None
        return self._keys[self._current]

    def jwks(self) -> dict[str, Any]:
        """The public key set (RFC 7517) of the keys held now; ``kid`` = thumbprint."""
        keys = []
        for key in self._keys.values():
            jwk = dict(key.public_jwk)
            jwk.update(kid=key.thumbprint, use="sig", alg=key.algorithm)
            keys.append(jwk)
        return {"keys": keys}

    async def run(
        self,
        *,
        retry_every: float = 5.0,
        task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
    ) -> None:
        """Keep the keys fresh until cancelled (reports started after the first attempt).
        Cancellation: stops; the keys held stay usable."""
        started = False
        while True:
            try:
                await self.refresh()
                wait = min(REFRESH_EVERY, self.rotate_every / 8)
            except KeysUnavailable as error:
                logger.error("%s; retrying in %g s", error, retry_every)
                wait = retry_every
            if not started:
                started = True
                task_status.started()
            await trio.sleep(wait)

    async def sign(self, claims: dict[str, Any]) -> str:
        """``claims`` as a JWT access token (``typ: at+jwt``, RFC 9068), signed by PyJWT."""
        import jwt

        key = await self.current()
        return jwt.encode(
            claims,
            key.pem,
            algorithm=key.algorithm,
            headers={"kid": key.thumbprint, "typ": "at+jwt"},
        )
