"""The proxy's 2026-07-28 side: stateless clients share one backend connection.

A 2026 request brings its own version, client identity and capabilities and has no
session, so the proxy cannot open a backend session per client as it does in the session
era. It keeps one *shared* backend connection instead, opened on demand inside the
proxy's lifespan (so it outlives requests and ends with serving), and opened again by the
next request if the backend went away. Connecting asks the backend ``server/discover``
first, as a client in auto mode does, and the proxy then follows the era the backend
speaks:

- **A 2026-07-28 backend**: ``server/discover`` is answered from the backend's own answer,
  and each request goes on as it came (its ``_meta`` envelope included) with a new id and
  progress token. What 2026 carries inside results (``input_required`` rounds for
  sampling, elicitation and roots, cache hints) passes through.
- **A session-era backend**: the proxy refuses ``server/discover`` as a session-era server
  does (``-32601``), so a client in auto mode falls back to ``initialize`` and gets a
  session of its own, with everything forwarded. A 2026 request that comes anyway is
  translated: sent in the shared session without the envelope keys, its list and read
  results marked "do not cache" (``ttlMs`` 0). The shared session declares no client
  capabilities (a backend cannot ask a stateless client anything through it).

In both cases the backend's notifications on the shared connection (log messages, list
changes) have no one client to go to and are dropped; progress does come back, under
each request's own token, and cancelling a request cancels the backend's.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager, suppress
from typing import Any

import attrs
import trio

from trimcp import serde
from trimcp.client.negotiate import Connected, connect
from trimcp.client.stateless import Era, plan_for
from trimcp.errors import INTERNAL_ERROR, METHOD_NOT_FOUND, LocalProtocolError, McpError
from trimcp.protocol import modern
from trimcp.protocol.negotiated import Negotiated
from trimcp.protocol.versions import LATEST_VERSION
from trimcp.session import RequestContext, Session, SessionHandler
from trimcp.session.relay import without_progress_token
from trimcp.types import (
    ClientCapabilities,
    DiscoverResult,
    Implementation,
    ServerCapabilities,
)

logger = logging.getLogger("trimcp.proxy")

#: Opens a bare backend session (role client, no handshake yet) with this handler.
SessionOpener = Callable[[SessionHandler], AbstractAsyncContextManager[Session]]

#: How long connecting waits for an answer to ``server/discover`` before it takes the
#: backend for a session-era server that ignores unknown requests.
DISCOVER_TIMEOUT = 10.0

#: What a 2026 request is checked against before the backend has said what it offers
#: (the backend then refuses what it does not serve).
_UNKNOWN_CAPABILITIES: ServerCapabilities = serde.structure(
    {
        "tools": {"listChanged": True},
        "resources": {"subscribe": True, "listChanged": True},
        "prompts": {"listChanged": True},
        "completions": {},
        "logging": {},
    },
    ServerCapabilities,
)

_ENVELOPE_KEYS = frozenset(
    {
        modern.META_PROTOCOL_VERSION,
        modern.META_CLIENT_INFO,
        modern.META_CLIENT_CAPABILITIES,
        modern.META_LOG_LEVEL,
    }
)


class _Detached:
    """The handler of the shared backend session: there is no one client to talk back to."""

    async def handle_request(self, ctx: RequestContext) -> Any:
        raise McpError(
            METHOD_NOT_FOUND,
            f"{ctx.method} cannot reach the proxy's client: 2026-07-28 clients share one "
            "backend connection, which declares no client capabilities",
        )

    async def handle_notification(self, session: Session, method: str, params: Any) -> None:
        logger.debug("%s from the shared backend connection dropped (no one client)", method)


class _Shared:
    """One attempt at the shared connection: set once ``ready`` (usable or failed)."""

    __slots__ = ("connected", "error", "ready", "scope", "session")

    def __init__(self) -> None:
        self.ready = trio.Event()
        self.scope = trio.CancelScope()
        self.session: Session | None = None
        self.connected: Connected | None = None
        self.error: BaseException | None = None

    @property
    def usable(self) -> bool:
        return self.session is not None and not self.session.closing


class SharedBackend:
    """The backend connection every 2026-07-28 client of a proxy shares (module docs).

    ``open_session`` opens a bare backend session; ``timeout`` bounds connecting plus the
    handshake; ``label`` names the backend in errors; ``info`` is the proxy's identity.
    """

    def __init__(
        self, open_session: SessionOpener, *, timeout: float, label: str, info: Implementation
    ) -> None:
        self._open_session = open_session
        self.timeout = timeout
        self.label = label
        self.info = info
        #: The era the backend speaks, once a connection has found out.
        self.era: Era | None = None
        self._nursery: trio.Nursery | None = None
        self._shared: _Shared | None = None

    @asynccontextmanager
    async def open(self) -> AsyncIterator[None]:
        """Own the shared connection's task for the body (the proxy's lifespan). Nested
        entries reuse the first; the connection closes when the first entry ends.
        Cancellation: the connection closes with the engine's bounded sequence."""
        if self._nursery is not None:
            yield
            return
        async with trio.open_nursery() as nursery:
            self._nursery = nursery
            try:
                yield
            finally:
                self._nursery = None
                self._shared = None
                nursery.cancel_scope.cancel()

    def negotiate(self, meta: modern.RequestMeta) -> Negotiated:
        """The agreement of one 2026 request: its ``_meta``, the proxy's identity and the
        backend's capabilities (every capability before the backend is known)."""
        shared = self._shared
        answer = shared.connected.answer if shared and shared.connected else None
        return modern.negotiated(
            meta,
            server_info=self.info,
            server_capabilities=answer.capabilities if answer else _UNKNOWN_CAPABILITIES,
            instructions=answer.instructions if answer else None,
        )

    async def connection(self) -> tuple[Session, Connected]:
        """The shared connection, opened (or reopened) on demand. Raises
        :class:`McpError` (``-32603``) naming the backend when it cannot be reached within
        ``timeout``. Cancellation: the caller stops waiting; connecting goes on."""
        shared = self._shared
        if shared is None or (shared.ready.is_set() and not shared.usable):
            nursery = self._nursery
            if nursery is None:
                raise McpError(
                    INTERNAL_ERROR,
                    "This proxy serves 2026-07-28 requests only inside its lifespan: serve "
                    "it with run(), serve_http(), serve_stream() or connect_memory()",
                )
            shared = self._shared = _Shared()
            nursery.start_soon(self._run, shared)
        with trio.move_on_after(self.timeout + 1):
            await shared.ready.wait()
        if not shared.usable:
            reason = shared.error or "no answer in time"
            raise McpError(INTERNAL_ERROR, f"Cannot reach {self.label}: {reason}")
        assert shared.session is not None
        assert shared.connected is not None
        return shared.session, shared.connected

    async def learn_era(self) -> Era:
        """The era the backend speaks (connecting once to find out). A session-era backend's
        shared session is closed again at once: session clients get sessions of their own,
        and a translated 2026 request opens it again. Raises as :meth:`connection`."""
        if self.era is None:
            await self.connection()
            assert self.era is not None
        if self.era is Era.LEGACY and self._shared is not None:
            self._shared.scope.cancel()
            self._shared = None
        return self.era

    async def _run(self, shared: _Shared) -> None:
        plan = plan_for("auto", LATEST_VERSION)
        client_info = Implementation(name="trimcp-proxy", version="1")
        try:
            with shared.scope:
                async with self._open_session(_Detached()) as session:
                    with trio.fail_after(self.timeout):
                        connected = await connect(
                            session, plan, client_info, ClientCapabilities(), DISCOVER_TIMEOUT
                        )
                    shared.session, shared.connected = session, connected
                    self.era = connected.era
                    shared.ready.set()
                    await session.wait_closed()
        except Exception as exc:
            shared.error = exc
            logger.warning("cannot reach %s: %s", self.label, exc)
        finally:
            shared.ready.set()

    async def discover(self, versions: tuple[str, ...]) -> DiscoverResult:
        """``server/discover``: the backend's answer (the versions both speak) when it
        speaks 2026-07-28; ``-32601`` when it speaks the session era (a client in auto mode
        then falls back to ``initialize``)."""
        if await self.learn_era() is Era.LEGACY:
            raise McpError(
                METHOD_NOT_FOUND,
                f"Method not found: server/discover ({self.label} speaks the session era; "
                "connect with initialize)",
            )
        _, connected = await self.connection()
        answer = connected.answer
        assert isinstance(answer, DiscoverResult)
        return attrs.evolve(
            answer, supported_versions=[v for v in answer.supported_versions if v in versions]
        )

    async def forward(self, ctx: RequestContext) -> Any:
        """Answer one 2026 request through the shared connection. Raises the backend's
        error; :class:`McpError` ``-32601`` for a method the backend's protocol version
        does not have. Cancellation: the backend's request is cancelled too."""
        session, connected = await self.connection()
        report = ctx.report_progress if ctx.progress_token is not None else None

        async def progress(value: float, total: float | None, message: str | None) -> None:
            assert report is not None
            with suppress(LocalProtocolError):  # a backend going backwards
                await report(value, total, message)

        raw = ctx.params if ctx.params is None or type(ctx.params) is dict else None
        params = without_progress_token(raw if raw is not None else serde.unstructure(ctx.params))
        if connected.era is Era.LEGACY:
            params = without_envelope(params)
        try:
            result = await session.send_request(
                ctx.method,
                params,
                timeout=None,
                on_progress=progress if report is not None else None,
            )
        except LocalProtocolError as exc:
            raise McpError(METHOD_NOT_FOUND, f"{self.label}: {exc.message}") from None
        return with_cache_hint(ctx.method, result)


def without_envelope(params: Any) -> Any:
    """A 2026 request's params for a session-era backend: without the envelope keys of
    ``_meta`` (version, client identity and capabilities, log level). Copies."""
    if type(params) is not dict:
        return params
    meta = params.get("_meta")
    if type(meta) is not dict:
        return params
    rest = {key: value for key, value in meta.items() if key not in _ENVELOPE_KEYS}
    if len(rest) == len(meta):
        return params
    copy = dict(params)
    if rest:
        copy["_meta"] = rest
    else:
        del copy["_meta"]
    return copy


def with_cache_hint(method: str, result: Any) -> Any:
    """A session-era result as 2026 wants it: lists and reads must say how long they stay
    fresh; a backend that says nothing gets "do not cache" (``ttlMs`` 0, private)."""
    if (
        method in modern.CACHEABLE_METHODS
        and attrs.has(type(result))
        and getattr(result, "ttl_ms", 0) is None
    ):
        return attrs.evolve(result, ttl_ms=0, cache_scope="private")
    return result
