"""The proxy server: a session handler that relays everything to a backend (see
:mod:`trimcp.proxy`)."""

from __future__ import annotations

import contextlib
import logging
import weakref
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from typing import Any

import attrs
import trio

from trimcp.client.stateless import Era
from trimcp.errors import (
    INTERNAL_ERROR,
    INVALID_REQUEST,
    LocalProtocolError,
    McpError,
    SessionClosed,
)
from trimcp.protocol import modern
from trimcp.protocol.lifecycle import Role
from trimcp.protocol.negotiated import Negotiated
from trimcp.protocol.versions import STATELESS_VERSIONS, SUPPORTED_VERSIONS, negotiate_version
from trimcp.proxy.modern import SharedBackend
from trimcp.session import (
    RequestContext,
    Session,
    SessionHandler,
    SessionOptions,
    open_session,
)
from trimcp.session.relay import without_progress_token
from trimcp.session.transport import Transport
from trimcp.types import (
    ClientCapabilities,
    Implementation,
    InitializeRequestParams,
    InitializeResult,
)

logger = logging.getLogger("trimcp.proxy")

#: Opens a transport to the backend for the body of the ``async with``.
TransportFactory = Callable[[], AbstractAsyncContextManager[Transport]]
#: Notifications the engine consumes itself (never forwarded by the handler).
_OWN_NOTIFICATIONS = frozenset(
    {"notifications/initialized", "notifications/cancelled", "notifications/progress"}
)


class _Link:
    """One client session's connection to the backend."""

    __slots__ = ("backend", "error", "params", "ready", "result", "wanted")

    def __init__(self) -> None:
        self.wanted = trio.Event()
        self.ready = trio.Event()
        self.params: InitializeRequestParams | None = None
        self.backend: Session | None = None
        self.result: InitializeResult | None = None
        self.error: BaseException | None = None


class _TowardsClient:
    """The handler of the backend session: what the backend sends goes to the client."""

    def __init__(self, client: Session) -> None:
        self.client = client

    def relays(self, method: str) -> bool:
        # Notifications go to the client raw and from the reader, so a log message the
        # backend sends before an answer reaches the client before that answer. Requests
        # (sampling, elicitation, roots) take the typed path (capability checks).
        return method.startswith("notifications/")

    def relay_target(self, session: Session) -> Session | None:
        return None if self.client.closing else self.client

    async def handle_request(self, ctx: RequestContext) -> Any:
        try:
            return await self.client.send_request(ctx.method, ctx.params, timeout=None)
        except LocalProtocolError as exc:  # the client did not declare the capability
            raise McpError(INVALID_REQUEST, exc.message) from None
        except SessionClosed:
            raise McpError(INTERNAL_ERROR, "The proxy's client has gone away") from None

    async def handle_notification(self, session: Session, method: str, params: Any) -> None:
        await _forward_notification(self.client, method, params)


async def _forward_notification(to: Session, method: str, params: Any) -> None:
    if method in _OWN_NOTIFICATIONS:
        return
    try:
        await to.send_notification(method, params)
    except (LocalProtocolError, SessionClosed) as exc:
        logger.debug("%s not forwarded: %s", method, exc)


class ProxyServer:
    """A session handler that forwards everything to a backend MCP server (see the module
    docs). Serve it like any handler: :meth:`run`, ``serve_http(proxy)``,
    ``serve_stdio(proxy)``, ``connect_memory(proxy)``.

    ``connect``: opens a transport to the backend (see :meth:`for_command` and
    :meth:`for_url`). ``connect_timeout`` bounds connecting plus the backend's handshake.
    ``backend_options``: the engine's bounds for each backend session.
    """

    def __init__(
        self,
        connect: TransportFactory,
        *,
        connect_timeout: float = 30.0,
        backend_options: SessionOptions | None = None,
        supported_versions: tuple[str, ...] = SUPPORTED_VERSIONS,
        label: str = "the proxied server",
    ) -> None:
        self._connect = connect
        self.connect_timeout = connect_timeout
        self.backend_options = backend_options
        self.supported_versions = supported_versions
        self.label = label
        self._links: weakref.WeakKeyDictionary[Session, _Link] = weakref.WeakKeyDictionary()
        self._modern = SharedBackend(
            self._open_session, timeout=connect_timeout, label=label, info=self.info
        )

    @classmethod
    def for_command(
        cls, argv: Sequence[str], *, env: Mapping[str, str] | None = None, **options: Any
    ) -> ProxyServer:
        """A proxy for the stdio server ``argv`` (spawned once per client session)."""
        from trimcp.transports.stdio import open_stdio_client_transport

        command = list(argv)

        def connect() -> AbstractAsyncContextManager[Transport]:
            return open_stdio_client_transport(command, env=env)

        return cls(connect, label=" ".join(command)[:200], **options)

    @classmethod
    def for_url(
        cls, url: str, *, headers: Mapping[str, str] | None = None, **options: Any
    ) -> ProxyServer:
        """A proxy for the Streamable HTTP (or legacy HTTP+SSE) server at ``url``."""
        from trimcp.transports.http_client import open_http_client_transport

        def connect() -> AbstractAsyncContextManager[Transport]:
            return open_http_client_transport(url, headers=headers)

        return cls(connect, label=url, **options)

    @property
    def info(self) -> Implementation:
        return Implementation(name="trimcp-proxy", version="1", title=self.label)

    def run(self, transport: str | None = None, **settings: Any) -> None:
        """Serve the proxy until stopped, as :meth:`trimcp.Server.run` does (under
        ``trimcp run`` it does not serve: its arguments become the command's defaults)."""
        from trimcp.server import serving

        if serving.capture_run(self, {"transport": transport, **settings}):
            return
        try:
            values = serving.ServeSettings.from_env(transport=transport, **settings)
        except serving.SettingsError as exc:
            raise SystemExit(f"trimcp: {exc}") from None
        serving.run_server(self, values)

    # --- 2026-07-28 (trimcp.session.stateless.StatelessHandler; see trimcp.proxy.modern) --

    @property
    def advertised_versions(self) -> tuple[str, ...]:
        """The versions the proxy speaks to its clients, 2026-07-28 first."""
        return (*STATELESS_VERSIONS, *self.supported_versions)

    def negotiate_request(self, meta: modern.RequestMeta) -> Negotiated:
        """The agreement of one 2026 request: its ``_meta`` and the backend's identity."""
        return self._modern.negotiate(meta)

    def open_lifespan(self) -> AbstractAsyncContextManager[None]:
        """The proxy's lifespan (every serving function enters it): it owns the backend
        session shared by 2026-07-28 clients. Cancellation: that session closes with the
        engine's bounded sequence."""
        return self._modern.open()

    async def serve_stream(
        self,
        transport: Transport,
        *,
        options: SessionOptions | None = None,
        task_status: trio.TaskStatus[Session | None] = trio.TASK_STATUS_IGNORED,
    ) -> None:
        """Serve one connection (stdio, or any message stream) in the era its first
        request asks for, as :meth:`trimcp.Server.serve_stream` does, except that a 2026
        first request (an auto-mode client's ``server/discover``) to a proxy whose backend
        speaks the session era gets a session, which refuses the probe as a session-era
        server does: the client falls back to ``initialize`` on the same connection.
        Reports readiness at once (with None). Cancellation: a session closes with the
        engine's bounded close sequence; 2026 requests are cancelled."""
        from trimcp.session.stateless_stream import serve_either_era

        async with self.open_lifespan():
            await serve_either_era(
                transport,
                self,
                options=options,
                task_status=task_status,
                serves_stateless=self._backend_is_stateless,
            )

    async def _backend_is_stateless(self) -> bool:
        """Whether a 2026 first request is served stateless: unless the backend speaks
        only the session era (unreachable: each request says so)."""
        with contextlib.suppress(McpError):
            return await self._modern.learn_era() is not Era.LEGACY
        return True

    # --- relaying (trimcp.session.hooks.RequestRelay) -----------------------------------

    def relays(self, method: str) -> bool:
        """Every request but ``initialize`` and every notification but
        ``notifications/initialized`` is relayed raw: decoded JSON in, the same JSON out
        with the id (and progress token) remapped, never typed classes."""
        return method != "notifications/initialized"

    def relay_target(self, session: Session) -> Session | None:
        """The backend session of ``session``, once it is connected."""
        link = self._links.get(session)
        backend = link.backend if link is not None else None
        if backend is None or backend.closing:
            return None
        return backend

    # --- the session handler ------------------------------------------------------------

    async def attend_session(
        self, session: Session, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
    ) -> None:
        """Own the backend session of ``session`` (the engine runs this next to it)."""
        link = self._links[session] = _Link()
        task_status.started()
        await link.wanted.wait()
        params = link.params
        assert params is not None
        try:
            async with self._open_backend(_TowardsClient(session), params) as (backend, result):
                link.backend, link.result = backend, result
                link.ready.set()
                await session.wait_closed()
        except Exception as exc:
            link.error = exc
            logger.warning("cannot reach %s: %s", self.label, exc)
        finally:
            link.ready.set()

    @contextlib.asynccontextmanager
    async def _open_session(self, handler: SessionHandler) -> AsyncIterator[Session]:
        """A bare backend session (role client, no handshake yet) for the body."""
        async with (
            self._connect() as transport,
            open_session(
                transport, role=Role.CLIENT, handler=handler, options=self.backend_options
            ) as backend,
        ):
            yield backend

    @contextlib.asynccontextmanager
    async def _open_backend(
        self, handler: SessionHandler, params: InitializeRequestParams
    ) -> AsyncIterator[tuple[Session, InitializeResult]]:
        async with self._open_session(handler) as backend:
            with trio.fail_after(self.connect_timeout):
                result: InitializeResult = await backend.initialize(params)
            yield backend, result

    async def handle_request(self, ctx: RequestContext) -> Any:
        session = ctx.session
        if session is None:  # a 2026-07-28 request
            if ctx.method == "server/discover":
                return await self._modern.discover(self.advertised_versions)
            return await self._modern.forward(ctx)
        link = self._links.get(session)
        if link is None:
            raise McpError(INTERNAL_ERROR, "The proxy has no backend for this session")
        if ctx.method == "initialize":
            return await self._initialize(link, ctx.params)
        backend = link.backend
        if backend is None or backend.closing:
            raise McpError(INTERNAL_ERROR, f"{self.label} is not connected")
        report = ctx.report_progress if ctx.progress_token is not None else None

        async def progress(value: float, total: float | None, message: str | None) -> None:
            assert report is not None
            with contextlib.suppress(LocalProtocolError):  # a backend going backwards
                await report(value, total, message)

        try:
            return await backend.send_request(
                ctx.method,
                without_progress_token(ctx.params),
                timeout=None,
                on_progress=progress if report is not None else None,
            )
        except SessionClosed as exc:
            raise McpError(
                INTERNAL_ERROR, f"{self.label} closed the connection: {exc.message}"
            ) from None

    async def _initialize(self, link: _Link, params: InitializeRequestParams) -> Any:
        # The backend is asked for the version the client wants; the client gets what we
        # both support.
        link.params = attrs.evolve(params, capabilities=_client_capabilities(params))
        link.wanted.set()
        with trio.move_on_after(self.connect_timeout + 1):
            await link.ready.wait()
        result = link.result
        if result is None:
            reason = link.error or "no answer in time"
            raise McpError(INTERNAL_ERROR, f"Cannot reach {self.label}: {reason}")
        return InitializeResult(
            protocol_version=negotiate_version(params.protocol_version, self.supported_versions),
            capabilities=result.capabilities,
            server_info=result.server_info,
            instructions=result.instructions,
        )

    async def handle_notification(self, session: Session, method: str, params: Any) -> None:
        link = self._links.get(session)
        backend = link.backend if link is not None else None
        if backend is not None and not backend.closing:
            await _forward_notification(backend, method, params)


def _client_capabilities(params: InitializeRequestParams) -> ClientCapabilities:
    return params.capabilities


__all__ = ["ProxyServer"]
