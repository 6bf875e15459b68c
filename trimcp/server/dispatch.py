"""One table from method to request handler (dispatch), for the low-level server and the framework.

:class:`MethodRegistry` is what :class:`~trimcp.server.lowlevel.LowLevelServer` registers
on and what ``trimcp.Server`` registers its built-in methods on: a method of the table
(a :class:`~trimcp.protocol.methods.Method`) with a handler typed by it, ``async def
(ctx, params) -> Result``, or a custom or extension method by name with ``async def
(ctx) -> result``. Dispatch is one dict lookup by method name.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from trimcp.protocol.methods import Method
from trimcp.session.context import RequestContext

P = TypeVar("P")
R = TypeVar("R")

#: A handler by name: ``async def (ctx) -> result`` (params on ``ctx.params``).
RequestHandlerFn = Callable[[RequestContext], Awaitable[Any]]
#: A typed handler of ``Method[P, R]``: the request's context and its params, answering
#: the method's result (a 2026 tool call, prompt or read may answer ``input_required``
#: through ``ctx``'s helpers instead).
TypedHandler = Callable[[RequestContext, P], Awaitable[R]]


class MethodRegistry:
    """Request handlers by method. Cancellation: handlers run in their request's cancel
    scope, like any handler; registering does not await."""

    __slots__ = ("_handlers", "get")

    def __init__(self) -> None:
        self._handlers: dict[str, RequestHandlerFn] = {}
        #: The handler of a method, or None (answer ``-32601``): the table's own lookup
        #: (every request asks; no Python frame of ours around it).
        self.get: Callable[[str], RequestHandlerFn | None] = self._handlers.get

    def add(self, method: Method[P, R], handler: TypedHandler[P, R]) -> None:
        """Answer ``method`` with ``handler(ctx, params)``, typed by the method."""

        async def by_context(ctx: RequestContext) -> Any:
            return await handler(ctx, ctx.params)

        self._handlers[method.name] = by_context

    def on(self, method: Method[P, R]) -> Callable[[TypedHandler[P, R]], TypedHandler[P, R]]:
        """Decorator form of :meth:`add`."""

        def register(handler: TypedHandler[P, R]) -> TypedHandler[P, R]:
            self.add(method, handler)
            return handler

        return register

    def add_named(self, method: str, handler: RequestHandlerFn) -> None:
        """Answer a custom or extension ``method`` with ``handler(ctx)``."""
        self._handlers[method] = handler

    def __contains__(self, method: str) -> bool:
        return method in self._handlers
