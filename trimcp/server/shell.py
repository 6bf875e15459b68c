"""The one server shell: what every trimcp server answers, and how it is served, once.

:class:`ServerShell` is the :class:`~trimcp.session.SessionHandler` that
:class:`~trimcp.server.lowlevel.LowLevelServer`, :class:`trimcp.Server` and
:class:`trimcp.proxy.ProxyServer` are built on. It alone decides:

- the versions a server advertises (:attr:`ServerShell.advertised_versions`: 2026-07-28
  first, then the session-era ones it speaks);
- the answer to ``initialize`` (:func:`answer_initialize`: the client's version when we
  speak it, else our latest) and to ``server/discover`` (:func:`discover_result`, the one
  place that answer is built);
- the agreement of each 2026-07-28 request (:meth:`ServerShell.negotiate_request`);
- the dispatch miss: ``-32601`` for a method nothing answers (:meth:`ServerShell.handler_for`);
- which era a request is answered in (:meth:`ServerShell.handle_request`), and serving
  a session, a stream of either era (:func:`~trimcp.session.stateless_stream.
  serve_either_era` chooses), stdio, or everything until stopped (:meth:`ServerShell.run`).

A server built on it says what it offers (:meth:`ServerShell.offer`) and answers the
requests of each era (the ``answer_*`` methods); it may have a lifespan
(:meth:`ServerShell.open_lifespan`).
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Sequence
from contextlib import AbstractAsyncContextManager
from typing import Any, Literal, NamedTuple, TypeVar

import trio

from trimcp.errors import INVALID_REQUEST, METHOD_NOT_FOUND, McpError
from trimcp.protocol import modern
from trimcp.protocol.lifecycle import Role
from trimcp.protocol.negotiated import Negotiated
from trimcp.protocol.versions import STATELESS_VERSIONS, SUPPORTED_VERSIONS, negotiate_version
from trimcp.server.dispatch import MethodRegistry, RequestHandlerFn
from trimcp.server.hints import CacheHint
from trimcp.session.context import RequestContext
from trimcp.session.engine import Session, open_session
from trimcp.session.options import SessionOptions
from trimcp.session.transport import Transport
from trimcp.types import (
    DiscoverResult,
    Implementation,
    InitializeRequestParams,
    InitializeResult,
    ServerCapabilities,
)

#: A client notification's handler: ``async def (session, params)``.
NotificationHandlerFn = Callable[[Session, Any], Awaitable[None]]
F = TypeVar("F", bound=Callable[..., Awaitable[Any]])

#: What an offer is for: ``initialize``, one 2026-07-28 request's agreement, or
#: ``server/discover`` (which declares tasks as an extension; see ``Server.capabilities``).
Purpose = Literal["initialize", "request", "discover"]


class Offer(NamedTuple):
    """What a server offers its clients: its capabilities and instructions."""

    capabilities: ServerCapabilities
    instructions: str | None

    def kept(self, capabilities: ServerCapabilities, instructions: str | None) -> Offer:
        """This offer while its parts are these same objects, else a new one: every
        2026-07-28 request asks for one, and the agreement is kept by the offer's identity."""
        if self.capabilities is capabilities and self.instructions is instructions:
            return self
        return Offer(capabilities, instructions)


def answer_initialize(
    params: InitializeRequestParams,
    info: Implementation,
    capabilities: ServerCapabilities,
    instructions: str | None,
    supported_versions: tuple[str, ...],
) -> InitializeResult:
    """A server's answer to ``initialize``: the version agreed on (the client's when we
    speak it, else our latest), our identity, capabilities and instructions."""
    return InitializeResult(
        protocol_version=negotiate_version(params.protocol_version, supported_versions),
        capabilities=capabilities,
        server_info=info,
        instructions=instructions,
    )


def discover_result(
    versions: Iterable[str],
    offer: Offer,
    ttl_ms: int | None,
    cache_scope: Literal["public", "private"] | None,
    *,
    meta: dict[str, Any] | None = None,
) -> DiscoverResult:
    """The answer to ``server/discover``: the versions, the offer, and how long it stays
    fresh for whom (a proxy passes on its backend's, which may say nothing, and the
    backend's ``_meta``: its identity among it)."""
    return DiscoverResult(
        meta=meta,
        supported_versions=list(versions),
        capabilities=offer.capabilities,
        instructions=offer.instructions,
        ttl_ms=ttl_ms,
        cache_scope=cache_scope,
    )


def method_not_found(method: str) -> McpError:
    """The dispatch miss: ``-32601`` naming the method (cut to 100 characters)."""
    return McpError(METHOD_NOT_FOUND, f"Method not found: {method[:100]}")


def session_of(ctx: RequestContext) -> Session:
    """The session of a session-era request (the methods asking for it exist only there;
    a 2026-07-28 request for one is a dispatch miss)."""
    session = ctx.session
    if session is None:
        raise McpError(
            METHOD_NOT_FOUND, f"Method not found: {ctx.method[:100]} (removed in 2026-07-28)"
        )
    return session


class ServerShell:
    """The session handler every trimcp server is built on (see the module docstring).

    ``info``: the server's identity; ``instructions``: what ``initialize`` and
    ``server/discover`` say; ``supported_versions``: the session-era versions it speaks.
    ``methods``: the request handlers by method (:class:`~trimcp.server.dispatch.
    MethodRegistry`). Cancellation: every handler runs in its request's cancel scope.
    """

    #: Whether this class answers 2026-07-28 requests straight from its method table (it
    #: keeps the shell's :meth:`answer_stateless`): decided once per class.
    _answers_stateless_by_table: bool = True
    #: Whether it also keeps the shell's :meth:`handle_request`, which then only forwards
    #: such a request to its table handler (see :meth:`stateless_table`).
    _forwards_stateless: bool = True
    #: Whether it answers other session-era requests straight from its method table (it
    #: keeps the shell's :meth:`answer_in_session` and :meth:`handler_for`).
    _answers_in_session_by_table: bool = True

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls._answers_in_session_by_table = (
            cls.answer_in_session is ServerShell.answer_in_session
            and cls.handler_for is ServerShell.handler_for
        )
        cls._answers_stateless_by_table = cls.answer_stateless is ServerShell.answer_stateless
        cls._forwards_stateless = (
            cls._answers_stateless_by_table and cls.handle_request is ServerShell.handle_request
        )

    def __init__(
        self,
        info: Implementation,
        *,
        instructions: str | None = None,
        supported_versions: tuple[str, ...] = SUPPORTED_VERSIONS,
    ) -> None:
        self.info = info
        self.instructions = instructions
        self.supported_versions = supported_versions
        #: The request handlers, by method.
        self.methods = MethodRegistry()
        self._notification_handlers: dict[str, NotificationHandlerFn] = {}

    # --- what a server built on the shell says (override) --------------------------------

    def offer(self, purpose: Purpose) -> Offer:
        """The capabilities and instructions offered for ``purpose``."""
        raise NotImplementedError

    def discover_cache(self) -> CacheHint:
        """How long a ``server/discover`` answer stays fresh, for whom."""
        return CacheHint(0, "public")

    def open_lifespan(self) -> AbstractAsyncContextManager[Any]:
        """What runs while the server serves (every serving function enters it; nothing
        by default). Cancellation: as the context manager's own."""
        return _nothing()

    async def serves_stateless(self) -> bool:
        """Whether a stream whose first message is a 2026-07-28 request is served in that
        era (see :data:`~trimcp.session.stateless_stream.ServesStateless`); True."""
        return True

    # --- decided once for every server ---------------------------------------------------

    @property
    def advertised_versions(self) -> tuple[str, ...]:
        """Every protocol version this server speaks, 2026-07-28 first (``server/discover``
        and ``UnsupportedProtocolVersionError`` name them)."""
        return (*STATELESS_VERSIONS, *self.supported_versions)

    def initialize_result(self, params: InitializeRequestParams) -> InitializeResult:
        """Our answer to ``initialize``: the negotiated version, identity and offer."""
        offer = self.offer("initialize")
        return answer_initialize(
            params, self.info, offer.capabilities, offer.instructions, self.supported_versions
        )

    def negotiate_request(self, meta: modern.RequestMeta) -> Negotiated:
        """The agreement of one 2026-07-28 request (its ``_meta``, our identity and offer;
        see :mod:`trimcp.session.stateless`)."""
        capabilities, instructions = self.offer("request")
        return modern.negotiated(meta, self.info, capabilities, instructions)

    def discover_result(self) -> DiscoverResult:
        """Our answer to ``server/discover``."""
        hint = self.discover_cache()
        return discover_result(
            self.advertised_versions, self.offer("discover"), hint.ttl_ms, hint.scope
        )

    def handler_for(self, method: str) -> RequestHandlerFn:
        """The handler of ``method``; raises :class:`McpError` ``-32601`` when there is none."""
        handler = self.methods.get(method)
        if handler is None:
            raise method_not_found(method)
        return handler

    def notification_handler(self, method: str) -> Callable[[F], F]:
        """Run the decorated ``async def (session, params)`` for client notifications
        ``method`` (e.g. ``notifications/roots/list_changed``)."""

        def register(fn: F) -> F:
            self._notification_handlers[method] = fn
            return fn

        return register

    # --- the session handler -------------------------------------------------------------

    async def handle_request(self, ctx: RequestContext) -> Any:
        """Answer one request in its era: a 2026-07-28 request comes without a session
        (``server/discover`` or :meth:`answer_stateless`), a session-era one with
        (``initialize`` or :meth:`answer_in_session`; one carrying the 2026 envelope is
        refused ``-32600``). The engine calls this in the request's task and cancel
        scope."""
        if ctx.session is None:
            method = ctx.method
            if method == "server/discover":
                return await self.answer_discover(ctx)
            if self._answers_stateless_by_table:
                # answer_stateless() as the shell has it, inline: one frame per request.
                handler = self.methods.get(method)
                if handler is None:
                    raise method_not_found(method)
                return await handler(ctx)
            return await self.answer_stateless(ctx)
        if ctx.method == "initialize":
            return await self.answer_initialize(ctx)
        meta = getattr(ctx.params, "meta", None)
        if meta and modern.META_PROTOCOL_VERSION in meta:
            raise McpError(
                INVALID_REQUEST,
                "Invalid request: a 2026-07-28 request (its _meta names a protocol version) "
                "on a session opened with initialize; send it without the session (no "
                "Mcp-Session-Id), or without the 2026 _meta envelope",
            )
        if self._answers_in_session_by_table:
            # answer_in_session() as the shell has it, inline: two frames per request.
            handler = self.methods.get(ctx.method)
            if handler is None:
                raise method_not_found(ctx.method)
            return await handler(ctx)
        return await self.answer_in_session(ctx)

    def stateless_table(self) -> Callable[[str], RequestHandlerFn | None] | None:
        """What a transport may run a 2026-07-28 request from instead of
        :meth:`handle_request`, one frame fewer per request: the method table's lookup
        (the handler of a method, or None), when this class keeps the shell's
        :meth:`handle_request` and :meth:`answer_stateless` (which would only forward the
        request); else None. ``server/discover`` and a method the table lacks (None) go
        to :meth:`handle_request`. The lookup reads the table as it is at each request
        (a handler added while serving is seen). Cancellation: as
        :meth:`handle_request`'s."""
        return self.methods.get if self._forwards_stateless else None

    async def answer_discover(self, ctx: RequestContext) -> DiscoverResult:
        """``server/discover`` (2026-07-28)."""
        return self.discover_result()

    async def answer_initialize(self, ctx: RequestContext) -> InitializeResult:
        """``initialize`` (the session era)."""
        return self.initialize_result(ctx.params)

    async def answer_stateless(self, ctx: RequestContext) -> Any:
        """Any other 2026-07-28 request: its method's handler (a server that keeps this
        method as it is gets it inline in :meth:`handle_request`)."""
        return await self.handler_for(ctx.method)(ctx)

    async def answer_in_session(self, ctx: RequestContext) -> Any:
        """Any other request of a session: its method's handler."""
        return await self.handler_for(ctx.method)(ctx)

    async def handle_notification(self, session: Session, method: str, params: Any) -> None:
        """Run the handler registered for ``method``, if any (in the session's notifier
        task, one at a time)."""
        handler = self._notification_handlers.get(method)
        if handler is not None:
            await handler(session, params)

    # --- serving ---------------------------------------------------------------------------

    async def serve_session(
        self,
        transport: Transport,
        *,
        options: SessionOptions | None = None,
        task_status: trio.TaskStatus[Session] = trio.TASK_STATUS_IGNORED,
    ) -> None:
        """Serve one session over ``transport`` until either side closes it.

        Reports the :class:`Session` through ``task_status`` once it is running. The
        lifespan is entered first unless it already runs (:meth:`open_lifespan`).
        Cancellation: closes the session with the engine's bounded close sequence.
        """
        async with (
            self.open_lifespan(),
            open_session(transport, role=Role.SERVER, handler=self, options=options) as session,
        ):
            task_status.started(session)
            await session.wait_closed()

    async def serve_stream(
        self,
        transport: Transport,
        *,
        options: SessionOptions | None = None,
        task_status: trio.TaskStatus[Session | None] = trio.TASK_STATUS_IGNORED,
    ) -> None:
        """Serve one connection (stdio, or any message stream) in the era its first
        request asks for: a session (``initialize``), or stateless 2026-07-28 requests
        (see :func:`~trimcp.session.stateless_stream.serve_either_era`).

        The lifespan is entered first unless it already runs; readiness is reported then
        (with None). Cancellation: a session closes with the engine's bounded close
        sequence; 2026 requests are cancelled.
        """
        from trimcp.session.stateless_stream import serve_either_era

        async with self.open_lifespan():
            await serve_either_era(
                transport,
                self,
                options=options,
                task_status=task_status,
                serves_stateless=self.serves_stateless,
            )

    async def serve_stdio(
        self,
        *,
        options: SessionOptions | None = None,
        task_status: trio.TaskStatus[Session | None] = trio.TASK_STATUS_IGNORED,
    ) -> None:
        """Serve this process's stdin/stdout until the client goes away, in the era its
        first request asks for (see :meth:`serve_stream`).

        While serving, anything printed to stdout goes to stderr instead (stdout carries
        the protocol). Cancellation: as for :meth:`serve_stream`.
        """
        from trimcp.transports.stdio import open_stdio_server_transport

        async with open_stdio_server_transport() as transport:
            await self.serve_stream(transport, options=options, task_status=task_status)

    def run(
        self,
        transport: Literal["stdio", "http", "websocket", "ws"] | None = None,
        *,
        host: str | None = None,
        port: int | None = None,
        path: str | None = None,
        stateless: bool | None = None,
        json_response: bool | None = None,
        log_level: str | None = None,
        allowed_hosts: Sequence[str] | None = None,
        allowed_origins: Sequence[str] | None = None,
        options: SessionOptions | None = None,
        **settings: Any,
    ) -> None:
        """Serve until the client leaves (stdio) or Ctrl-C / SIGTERM (blocking; starts Trio).

        ``transport``: ``"stdio"`` (the default), ``"http"`` (Streamable HTTP, with the
        legacy HTTP+SSE endpoints) or ``"websocket"``. ``host``/``port`` (default
        127.0.0.1 and 8000 or 8765; ``port=0`` picks a free one), ``path`` (default
        ``/mcp``), ``stateless`` and ``json_response`` (HTTP modes), ``allowed_hosts`` /
        ``allowed_origins`` (needed to bind beyond loopback), ``log_level`` (configure
        Python logging on stderr); ``settings``: any other field of
        :class:`~trimcp.server.serving.ServeSettings` (``store``, ``reuse_port``,
        ``auth_issuer``...). Arguments left out come from ``TRIMCP_*`` environment
        variables (see :mod:`trimcp.server.serving`), then the defaults. ``options``: the
        engine's bounds for each session.

        A line on stderr names the URL actually bound. The lifespan is entered once before
        serving; when it (or a setting) fails, one line says why and the process exits with
        status 1. Ctrl-C or SIGTERM stops gracefully and returns (a second one exits at
        once). Under ``trimcp run`` this call does not serve: the command does, with its
        own flags (these arguments become its defaults).
        """
        from trimcp.server import serving

        arguments: dict[str, Any] = {
            "transport": transport,
            "host": host,
            "port": port,
            "path": path,
            "stateless": stateless,
            "json_response": json_response,
            "log_level": log_level,
            "allowed_hosts": allowed_hosts,
            "allowed_origins": allowed_origins,
            **settings,
        }
        if serving.capture_run(self, arguments):
            return
        try:
            chosen = serving.ServeSettings.from_env(**arguments)
        except serving.SettingsError as exc:
            raise SystemExit(f"trimcp: {exc}") from None
        serving.run_server(self, chosen, options=options)


@contextlib.asynccontextmanager
async def _nothing() -> AsyncIterator[None]:
    yield
