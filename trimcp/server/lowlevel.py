"""A low-level server: a table from method to async handler, plus the handshake.

The decorator framework (``trimcp.Server``) is built on the same :class:`SessionHandler`
contract; this registry is for code that wants to answer raw MCP methods itself. Register
a method of the table typed end to end::

    server = LowLevelServer(Implementation(name="raw", version="1"), capabilities=...)

    @server.on(CALL_TOOL)  # trimcp.protocol.methods.CALL_TOOL
    async def call(ctx: RequestContext, params: CallToolRequestParams) -> CallToolResult:
        ...

mypy checks the handler's params and result against the method's; a custom or
extension method goes through :meth:`LowLevelServer.request_handler` by name.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from trimcp.errors import METHOD_NOT_FOUND, McpError
from trimcp.protocol import modern
from trimcp.protocol.methods import Method
from trimcp.protocol.negotiated import Negotiated
from trimcp.protocol.versions import STATELESS_VERSIONS, SUPPORTED_VERSIONS, negotiate_version
from trimcp.server.dispatch import MethodRegistry, P, R, TypedHandler
from trimcp.session.context import RequestContext
from trimcp.session.engine import Session
from trimcp.types import (
    DiscoverResult,
    Implementation,
    InitializeRequestParams,
    InitializeResult,
    ServerCapabilities,
)

NotificationHandlerFn = Callable[[Session, Any], Awaitable[None]]
F = TypeVar("F", bound=Callable[..., Awaitable[Any]])


def answer_initialize(
    params: InitializeRequestParams,
    info: Implementation,
    capabilities: ServerCapabilities,
    instructions: str | None,
    supported_versions: tuple[str, ...],
) -> InitializeResult:
    """A server's answer to ``initialize`` (the low-level server's and the framework's):
    the version agreed on (the client's when we speak it, else our latest), our identity,
    capabilities and instructions."""
    return InitializeResult(
        protocol_version=negotiate_version(params.protocol_version, supported_versions),
        capabilities=capabilities,
        server_info=info,
        instructions=instructions,
    )


class LowLevelServer:
    """Answers ``initialize`` from its identity and capabilities, and any method registered.

    Handlers receive the :class:`RequestContext` (typed params in ``ctx.params``) and return
    a typed result or a dict; raising :class:`McpError` answers with that error. Unknown
    methods get ``-32601``. Capabilities are declared explicitly: the protocol core refuses
    requests for capabilities that were not declared.
    """

    def __init__(
        self,
        info: Implementation,
        *,
        capabilities: ServerCapabilities | None = None,
        instructions: str | None = None,
        supported_versions: tuple[str, ...] = SUPPORTED_VERSIONS,
    ) -> None:
        self.info = info
        self.capabilities = capabilities or ServerCapabilities()
        self.instructions = instructions
        self.supported_versions = supported_versions
        #: The request handlers, by method (the framework registers on the same kind).
        self.methods = MethodRegistry()
        self._notifications: dict[str, NotificationHandlerFn] = {}

    def on(self, method: Method[P, R]) -> Callable[[TypedHandler[P, R]], TypedHandler[P, R]]:
        """Decorator: answer ``method`` (a constant of :mod:`trimcp.protocol.methods`) with
        ``async def (ctx, params) -> result``, typed by the method. Cancellation: the
        handler runs in the request's cancel scope, like any handler."""
        return self.methods.on(method)

    def request_handler(self, method: str) -> Callable[[F], F]:
        """Decorator: answer ``method`` with the decorated ``async def (ctx) -> result``
        (a custom or extension method; the table's methods are typed with :meth:`on`)."""

        def register(fn: F) -> F:
            self.methods.add_named(method, fn)
            return fn

        return register

    def notification_handler(self, method: str) -> Callable[[F], F]:
        """Decorator: run the decorated ``async def (session, params)`` for ``method``."""

        def register(fn: F) -> F:
            self._notifications[method] = fn
            return fn

        return register

    def initialize_result(self, params: InitializeRequestParams) -> InitializeResult:
        """Our answer to ``initialize``: the negotiated version, identity and capabilities."""
        return answer_initialize(
            params, self.info, self.capabilities, self.instructions, self.supported_versions
        )

    # --- 2026-07-28: stateless requests (ctx.session is None for them) ------------------

    @property
    def advertised_versions(self) -> tuple[str, ...]:
        """The versions ``server/discover`` and ``-32022`` name, 2026-07-28 first."""
        return (*STATELESS_VERSIONS, *self.supported_versions)

    def negotiate_request(self, meta: modern.RequestMeta) -> Negotiated:
        """The agreement of one 2026-07-28 request (its ``_meta``, our identity)."""
        return modern.negotiated(
            meta,
            server_info=self.info,
            server_capabilities=self.capabilities,
            instructions=self.instructions,
        )

    async def handle_request(self, ctx: RequestContext) -> Any:
        """Answer ``initialize`` and ``server/discover`` ourselves, the rest with the
        registered handlers (a 2026 request arrives with ``ctx.session`` None)."""
        if ctx.method == "initialize":
            return self.initialize_result(ctx.params)
        if ctx.method == "server/discover" and ctx.session is None:
            return DiscoverResult(
                supported_versions=list(self.advertised_versions),
                capabilities=self.capabilities,
                instructions=self.instructions,
                ttl_ms=0,
                cache_scope="public",
            )
        handler = self.methods.get(ctx.method)
        if handler is None:
            raise McpError(METHOD_NOT_FOUND, f"Method not found: {ctx.method}")
        return await handler(ctx)

    async def handle_notification(self, session: Session, method: str, params: Any) -> None:
        handler = self._notifications.get(method)
        if handler is not None:
            await handler(session, params)
