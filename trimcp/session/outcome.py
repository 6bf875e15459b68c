"""How a request handler ended, mapped once for both eras and every transport.

:func:`run_handler` runs ``handle_request(ctx)`` inside the request's cancel scope and
returns an :class:`Outcome`: the result, the error to answer with, or nothing to send.
The session engine (session era, any transport) and
:func:`trimcp.session.stateless.run_request` (2026-07-28 over HTTP and over stdio) both
call it, so the same handler behaviour gets the same answer whichever way it came:

- a result is the answer;
- :class:`~trimcp.errors.McpError` (a tool error is already a result) is the answer;
- :class:`~trimcp.errors.LocalProtocolError` (our own misuse of the protocol) and any other
  exception are logged and answered ``-32603`` with a safe message;
- ``SystemExit``, ``KeyboardInterrupt``, ``GeneratorExit``... raised *by handler code*
  (argparse on the caller's arguments raises ``SystemExit``) answer that call the same way;
  they never end the session or the process. A real Ctrl-C does not land here: the handler
  runs KI-protected, so Trio delivers it to the main task;
- the peer cancelled it (``ctx.cancelled_by_peer``): nothing is sent (the spec says so);
- its scope's deadline (the handler timeout) ended it: ``-32001``.

Trio's own cancellation from outside the request's scope propagates.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any

import trio

from trimcp.errors import INTERNAL_ERROR, LocalProtocolError, McpError, RequestTimeout
from trimcp.session.context import RequestContext

logger = logging.getLogger("trimcp.session")


class Outcome:
    """How one handler ended: ``silent`` (send nothing), else ``error`` or ``result``."""

    __slots__ = ("error", "result", "silent")

    def __init__(self, result: Any = None, error: McpError | None = None, silent: bool = False):
        self.result = result
        self.error = error
        #: The peer cancelled the request: the spec says no response.
        self.silent = silent


def internal_error() -> McpError:
    """The answer for a handler that failed in a way the peer must not see the details of."""
    return McpError(INTERNAL_ERROR, "Internal error")


@trio.lowlevel.enable_ki_protection
async def run_handler(
    handle_request: Callable[[RequestContext], Awaitable[Any]], ctx: RequestContext
) -> Outcome:
    """Run ``handle_request(ctx)`` inside ``ctx.cancel_scope`` and say how it ended.

    See the module docstring for the mapping. A request the peer cancelled before it
    started is not run at all. Cancellation: ``trio.Cancelled`` from outside the request's
    scope propagates (nothing is answered); the scope's own cancel is an outcome.
    """
    scope = ctx.cancel_scope
    if scope.cancel_called and ctx.cancelled_by_peer:
        return Outcome(silent=True)
    error: McpError | None = None
    result: Any = None
    try:
        with scope:
            result = await handle_request(ctx)
    except LocalProtocolError:
        # Our own misuse of the protocol is a bug here, not an answer for the peer.
        logger.exception("handler for %s (id %r) misused the protocol", ctx.method, ctx.request_id)
        error = internal_error()
    except McpError as exc:
        error = exc
    except Exception:
        logger.exception("handler for %s (id %r) failed", ctx.method, ctx.request_id)
        error = internal_error()
    except BaseException as exc:
        if _is_cancellation(exc):
            raise
        logger.error(
            "handler for %s (id %r) raised %s; answered as an internal error",
            ctx.method,
            ctx.request_id,
            type(exc).__name__,
            exc_info=exc,
        )
        error = internal_error()
    if ctx.cancelled_by_peer:  # also when it returned anyway
        return Outcome(silent=True)
    if error is None and scope.cancelled_caught:
        error = RequestTimeout(f"{ctx.method} exceeded the handler timeout")
    return Outcome(result, error)


def _is_cancellation(exc: BaseException) -> bool:
    """Whether ``exc`` is Trio's cancellation (or a group of nothing else): it must propagate."""
    if isinstance(exc, trio.Cancelled):
        return True
    if isinstance(exc, BaseExceptionGroup):
        return exc.split(trio.Cancelled)[1] is None
    return False
