"""A low-level server: a table from method to async handler, plus the handshake.

The decorator framework (``trimcp.Server``) and the proxy are built on the same shell
(:mod:`trimcp.server.shell`); this one is for code that wants to answer raw MCP methods
itself. Register a method of the table typed end to end::

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

from trimcp.protocol import modern
from trimcp.protocol.methods import Method
from trimcp.protocol.negotiated import Negotiated
from trimcp.protocol.versions import SUPPORTED_VERSIONS
from trimcp.server.dispatch import P, R, TypedHandler
from trimcp.server.shell import (
    NotificationHandlerFn,
    Offer,
    Purpose,
    ServerShell,
    answer_initialize,
)
from trimcp.types import Implementation, ServerCapabilities

__all__ = ["LowLevelServer", "NotificationHandlerFn", "answer_initialize"]

F = TypeVar("F", bound=Callable[..., Awaitable[Any]])


class LowLevelServer(ServerShell):
    """Answers ``initialize`` and ``server/discover`` from its identity and capabilities,
    and any method registered: the server shell (:class:`~trimcp.server.shell.ServerShell`)
    with a fixed offer.

    Handlers receive the :class:`RequestContext` (typed params in ``ctx.params``) and return
    a typed result or a dict; raising :class:`McpError` answers with that error. Unknown
    methods get ``-32601``. Capabilities are declared explicitly: the protocol core refuses
    requests for capabilities that were not declared. Serve it like any server
    (:meth:`run`, :meth:`serve_stream`, ``serve_http(server)``, ``connect_memory(server)``).
    """

    def __init__(
        self,
        info: Implementation,
        *,
        capabilities: ServerCapabilities | None = None,
        instructions: str | None = None,
        supported_versions: tuple[str, ...] = SUPPORTED_VERSIONS,
    ) -> None:
        super().__init__(info, instructions=instructions, supported_versions=supported_versions)
        #: What it declares, in ``initialize``, ``server/discover`` and every 2026 request.
        self.capabilities = capabilities or ServerCapabilities()
        self._offer = Offer(self.capabilities, self.instructions)
        self._last_agreed: (
            tuple[
                modern.RequestMeta,
                ServerCapabilities,
                str | None,
                Implementation,
                Negotiated,
            ]
            | None
        ) = None

    def offer(self, purpose: Purpose) -> Offer:
        # The same Offer while neither attribute changes (every 2026 request asks; the
        # check of Offer.kept, inline).
        offer = self._offer
        if offer.capabilities is self.capabilities and offer.instructions is self.instructions:
            return offer
        offer = self._offer = Offer(self.capabilities, self.instructions)
        return offer

    def negotiate_request(self, meta: modern.RequestMeta) -> Negotiated:
        # Every 2026 request asks. This server's offer is two attributes: while they, its
        # identity and the request's envelope (read_request_meta hands back the same
        # RequestMeta for the same envelope) are the objects of the last request, so is
        # the agreement; else the shell's way (offer(), then modern.negotiated).
        last = self._last_agreed
        if (
            last is not None
            and last[0] is meta
            and last[1] is self.capabilities
            and last[2] is self.instructions
            and last[3] is self.info
        ):
            return last[4]
        agreed = super().negotiate_request(meta)
        self._last_agreed = (meta, self.capabilities, self.instructions, self.info, agreed)
        return agreed

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
