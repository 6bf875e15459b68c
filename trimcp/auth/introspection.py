"""RFC 7662 token introspection, with a bounded cache.

Each unknown token costs one POST to the authorization server's introspection endpoint
(authenticated with the resource server's own client credentials); an active answer is
cached for ``cache_ttl`` seconds at most (never past the token's ``exp``), in an LRU of
``cache_size`` entries keyed by the token's SHA-256. Inactive answers are not cached, so
a revoked token is refused as soon as its cached answer ages out.
"""

from __future__ import annotations

import base64
import hashlib
import time
from collections import OrderedDict
from urllib.parse import quote

import trio

from trimcp.auth.errors import InvalidToken
from trimcp.auth.fetch import Fetcher, FetchError
from trimcp.auth.principal import AuthInfo
from trimcp.auth.verifiers import DEFAULT_MAX_TOKEN_BYTES, auth_from_claims


def basic_auth(client_id: str, client_secret: str) -> str:
    """An HTTP Basic ``Authorization`` value for OAuth client credentials (RFC 6749 2.3.1:
    form-urlencoded first)."""
    raw = f"{quote(client_id, safe='')}:{quote(client_secret, safe='')}".encode()
    return "Basic " + base64.b64encode(raw).decode("ascii")


class IntrospectionVerifier:
    """Asks the authorization server whether a token is active (RFC 7662).

    ``url``: the introspection endpoint. ``client_id`` / ``client_secret``: this resource
    server's credentials there (HTTP Basic). ``issuer``: when given, an answer's ``iss``
    must match it. ``timeout`` bounds each call; ``cache_ttl`` / ``cache_size`` bound
    the cache. ``allow_private``: the endpoint may be a loopback/private address (an
    operator-configured URL; True by default).
    """

    def __init__(
        self,
        url: str,
        *,
        client_id: str,
        client_secret: str,
        issuer: str | None = None,
        timeout: float = 10.0,
        cache_ttl: float = 60.0,
        cache_size: int = 1024,
        max_token_bytes: int = DEFAULT_MAX_TOKEN_BYTES,
    ) -> None:
        self.url = url
        self.issuer = issuer
        self.timeout = timeout
        self.cache_ttl = cache_ttl
        self.cache_size = cache_size
        self.max_token_bytes = max_token_bytes
        self._authorization = basic_auth(client_id, client_secret)
        self._cache: OrderedDict[bytes, tuple[float, AuthInfo]] = OrderedDict()
        self._fetcher: Fetcher | None = None
        #: Calls made to the introspection endpoint (for tests and statistics).
        self.calls = 0

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Hold the HTTP connection pool while the server runs. Cancellation: closes it."""
        self._fetcher = Fetcher(timeout=self.timeout)
        task_status.started()
        try:
            await trio.sleep_forever()
        finally:
            fetcher, self._fetcher = self._fetcher, None
            with trio.CancelScope(shield=True), trio.move_on_after(1.0):
                await fetcher.aclose()

    async def verify(self, token: str) -> AuthInfo:
        """A cached answer, else one bounded introspection call. Cancellation: safe."""
        if len(token) > self.max_token_bytes:
            raise InvalidToken(f"the token is longer than {self.max_token_bytes} bytes")
        key = hashlib.sha256(token.encode("utf-8", "surrogatepass")).digest()
        now = trio.current_time()
        cached = self._cache.get(key)
        if cached is not None:
            until, info = cached
            if until > now and (info.expires_at is None or info.expires_at > time.time()):
                self._cache.move_to_end(key)
                return info
            del self._cache[key]
        info = await self._introspect(token)
        ttl = self.cache_ttl
        if info.expires_at is not None:
            ttl = min(ttl, info.expires_at - time.time())
        if ttl > 0:
            self._cache[key] = (now + ttl, info)
            while len(self._cache) > self.cache_size:
                self._cache.popitem(last=False)
        return info

    async def _introspect(self, token: str) -> AuthInfo:
        fetcher = self._fetcher
        if fetcher is None:
            raise InvalidToken(
                "the server cannot introspect tokens: the introspection verifier is not "
                "running (serve it with HttpServerConfig(auth=...))"
            )
        self.calls += 1
        try:
            response = await fetcher.post_form(
                self.url,
                {"token": token, "token_type_hint": "access_token"},
                {"authorization": self._authorization},
            )
            if response.status != 200:
                raise FetchError(f"HTTP {response.status}")
            answer = response.json_object("the introspection answer")
        except FetchError as exc:
            raise InvalidToken(f"the token could not be introspected: {exc}") from None
        if answer.get("active") is not True:
            raise InvalidToken("the token is not active (expired, revoked or unknown)")
        info = auth_from_claims(answer, token)
        if self.issuer is not None and info.issuer not in (None, self.issuer):
            raise InvalidToken("the token was issued by another issuer")
        if info.expires_at is not None and info.expires_at <= time.time():
            raise InvalidToken("the token has expired")
        return info
