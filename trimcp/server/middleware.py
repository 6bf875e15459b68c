"""Middleware: code that runs around every inbound request and notification of a server.

    async def timing(call: Call, call_next: Next) -> Any:
        start = time.perf_counter()
        try:
            return await call_next(call)
        finally:
            print(call.method, time.perf_counter() - start)

    app = Server("x", middleware=[timing])        # or app.add_middleware(timing)

A middleware is ``async def (call, call_next) -> result``. It reads the message
(:class:`Call`: ``method``, ``params``, ``kind``, ``ctx`` with ``ctx.auth`` where the
transport authenticated the caller), and then either

- calls ``await call_next(call)`` and returns what it returns (possibly changed: it may
  wrap the result), or
- short-circuits: returns a result itself, or raises :class:`~trimcp.errors.McpError`
  (answered as that JSON-RPC error), without calling ``call_next``.

It may also replace ``call.params`` before passing the call on. The first middleware
registered is the outermost. Every request passes through (``initialize`` and the
2026-07-28 stateless requests included) except ``ping``, which the engine answers itself;
notifications too (``call.kind == "notification"``, the result is ignored).

Cancellation: middleware runs in the request's task, inside its cancel scope, like the
handler: a client's ``notifications/cancelled``, the handler timeout or the session
closing raise ``trio.Cancelled`` at its next checkpoint (in ``call_next`` or its own
awaits), and its ``finally`` blocks run. Whatever it returns after that is not sent.

Built-ins: :class:`TimingMiddleware`, :class:`LoggingMiddleware`,
:class:`RateLimitMiddleware` (per caller) and :class:`ErrorMaskingMiddleware`.
Client-side middleware for outgoing requests: :mod:`trimcp.client.middleware`.
"""

from __future__ import annotations

import logging
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Hashable, Sequence
from typing import TYPE_CHECKING, Any, Final, Literal

import trio

from trimcp.auth.principal import principal_key
from trimcp.errors import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    McpError,
)
from trimcp.types import CallToolResult, TextContent

if TYPE_CHECKING:
    from trimcp.server.app import Server
    from trimcp.server.context import Context
    from trimcp.session.context import RequestContext
    from trimcp.session.engine import Session

Kind = Literal["request", "notification"]


class Call:
    """One inbound request or notification passing through the middleware."""

    __slots__ = ("_ctx", "kind", "method", "params", "request", "server", "session")

    def __init__(
        self,
        server: Server,
        kind: Kind,
        method: str,
        params: Any,
        request: RequestContext | None,
        session: Session | None,
    ) -> None:
        self.server = server
        self.kind: Kind = kind
        self.method = method
        #: The typed params of a request (e.g. ``CallToolRequestParams``); a notification's
        #: params as they arrived. A middleware may replace them.
        self.params = params
        #: The engine's view of a request (cancel scope, id, negotiated version); None for
        #: a notification.
        self.request = request
        #: The session (None for a 2026-07-28 stateless request).
        self.session = session
        self._ctx: Context | None = None

    def __repr__(self) -> str:
        return f"<Call {self.kind} {self.method!r}>"

    @property
    def ctx(self) -> Context | None:
        """The handler's :class:`~trimcp.server.context.Context` for a request (None for a
        notification): ``ctx.client_info``, ``ctx.auth``, ``ctx.lifespan``, logging..."""
        if self._ctx is None and self.request is not None:
            from trimcp.server.context import Context

            self._ctx = Context(self.server, self.request)
        return self._ctx

    @property
    def request_id(self) -> int | str | None:
        return self.request.request_id if self.request is not None else None

    @property
    def name(self) -> str | None:
        """What the call is about: the tool or prompt name, or the resource URI."""
        params = self.params
        name = getattr(params, "name", None)
        if isinstance(name, str):
            return name
        uri = getattr(params, "uri", None)
        return uri if isinstance(uri, str) else None

    @property
    def principal(self) -> Hashable | None:
        """Who the request acts for, as the transport authenticated it (None: anonymous)."""
        return getattr(self.request, "principal", None)

    @property
    def session_id(self) -> str | None:
        """The HTTP session's ``Mcp-Session-Id`` (None: stdio, WebSocket, a stateless
        request). Treat it as a secret in logs: :class:`LoggingMiddleware` logs a prefix."""
        session = self.session
        if session is None:
            return None
        session_id = getattr(session.transport, "session_id", None)
        return session_id if isinstance(session_id, str) else None

    @property
    def cancel_scope(self) -> trio.CancelScope | None:
        """The request's cancel scope (None for a notification)."""
        return self.request.cancel_scope if self.request is not None else None


Next = Callable[[Call], Awaitable[Any]]
Middleware = Callable[[Call, Next], Awaitable[Any]]


def build_chain(middleware: Sequence[Middleware], terminal: Next) -> Next:
    """``terminal`` wrapped by ``middleware`` (the first is the outermost).

    Each layer is a plain function returning the middleware's awaitable: no extra
    coroutine frame per layer.
    """
    chain = terminal
    for layer in reversed(middleware):
        chain = _link(layer, chain)
    return chain


def _link(layer: Middleware, nxt: Next) -> Next:
    def step(call: Call) -> Awaitable[Any]:
        return layer(call, nxt)

    return step


def caller_key(call: Call) -> Hashable:
    """Who is calling, for per-caller limits: the authenticated principal (its
    :func:`~trimcp.auth.principal_key`, so every token or hook object of one principal
    shares one budget, and principals that compare equal but are not the same, such as
    tokens naming nobody, do not), else the session, else (stateless, anonymous) the
    client's name."""
    key = principal_key(call.principal)
    if key is not None:
        return ("principal", key)
    if call.session is not None:
        return ("session", id(call.session))
    negotiated = call.request.negotiated if call.request is not None else None
    info = negotiated.client_info if negotiated is not None else None
    return ("client", info.name if info is not None else None)


# --- built-ins ------------------------------------------------------------------------------


def _outcome(exc: BaseException | None, result: Any) -> str:
    if exc is None:
        return "error" if isinstance(result, CallToolResult) and result.is_error else "ok"
    if isinstance(exc, trio.Cancelled):
        return "cancelled"
    return "error"


class TimingMiddleware:
    """Measures each call; ``on_timing(call, seconds, outcome)`` gets the duration.

    ``outcome`` is ``"ok"``, ``"error"`` (an exception, or a tool's ``isError`` result) or
    ``"cancelled"``. Without ``on_timing`` the time is logged at DEBUG on
    ``trimcp.timing``. The duration is wall time (``time.perf_counter``).
    """

    def __init__(self, on_timing: Callable[[Call, float, str], None] | None = None) -> None:
        self.on_timing = on_timing or self._log
        self.logger = logging.getLogger("trimcp.timing")

    def _log(self, call: Call, seconds: float, outcome: str) -> None:
        self.logger.debug("%s %s %s %.3f ms", call.method, call.name or "", outcome, seconds * 1000)

    async def __call__(self, call: Call, call_next: Next) -> Any:
        start = time.perf_counter()
        result: Any = None
        error: BaseException | None = None
        try:
            result = await call_next(call)
            return result
        except BaseException as exc:
            error = exc
            raise
        finally:
            self.on_timing(call, time.perf_counter() - start, _outcome(error, result))


class LoggingMiddleware:
    """One structured log record per call, on logger ``logger`` (default ``trimcp.requests``).

    The record's message reads ``tools/call add ok 1.2 ms session=3fa9c1d2
    principal=p:5e0f...``: the first 8 characters of the HTTP session id (the whole id
    would let a reader of the logs use the session), and the caller's
    :func:`~trimcp.auth.principal_key` when the transport authenticated one. Its ``mcp``
    attribute (via ``extra``) holds the fields for JSON log formatters: ``method``,
    ``kind``, ``id``, ``name``, ``outcome``, ``duration_ms``, ``error_code``, ``client``,
    ``session``, ``principal`` and, with ``include_params``, ``params``. Errors log at
    WARNING, the rest at ``level``. ``trimcp run --log-level info`` (or ``debug``) and
    ``app.run(log_level="info")`` add one, outermost, unless the server has one already.
    """

    def __init__(
        self,
        logger: str | logging.Logger = "trimcp.requests",
        *,
        level: int = logging.INFO,
        include_params: bool = False,
    ) -> None:
        self.logger = logger if isinstance(logger, logging.Logger) else logging.getLogger(logger)
        self.level = level
        self.include_params = include_params

    async def __call__(self, call: Call, call_next: Next) -> Any:
        start = time.perf_counter()
        result: Any = None
        error: BaseException | None = None
        try:
            result = await call_next(call)
            return result
        except BaseException as exc:
            error = exc
            raise
        finally:
            self._emit(call, time.perf_counter() - start, error, result)

    def _emit(self, call: Call, seconds: float, error: BaseException | None, result: Any) -> None:
        outcome = _outcome(error, result)
        level = logging.WARNING if outcome == "error" else self.level
        if not self.logger.isEnabledFor(level):
            return
        from trimcp.auth.principal import principal_key  # (only when logging)

        negotiated = call.request.negotiated if call.request is not None else None
        info = negotiated.client_info if negotiated is not None else None
        session_id = call.session_id
        session = session_id[:8] if session_id is not None else None
        principal = principal_key(call.principal)
        fields: dict[str, Any] = {
            "method": call.method,
            "kind": call.kind,
            "id": call.request_id,
            "name": call.name,
            "outcome": outcome,
            "duration_ms": round(seconds * 1000, 3),
            "error_code": error.code if isinstance(error, McpError) else None,
            "client": info.name if info is not None else None,
            "session": session,
            "principal": principal,
        }
        if self.include_params:
            from trimcp import serde

            fields["params"] = serde.unstructure(call.params)
        who = "".join(
            f" {key}={value}"
            for key, value in (("session", session), ("principal", principal))
            if value is not None
        )
        name = call.name
        self.logger.log(
            level,
            "%s %s %.1f ms%s",
            call.method if name is None else f"{call.method} {name}",
            outcome,
            seconds * 1000,
            who,
            extra={"mcp": fields},
        )


#: The JSON-RPC code of a refusal by :class:`RateLimitMiddleware`: -32000 is the first of
#: the range JSON-RPC leaves to implementations for server errors.
RATE_LIMITED: Final = -32000


class RateLimitMiddleware:
    """At most ``rate`` requests per ``per`` seconds for each caller (a token bucket that
    holds ``burst`` tokens, default ``rate``); past it a request is refused with
    ``McpError(-32000, "Rate limit exceeded ...", {"retryAfter": seconds})``.

    Callers are told apart by ``key(call)`` (default :func:`caller_key`: the authenticated
    principal, else the session). Notifications and ``initialize`` are not limited.
    At most ``max_callers`` buckets are kept (the least recently used go first), so
    memory stays bounded. Time is Trio's clock.
    """

    def __init__(
        self,
        rate: float,
        per: float = 1.0,
        *,
        burst: float | None = None,
        key: Callable[[Call], Hashable] = caller_key,
        max_callers: int = 10_000,
    ) -> None:
        if not rate > 0 or not per > 0:
            raise ValueError("rate and per must be > 0")
        if max_callers < 1:
            raise ValueError("max_callers must be >= 1")
        self.refill = rate / per
        self.burst = float(burst if burst is not None else rate)
        if not self.burst >= 1:
            raise ValueError("burst must be >= 1")
        self.key = key
        self.max_callers = max_callers
        self._buckets: OrderedDict[Hashable, tuple[float, float]] = OrderedDict()

    async def __call__(self, call: Call, call_next: Next) -> Any:
        if call.kind == "request" and call.method != "initialize":
            self._take(self.key(call))
        return await call_next(call)

    def _take(self, who: Hashable) -> None:
        now = trio.current_time()
        tokens, last = self._buckets.pop(who, (self.burst, now))
        tokens = min(self.burst, tokens + (now - last) * self.refill)
        if tokens < 1:
            self._store(who, tokens, now)
            wait = (1 - tokens) / self.refill
            raise McpError(
                RATE_LIMITED,
                f"Rate limit exceeded: try again in {wait:.2f} s",
                {"retryAfter": round(wait, 3)},
            )
        self._store(who, tokens - 1, now)

    def _store(self, who: Hashable, tokens: float, now: float) -> None:
        self._buckets[who] = (tokens, now)
        while len(self._buckets) > self.max_callers:
            self._buckets.popitem(last=False)


#: Errors whose details are the caller's own business (their request was wrong).
EXPOSED_CODES: Final = frozenset({INVALID_PARAMS, INVALID_REQUEST, METHOD_NOT_FOUND, -32002})


class ErrorMaskingMiddleware:
    """Hide error details from clients; log them on ``trimcp.server`` instead.

    A JSON-RPC error whose code is not in ``expose`` (default: invalid params or
    request, unknown method, resource not found) is answered with its code and the
    generic message ``message``, without ``data``; an unexpected exception (not an
    ``McpError``) becomes ``-32603`` the same way. With ``mask_tool_errors`` a tool's
    ``isError`` result is also replaced by one text block ``"Tool 'x' failed"`` (this
    hides ``ToolError`` messages meant for the model too; ``Server(mask_error_details=
    True)`` masks only unexpected exceptions). Cancellation is never masked.
    """

    def __init__(
        self,
        *,
        expose: frozenset[int] = EXPOSED_CODES,
        message: str = "The request failed",
        mask_tool_errors: bool = False,
    ) -> None:
        self.expose = expose
        self.message = message
        self.mask_tool_errors = mask_tool_errors
        self.logger = logging.getLogger("trimcp.server")

    async def __call__(self, call: Call, call_next: Next) -> Any:
        try:
            result = await call_next(call)
        except McpError as exc:
            if exc.code in self.expose:
                raise
            self.logger.warning(
                "%s failed (masked for the client): %s %s", call.method, exc.code, exc.message
            )
            raise McpError(exc.code, self.message) from None
        except Exception as exc:
            self.logger.error("%s failed (masked for the client)", call.method, exc_info=exc)
            raise McpError(INTERNAL_ERROR, self.message) from None
        if self.mask_tool_errors and isinstance(result, CallToolResult) and result.is_error:
            self.logger.warning(
                "tool %r failed (masked for the client): %s", call.name, result.content
            )
            return CallToolResult(
                content=[TextContent(text=f"Tool {call.name!r} failed")], is_error=True
            )
        return result


class MiddlewareChain:
    """A server's middleware (outermost first) around what answers its requests
    (``answer``) and notifications (``notified``). :attr:`empty` while there is none: the
    server then answers without building a :class:`Call` (nothing paid per request)."""

    __slots__ = ("_answer", "_chain", "_layers", "_notified", "empty", "server")

    def __init__(
        self,
        server: Server,
        answer: Callable[[RequestContext], Awaitable[Any]],
        notified: Callable[[Session, str, Any], Awaitable[None]],
    ) -> None:
        self.server = server
        self._answer = answer
        self._notified = notified
        self._layers: list[Middleware] = []
        self._chain: Next = self._terminal
        #: No middleware (a plain attribute: every request reads it).
        self.empty = True

    @property
    def layers(self) -> tuple[Middleware, ...]:
        """The middleware, outermost first."""
        return tuple(self._layers)

    def add(self, middleware: Middleware, *, outermost: bool = False) -> None:
        """Add ``middleware`` inside those added before, or around all with ``outermost``."""
        if not callable(middleware):
            raise TypeError(f"middleware must be callable, got {type(middleware).__name__}")
        self._layers.insert(0 if outermost else len(self._layers), middleware)
        self._chain = build_chain(self._layers, self._terminal)
        self.empty = False

    async def request(self, ctx: RequestContext) -> Any:
        """Answer the request ``ctx`` through the middleware."""
        return await self._chain(
            Call(self.server, "request", ctx.method, ctx.params, ctx, ctx.session)
        )

    async def notification(self, session: Session, method: str, params: Any) -> None:
        """Take the notification through the middleware."""
        await self._chain(Call(self.server, "notification", method, params, None, session))

    async def _terminal(self, call: Call) -> Any:
        request = call.request
        if request is None:
            assert call.session is not None
            return await self._notified(call.session, call.method, call.params)
        if call.params is not request.params:  # a middleware replaced them
            request.params = call.params
        return await self._answer(request)
