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
from trimcp.protocol.lifecycle import Role
from trimcp.protocol.versions import SUPPORTED_VERSIONS
from trimcp.proxy.modern import SharedBackend
from trimcp.server.shell import (
    Offer,
    Purpose,
    ServerShell,
    answer_initialize,
    discover_result,
    session_of,
)
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
    DiscoverResult,
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


class ProxyServer(ServerShell):
    """A session handler that forwards everything to a backend MCP server (see the module
    docs), on the server shell (:class:`~trimcp.server.shell.ServerShell`). Serve it like
    any server: :meth:`run`, ``serve_http(proxy)``, ``serve_stdio(proxy)``,
    ``connect_memory(proxy)``.

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
        info = Implementation(name="trimcp-proxy", version="1", title=label)
        super().__init__(info, supported_versions=supported_versions)
        self._connect = connect
        self.connect_timeout = connect_timeout
        self.backend_options = backend_options
        self.label = label
        self._links: weakref.WeakKeyDictionary[Session, _Link] = weakref.WeakKeyDictionary()
        self._modern = SharedBackend(
            self._open_session, timeout=connect_timeout, label=label, info=info
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

    # --- what the shell asks (see trimcp.proxy.modern for the 2026-07-28 side) ----------

    def offer(self, purpose: Purpose) -> Offer:
        """The backend's capabilities and instructions, as the shared backend connection
        knows them (every capability before it is known: the backend then refuses what
        it does not serve). A session's ``initialize`` answers its own backend's."""
        return self._modern.offer()

    def open_lifespan(self) -> AbstractAsyncContextManager[None]:
        """The proxy's lifespan (every serving function enters it): it owns the backend
        session shared by 2026-07-28 clients. Cancellation: that session closes with the
        engine's bounded sequence."""
        return self._modern.open()

    async def serves_stateless(self) -> bool:
        """A 2026 first request on a stream (an auto-mode client's ``server/discover``) to
        a proxy whose backend speaks the session era gets a session, which refuses the
        probe as a session-era server does: the client falls back to ``initialize`` on
        the same connection. An unreachable backend: each request says so."""
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

    async def answer_discover(self, ctx: RequestContext) -> DiscoverResult:
        """The backend's answer, less the versions the proxy does not speak; ``-32601``
        when the backend speaks the session era (see :meth:`SharedBackend.discovered`)."""
        answer = await self._modern.discovered()
        versions = [v for v in answer.supported_versions if v in self.advertised_versions]
        offer = Offer(answer.capabilities, answer.instructions)
        return discover_result(versions, offer, answer.ttl_ms, answer.cache_scope, meta=answer.meta)

    async def answer_stateless(self, ctx: RequestContext) -> Any:
        return await self._modern.forward(ctx)

    async def answer_initialize(self, ctx: RequestContext) -> InitializeResult:
        # The backend is asked for the version the client wants; the client gets what we
        # both support.
        link = self._link_of(ctx)
        params: InitializeRequestParams = ctx.params
        link.params = attrs.evolve(params, capabilities=_client_capabilities(params))
        link.wanted.set()
        with trio.move_on_after(self.connect_timeout + 1):
            await link.ready.wait()
        result = link.result
        if result is None:
            reason = link.error or "no answer in time"
            raise McpError(INTERNAL_ERROR, f"Cannot reach {self.label}: {reason}")
        return answer_initialize(
            params,
            result.server_info,
            result.capabilities,
            result.instructions,
            self.supported_versions,
        )

    async def answer_in_session(self, ctx: RequestContext) -> Any:
        backend = self._link_of(ctx).backend
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

    def _link_of(self, ctx: RequestContext) -> _Link:
        link = self._links.get(session_of(ctx))
        if link is None:
            raise McpError(INTERNAL_ERROR, "The proxy has no backend for this session")
        return link

    async def handle_notification(self, session: Session, method: str, params: Any) -> None:
        link = self._links.get(session)
        backend = link.backend if link is not None else None
        if backend is not None and not backend.closing:
            await _forward_notification(backend, method, params)


def _client_capabilities(params: InitializeRequestParams) -> ClientCapabilities:
    return params.capabilities


__all__ = ["ProxyServer"]
