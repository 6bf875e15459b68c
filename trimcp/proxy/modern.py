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

What the backend sends about a request reaches that request's client as it came, before
its answer (a request's answer waits until what the backend sent before it was passed
on):

- progress, under the request's own token;
- a ``subscriptions/listen`` stream's acknowledgement and changes: they name the stream by
  the backend's request id (``_meta`` subscription id), which the proxy maps back to the
  client's;
- log messages the request opted in to (a ``logLevel`` in its envelope). Nothing in a log
  message names its request, so requests that opted in take turns: one at a time is in
  flight on the shared connection (the others wait for their turn; requests that did not
  opt in go on meanwhile, and get no log messages from the backend), and every
  notification that names no listen stream goes to it. One connection keeps the backend
  one server, as its direct clients see it (a stdio backend is one process per
  connection). Pass no log level where requests must not wait for each other.

The rest (a session-era backend's list changes in the shared session) has no one client
to go to and is dropped. Cancelling a request cancels the backend's.
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
from trimcp.protocol.jsonrpc import RequestId
from trimcp.protocol.versions import LATEST_VERSION
from trimcp.server.shell import Offer
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


class _Router:
    """The handler of one backend connection of the 2026 side: each notification goes to
    the client request it belongs to (module docs); requests have no one client to go to.

    It is a :class:`~trimcp.session.hooks.RequestRelay` that relays nothing: the engine
    asks :meth:`relay_target` from its reader, once per notification and before queueing
    it for :meth:`handle_notification`, so counting there tells an answer how many
    notifications came before it, and :meth:`caught_up` waits until they were passed on.
    """

    def __init__(self) -> None:
        #: The backend's request id -> the client's request it carries.
        self.requests: dict[RequestId, RequestContext] = {}
        #: The request whose turn it is (module docs): it gets what names no stream.
        self.speaking: RequestContext | None = None
        self.seen = 0
        self.delivered = 0
        self.closed = False
        self._moved = trio.Event()

    def relays(self, method: str) -> bool:
        return method.startswith("notifications/")

    def relay_target(self, session: Session) -> Session | None:
        self.seen += 1
        return None  # raw params to handle_notification, in the engine's order

    async def handle_request(self, ctx: RequestContext) -> Any:
        raise McpError(
            METHOD_NOT_FOUND,
            f"{ctx.method} cannot reach the proxy's client: a 2026-07-28 client is asked "
            "through input_required results, never by a request",
        )

    async def handle_notification(self, session: Session, method: str, params: Any) -> None:
        try:
            target, params = self._route(params)
            if target is None:
                logger.debug("%s from the backend dropped: no request of a client names it", method)
                return
            try:
                await target.send_notification(method, params)
            except Exception as exc:  # the client's stream went away: its request ends
                logger.debug("%s not passed on: %r", method, exc)
        finally:
            if self.relays(method):
                self.delivered += 1
                self._wake()

    def _route(self, params: Any) -> tuple[RequestContext | None, Any]:
        meta = params.get("_meta") if type(params) is dict else None
        subscription = meta.get(modern.META_SUBSCRIPTION_ID) if type(meta) is dict else None
        if subscription is None:
            return self.speaking, params
        ctx = self.requests.get(subscription) if type(subscription) in (int, str) else None
        if ctx is None:
            return None, params
        assert type(meta) is dict
        return ctx, {**params, "_meta": {**meta, modern.META_SUBSCRIPTION_ID: ctx.request_id}}

    def _wake(self) -> None:
        self._moved.set()
        self._moved = trio.Event()

    def close(self) -> None:
        self.closed = True
        self._wake()

    async def caught_up(self, count: int) -> None:
        """Wait until the first ``count`` notifications were passed on (or the
        connection closed). Cancellation: the caller stops waiting."""
        while self.delivered < count and not self.closed:
            await self._moved.wait()


class _Shared:
    """One attempt at the shared connection: set once ``ready`` (usable or failed)."""

    __slots__ = ("connected", "error", "ready", "router", "scope", "session")

    def __init__(self) -> None:
        self.ready = trio.Event()
        self.scope = trio.CancelScope()
        self.router = _Router()
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
        #: Held by the request that opted in to log messages and is in flight.
        self._turn = trio.Lock()

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

    def offer(self) -> Offer:
        """The backend's capabilities and instructions as the shared connection knows them
        (every capability before the backend is known: it then refuses what it does not
        serve), for the server shell's agreement of each 2026 request."""
        shared = self._shared
        answer = shared.connected.answer if shared and shared.connected else None
        if answer is None:
            return Offer(_UNKNOWN_CAPABILITIES, None)
        return Offer(answer.capabilities, answer.instructions)

    async def connection(self) -> tuple[Session, Connected]:
        """The shared connection, opened (or reopened) on demand. Raises
        :class:`McpError` (``-32603``) naming the backend when it cannot be reached within
        ``timeout``. Cancellation: the caller stops waiting; connecting goes on."""
        shared = await self._shared_connection()
        assert shared.session is not None
        assert shared.connected is not None
        return shared.session, shared.connected

    async def _shared_connection(self) -> _Shared:
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
        return shared

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
                async with self._open_session(shared.router) as session:
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
            shared.router.close()
            shared.ready.set()

    async def discovered(self) -> DiscoverResult:
        """The backend's own answer to ``server/discover`` when it speaks 2026-07-28 (the
        server shell answers from it); ``-32601`` when it speaks the session era (a client
        in auto mode then falls back to ``initialize``)."""
        if await self.learn_era() is Era.LEGACY:
            raise McpError(
                METHOD_NOT_FOUND,
                f"Method not found: server/discover ({self.label} speaks the session era; "
                "connect with initialize)",
            )
        _, connected = await self.connection()
        answer = connected.answer
        assert isinstance(answer, DiscoverResult)
        return answer

    async def forward(self, ctx: RequestContext) -> Any:
        """Answer one 2026 request through the shared connection; one that opted in to log
        messages waits for its turn (module docs). Raises the backend's error;
        :class:`McpError` ``-32601`` for a method the backend's protocol version does not
        have. Cancellation: the backend's request is cancelled too."""
        shared = await self._shared_connection()
        assert shared.connected is not None
        raw = ctx.params if ctx.params is None or type(ctx.params) is dict else None
        params = without_progress_token(raw if raw is not None else serde.unstructure(ctx.params))
        if shared.connected.era is Era.LEGACY:
            params = without_envelope(params)
        elif ctx.method != "subscriptions/listen" and _wants_logs(params):
            # A listen stream's messages name it; a log message names no request.
            async with self._turn:
                shared = await self._shared_connection()  # it may have gone meanwhile
                shared.router.speaking = ctx
                try:
                    return await self._send(shared, ctx, params)
                finally:
                    shared.router.speaking = None
        return await self._send(shared, ctx, params)

    async def _send(self, connection: _Shared, ctx: RequestContext, params: Any) -> Any:
        """Send one request on ``connection``; its answer once everything the backend
        sent before it has been passed on to the client."""
        session, connected, router = connection.session, connection.connected, connection.router
        assert session is not None
        assert connected is not None
        report = ctx.report_progress if ctx.progress_token is not None else None

        async def progress(value: float, total: float | None, message: str | None) -> None:
            assert report is not None
            with suppress(LocalProtocolError):  # a backend going backwards
                await report(value, total, message)

        sent: list[RequestId] = []

        def register(request_id: RequestId) -> None:
            sent.append(request_id)
            router.requests[request_id] = ctx

        try:
            try:
                result = await session.send_request(
                    ctx.method,
                    params,
                    timeout=None,
                    on_progress=progress if report is not None else None,
                    on_sent=register,
                )
            except LocalProtocolError as exc:
                raise McpError(METHOD_NOT_FOUND, f"{self.label}: {exc.message}") from None
            except McpError:
                await router.caught_up(router.seen)
                raise
            await router.caught_up(router.seen)
        finally:
            for request_id in sent:
                router.requests.pop(request_id, None)
        return with_cache_hint(ctx.method, result)


def _wants_logs(params: Any) -> bool:
    """Whether a 2026 request's envelope opts in to log messages."""
    meta = params.get("_meta") if type(params) is dict else None
    return type(meta) is dict and type(meta.get(modern.META_LOG_LEVEL)) is str


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
