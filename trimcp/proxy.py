"""A proxy: a server that fronts another MCP server (a stdio command or a URL).

    proxy = ProxyServer.for_command(["npx", "-y", "@modelcontextprotocol/server-everything"])
    proxy.run(transport="http", port=8000)       # or serve it like any handler

Each client session of the proxy gets its own session with the backend, opened when the
client sends ``initialize`` (declaring the client's own capabilities to the backend) and
closed with the client's session. The client sees the backend's version-independent
identity: its ``serverInfo``, capabilities and instructions.

Forwarded both ways, as the session engine does for any request:

- client requests (tools, resources, templates, subscriptions, prompts, completion,
  logging level, anything else) go to the backend and its answer or JSON-RPC error comes
  back; progress the backend reports goes to the client (when the client asked for it);
- cancellation: a client's ``notifications/cancelled`` (or the client's session closing)
  cancels the proxy's request to the backend, which sends the backend its own
  ``notifications/cancelled``; the same holds the other way for requests the backend sends;
- backend requests to the client (``sampling/createMessage``, ``elicitation/create``,
  ``roots/list``) go to the client (an error when the client did not declare the
  capability), their answers back;
- notifications: log messages, ``*/list_changed``, ``resources/updated`` and the rest from
  the backend to the client; ``roots/list_changed`` and the rest from the client to the
  backend.

Requests wait for the backend as long as it takes (a client's own timeout cancels them,
or set ``SessionOptions(handler_timeout=...)`` on the serving side); connecting and the
backend's handshake are bounded by ``connect_timeout``. 2026-07-28 stateless requests are
refused (the proxy speaks the session era).
"""

from __future__ import annotations

import contextlib
import logging
import weakref
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from typing import Any

import attrs
import trio

from trimcp.errors import (
    INTERNAL_ERROR,
    INVALID_REQUEST,
    LocalProtocolError,
    McpError,
    SessionClosed,
)
from trimcp.protocol.lifecycle import Role
from trimcp.protocol.versions import SUPPORTED_VERSIONS, negotiate_version
from trimcp.session import RequestContext, Session, SessionOptions, open_session
from trimcp.session.relay import without_progress_token
from trimcp.transports.base import Transport
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
        """Serve the proxy until stopped, as :meth:`trimcp.Server.run` does."""
        from trimcp.server import serving

        try:
            values = serving.ServeSettings.from_env(transport=transport, **settings)
        except serving.SettingsError as exc:
            raise SystemExit(f"trimcp: {exc}") from None
        serving.run_server(self, values)

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
            async with self._open_backend(session, params) as (backend, result):
                link.backend, link.result = backend, result
                link.ready.set()
                await session.wait_closed()
        except Exception as exc:
            link.error = exc
            logger.warning("cannot reach %s: %s", self.label, exc)
        finally:
            link.ready.set()

    @contextlib.asynccontextmanager
    async def _open_backend(
        self, client: Session, params: InitializeRequestParams
    ) -> AsyncIterator[tuple[Session, InitializeResult]]:
        async with (
            self._connect() as transport,
            open_session(
                transport,
                role=Role.CLIENT,
                handler=_TowardsClient(client),
                options=self.backend_options,
            ) as backend,
        ):
            with trio.fail_after(self.connect_timeout):
                result: InitializeResult = await backend.initialize(params)
            yield backend, result

    async def handle_request(self, ctx: RequestContext) -> Any:
        session = ctx.session
        if session is None:
            raise McpError(
                INVALID_REQUEST, "This proxy serves session clients only (send initialize first)"
            )
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
