"""A JSON Web Key Set kept fresh by a task: keys by ``kid``, bounded, refreshed on rotation.

:meth:`JwksCache.run` runs in the server's nursery (the HTTP app starts it with its
session manager). It fetches the set at once, then every ``refresh_interval``, and early
when a token names a ``kid`` the set does not hold (a key rotation), but never more often
than ``min_refresh_interval``, so tokens with made-up ``kid`` values cannot make the
server hammer the authorization server. A request waiting for keys waits at most
``fetch_timeout``.

Parsing a key is PyJWT's (:class:`jwt.PyJWK`); nothing cryptographic is done here.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import trio

from trimcp.auth.errors import InvalidToken
from trimcp.auth.fetch import Fetcher, FetchError

logger = logging.getLogger("trimcp.auth")

#: ``fetch(url) -> JSON object``; the default GETs it with a bounded :class:`Fetcher`.
FetchJson = Callable[[str], Awaitable[Mapping[str, Any]]]

#: Key types a verifier may use, per algorithm family.
_KTY = {"RS": "RSA", "PS": "RSA", "ES": "EC", "Ed": "OKP"}


def key_type_for(algorithm: str) -> str | None:
    """The JWK ``kty`` an algorithm needs (``RS256`` -> ``RSA``), None if not asymmetric."""
    return _KTY.get(algorithm[:2])


class JwksCache:
    """The keys of one JWKS URL (or of the issuer's discovered ``jwks_uri``).

    ``url``: the key set; None with ``issuer``: read ``jwks_uri`` from the issuer's
    OpenID Connect discovery document (then its RFC 8414 metadata). ``max_keys`` bounds
    what is kept (keys past it are ignored, with a warning).
    """

    def __init__(
        self,
        url: str | None = None,
        *,
        issuer: str | None = None,
        refresh_interval: float = 3600.0,
        min_refresh_interval: float = 30.0,
        fetch_timeout: float = 10.0,
        max_keys: int = 32,
        fetch: FetchJson | None = None,
    ) -> None:
        if url is None and issuer is None:
            raise ValueError("JwksCache needs a key set URL or an issuer to discover it from")
        self.url = url
        self.issuer = issuer
        self.refresh_interval = refresh_interval
        self.min_refresh_interval = min_refresh_interval
        self.fetch_timeout = fetch_timeout
        self.max_keys = max_keys
        self._fetch = fetch
        self._keys: dict[str | None, Any] = {}
        self._error: str | None = None
        self._attempts = 0
        self._last_attempt = -math.inf
        self._fetching = False
        self._running = False
        self._wanted = trio.Event()
        self._updated = trio.Event()

    @property
    def key_ids(self) -> list[str | None]:
        """The ``kid`` of every key held now."""
        return list(self._keys)

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Fetch and refresh the key set until cancelled. Reports started at once (before
        the first fetch ends: requests wait for it, bounded). Cancellation: stops."""
        fetcher: Fetcher | None = None
        fetch = self._fetch
        if fetch is None:
            fetcher = Fetcher(timeout=self.fetch_timeout)
            fetch = _json_getter(fetcher)
        self._running = True
        task_status.started()
        try:
            while True:
                await self._refresh(fetch)
                with trio.move_on_after(self.refresh_interval):
                    await self._wanted.wait()
                self._wanted = trio.Event()
                wait = self._last_attempt + self.min_refresh_interval - trio.current_time()
                if wait > 0:
                    await trio.sleep(wait)
        finally:
            self._running = False
            if fetcher is not None:
                with trio.CancelScope(shield=True), trio.move_on_after(1.0):
                    await fetcher.aclose()

    async def _refresh(self, fetch: FetchJson) -> None:
        self._fetching = True
        self._last_attempt = trio.current_time()
        self._attempts += 1
        try:
            with trio.fail_after(self.fetch_timeout):
                url = self.url or await self._discover(fetch)
                document = await fetch(url)
            self._install(document, url)
            self._error = None
        except trio.TooSlowError:
            self._error = f"fetching the key set took longer than {self.fetch_timeout:g} s"
            logger.warning("JWKS %s: %s", self.url or self.issuer, self._error)
        except (FetchError, ValueError, TypeError) as exc:
            self._error = str(exc)
            logger.warning("JWKS %s: %s", self.url or self.issuer, self._error)
        finally:
            self._fetching = False
            done, self._updated = self._updated, trio.Event()
            done.set()

    async def _discover(self, fetch: FetchJson) -> str:
        assert self.issuer is not None
        base = self.issuer.rstrip("/")
        errors = []
        for url in (
            f"{base}/.well-known/openid-configuration",
            f"{base}/.well-known/oauth-authorization-server",
        ):
            try:
                document = await fetch(url)
            except FetchError as exc:
                errors.append(str(exc))
                continue
            jwks_uri = document.get("jwks_uri")
            if isinstance(jwks_uri, str):
                self.url = jwks_uri
                return jwks_uri
            errors.append(f"{url} has no jwks_uri")
        raise FetchError(f"no key set found for issuer {self.issuer}: {'; '.join(errors)}")

    def _install(self, document: Mapping[str, Any], url: str) -> None:
        from jwt import PyJWK  # the optional extra, checked when the verifier was made

        entries = document.get("keys")
        if not isinstance(entries, list):
            raise ValueError(f"{url} is not a JSON Web Key Set (no 'keys' list)")
        keys: dict[str | None, Any] = {}
        for entry in entries:
            if len(keys) >= self.max_keys:
                logger.warning(
                    "JWKS %s holds more than %d keys; the rest are ignored", url, self.max_keys
                )
                break
            if not isinstance(entry, dict) or entry.get("use", "sig") != "sig":
                continue
            try:
                jwk = PyJWK(entry)
            except Exception as exc:  # unsupported kty/crv, malformed: skip that key only
                logger.info("JWKS %s: skipping key %r: %s", url, entry.get("kid"), exc)
                continue
            kid = entry.get("kid")
            keys[kid if isinstance(kid, str) else None] = jwk
        self._keys = keys

    def _find(self, kid: str | None) -> Any:
        if kid is None and len(self._keys) == 1:
            return next(iter(self._keys.values()))
        return self._keys.get(kid)

    async def get(self, kid: str | None) -> Any:
        """The key (a :class:`jwt.PyJWK`) for ``kid``. May wait, at most ``fetch_timeout``,
        for a fetch in progress or an early refresh. Raises :class:`InvalidToken`.
        Cancellation: safe (only the wait is abandoned)."""
        key = self._find(kid)
        if key is not None:
            return key
        if not self._running:
            raise InvalidToken(
                "the server is not fetching its token signing keys (the JWKS refresh task "
                "is not running)"
            )
        refreshable = trio.current_time() - self._last_attempt >= self.min_refresh_interval
        if self._fetching or self._attempts == 0 or refreshable:
            self._wanted.set()
            updated = self._updated
            with trio.move_on_after(self.fetch_timeout):
                await updated.wait()
            key = self._find(kid)
            if key is not None:
                return key
        if not self._keys:
            reason = self._error or f"no answer within {self.fetch_timeout:g} s"
            raise InvalidToken(f"the token signing keys are unavailable: {reason}")
        if kid is None:
            raise InvalidToken("the token names no key (kid) and the key set holds several")
        raise InvalidToken(f"no signing key with kid {kid[:64]!r}")


def _json_getter(fetcher: Fetcher) -> FetchJson:
    async def get(url: str) -> Mapping[str, Any]:
        response = await fetcher.get(url)
        if response.status != 200:
            raise FetchError(f"GET {url}: HTTP {response.status}")
        return response.json_object(url)

    return get
