"""How a handler or a task ended, mapped once for both eras, both sides and every transport.

:func:`settle` runs a piece of work inside its cancel scope and maps how it ended; what the
work raised is mapped by :func:`error_for`, the one mapping. :func:`run_handler` is the same
for a request (inline: every request runs it): it runs
``handle_request(ctx)`` inside the request's cancel scope and returns an :class:`Outcome`:
the result, the error to answer with, or nothing to send. The session engine (session era,
any transport) and :func:`trimcp.session.stateless.run_request` (2026-07-28 over HTTP)
both call it, and stdio's 2026 stream runs it inline through its two halves
(:func:`handler_failed`, :func:`handler_ended`), so the same handler behaviour gets the
same answer whichever way it came; the task runner (:mod:`trimcp.tasks.manager`, a
server's tasks and a client's) calls :func:`settle` and records the same mapping as the
task's status:

- a result is the answer;
- :class:`~trimcp.errors.McpError` (a tool error is already a result) is the answer;
- :class:`~trimcp.errors.LocalProtocolError` (our own misuse of the protocol) and any other
  exception are logged and answered ``-32603`` with a safe message;
- ``SystemExit``, ``KeyboardInterrupt``, ``GeneratorExit``... raised *by handler code*
  (argparse on the caller's arguments raises ``SystemExit``) answer that call the same way;
  they never end the session, the task runner or the process;
- the peer cancelled it (``ctx.cancelled_by_peer``): nothing is sent (the spec says so);
- its scope's deadline (the handler timeout) ended it: ``-32001``.

Trio's own cancellation from outside the work's scope propagates.

A real Ctrl-C is not a handler's outcome. :func:`settle` runs the work KI-protected, so when
SIGINT arrives while handler code runs, Trio delivers ``KeyboardInterrupt`` to the main task
(``trio.run``'s caller), which stops the server; ``Server.run`` and the CLI catch SIGINT
earlier still and shut down gracefully. The one exception is Trio's rule for tasks a
handler starts in a nursery of its own: they are not KI-protected, so a Ctrl-C landing while
such a task runs Python code is raised there, and answered as that call's error.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import trio

from trimcp.errors import INTERNAL_ERROR, LocalProtocolError, McpError, RequestTimeout
from trimcp.session.context import RequestContext

logger = logging.getLogger("trimcp.session")

T = TypeVar("T")


class Outcome:
    """How one piece of work ended: ``silent`` (send nothing), else ``error`` or ``result``;
    ``cancelled`` when its own scope's cancellation ended it (for a request, the caller
    decides what that means: the peer's cancel or the handler timeout)."""

    __slots__ = ("cancelled", "error", "result", "silent")

    def __init__(
        self,
        result: Any = None,
        error: McpError | None = None,
        silent: bool = False,
        cancelled: bool = False,
    ):
        self.result = result
        self.error = error
        #: The peer cancelled the request: the spec says no response.
        self.silent = silent
        self.cancelled = cancelled


#: What :func:`run_handler` makes an outcome with (then sets its four slots).
_new_outcome = object.__new__


def internal_error() -> McpError:
    """The answer for a handler that failed in a way the peer must not see the details of."""
    return McpError(INTERNAL_ERROR, "Internal error")


@trio.lowlevel.enable_ki_protection
async def settle(
    work: Callable[[T], Awaitable[Any]],
    arg: T,
    scope: trio.CancelScope,
    describe: Callable[[T], str],
) -> Outcome:
    """Run ``work(arg)`` inside ``scope`` and map how it ended (see the module docstring):
    its result, the :class:`McpError` to answer with (``-32603`` for anything else it
    raised, ``BaseException`` included, logged as ``describe(arg)``), or ``cancelled`` when
    ``scope``'s own cancellation ended it.

    Runs KI-protected (a real Ctrl-C goes to the main task, not into the work).
    Cancellation: ``trio.Cancelled`` from outside ``scope`` propagates.
    """
    result: Any = None
    try:
        with scope:
            result = await work(arg)
    except BaseException as exc:
        if _is_cancellation(exc):
            raise
        return Outcome(error=error_for(exc, describe, arg))
    return Outcome(result, cancelled=scope.cancelled_caught)


def error_for(exc: BaseException, describe: Callable[[T], str], arg: T) -> McpError:
    """The one mapping of what a piece of work raised (never Trio's cancellation) to the
    error to answer with: its own :class:`McpError`, else ``-32603``, logged as
    ``describe(arg)``."""
    if isinstance(exc, LocalProtocolError):
        # Our own misuse of the protocol is a bug here, not an answer for the peer.
        logger.exception("%s misused the protocol", describe(arg), exc_info=exc)
        return internal_error()
    if isinstance(exc, McpError):
        return exc
    if isinstance(exc, Exception):
        logger.exception("%s failed", describe(arg), exc_info=exc)
        return internal_error()
    logger.error(
        "%s raised %s; answered as an internal error",
        describe(arg),
        type(exc).__name__,
        exc_info=exc,
    )
    return internal_error()


def _describe_request(ctx: RequestContext) -> str:
    return f"handler for {ctx.method} (id {ctx.request_id!r})"


@trio.lowlevel.enable_ki_protection
async def run_handler(
    handle_request: Callable[[RequestContext], Awaitable[Any]], ctx: RequestContext
) -> Outcome:
    """Run ``handle_request(ctx)`` inside ``ctx.cancel_scope`` and say how it ended.

    See the module docstring for the mapping. A request the peer cancelled before it
    started is not run at all. Whenever the outcome is not the handler's result (the peer
    cancelled, an error, a cancel from outside), what the handler tied to its result
    (:meth:`RequestContext.on_unanswered`) is released. Cancellation: ``trio.Cancelled``
    from outside the request's scope propagates (nothing is answered); the scope's own
    cancel is an outcome.
    """
    scope = ctx.cancel_scope
    if ctx.cancelled_by_peer and scope.cancel_called:
        return Outcome(silent=True)
    # settle()'s work, inline: every request runs it (one frame fewer per request).
    result: Any = None
    error: McpError | None = None
    try:
        with scope:
            result = await handle_request(ctx)
    except BaseException as exc:
        error = handler_failed(ctx, exc)
        if error is None:
            raise
    if error is None and not ctx.cancelled_by_peer and not scope.cancelled_caught:
        # The result is the answer (see handler_ended). Outcome(result) without the class
        # call (every request makes one): its __init__'s frame and argument tuple.
        outcome: Outcome = _new_outcome(Outcome)
        outcome.result = result
        outcome.error = None
        outcome.silent = outcome.cancelled = False
        return outcome
    return handler_ended(ctx, result, error)


def handler_failed(ctx: RequestContext, exc: BaseException) -> McpError | None:
    """What :func:`run_handler` makes of what the request's handler raised: None for
    Trio's cancellation, which the caller re-raises (what the handler tied to its result
    is released first), else the error to answer with (logged as :func:`error_for`
    does). For a transport that runs a handler itself (stdio's 2026 requests) with the
    same mapping."""
    if _is_cancellation(exc):
        ctx.unanswered()
        return None
    return error_for(exc, _describe_request, ctx)


def handler_ended(ctx: RequestContext, result: Any, error: McpError | None) -> Outcome:
    """:func:`run_handler`'s outcome once the handler returned ``result`` or failed with
    ``error`` (:func:`handler_failed`'s): nothing to send when the peer cancelled it
    (also when it returned anyway), ``-32001`` when the scope's deadline ended it; what
    the handler tied to its result is released whenever the result is not the answer.
    The result is the answer exactly when ``error`` is None and neither the peer's cancel
    nor the scope's own ended it (a caller may take that case without this call)."""
    if ctx.cancelled_by_peer:
        ctx.unanswered()
        return Outcome(silent=True)
    if error is None and ctx.cancel_scope.cancelled_caught:
        error = RequestTimeout(f"{ctx.method} exceeded the handler timeout")
    if error is not None:
        ctx.unanswered()  # the result, and what it named, will never reach the peer
    return Outcome(result, error)


def _is_cancellation(exc: BaseException) -> bool:
    """Whether ``exc`` is Trio's cancellation (or a group of nothing else): it must propagate."""
    if isinstance(exc, trio.Cancelled):
        return True
    if isinstance(exc, BaseExceptionGroup):
        return exc.split(trio.Cancelled)[1] is None
    return False
