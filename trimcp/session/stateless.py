"""Serving one stateless (2026-07-28) request: no session object, still a cancel scope.

A 2026 request carries everything needed to answer it, so no :class:`~trimcp.session.Session`
is made for it. The transport that received it calls, in the task that received it:

1. :func:`~trimcp.protocol.stateless.prepare` (pure, in the protocol core): the ``_meta``
   envelope is read into the request's own
   :class:`~trimcp.protocol.negotiated.Negotiated` (by the handler, which knows its
   identity and capabilities), removed and unknown methods are refused and the params are
   structured. Refusals raise :class:`RequestRefused` carrying the error to answer with.
2. :func:`run_request`: the handler's ordinary entry point (``handle_request``) runs with
   a :class:`~trimcp.session.RequestContext` whose ``session`` is None, inside its own
   cancel scope (with the handler timeout as its deadline). Notifications it sends go to
   the transport's *outlet* (the request's response stream). The result is an
   :class:`Answer`, which :meth:`Answer.encode` turns into the JSON-RPC response: results
   stamped with ``resultType`` and the server's identity (:func:`~trimcp.protocol.modern.
   stamp_result`).

Cancellation: cancelling the caller (a client that disconnects) cancels the handler, and
:func:`run_request` raises ``trio.Cancelled``: nothing is answered. Cancelling
``ctx.cancel_scope`` after setting ``ctx.cancelled_by_peer`` (stdio's
``notifications/cancelled``) ends it with an answer that sends nothing. A deadline answers
``-32001``. Nothing outlives the call: no task is started, no table keeps the request.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Hashable
from typing import Any, Protocol, runtime_checkable

import attrs
import trio

from trimcp import serde
from trimcp.errors import (
    INTERNAL_ERROR,
    McpError,
)
from trimcp.protocol import modern
from trimcp.protocol.jsonrpc import (
    JSONRPC_VERSION,
    RequestId,
    dump_json,
    encode_error,
)
from trimcp.protocol.stateless import Negotiator, Prepared
from trimcp.session.context import Outlet, RequestContext
from trimcp.session.engine import SessionHandler
from trimcp.session.outcome import Outcome, run_handler
from trimcp.types import InputRequiredResult

logger = logging.getLogger("trimcp.session")


@runtime_checkable
class StatelessHandler(SessionHandler, Negotiator, Protocol):
    """A :class:`SessionHandler` that also answers 2026-07-28 requests: what
    :func:`~trimcp.protocol.stateless.prepare` asks of it (a
    :class:`~trimcp.protocol.stateless.Negotiator`), and ``handle_request``."""


@attrs.define
class Answer:
    """How a stateless request ended: a result, an error, or nothing to send (made for
    every request: positional arguments are the cheaper call)."""

    request_id: RequestId
    result: Any = None
    error: McpError | None = None
    #: The client cancelled it: the spec says no response.
    cancelled: bool = False
    #: The request's context (for :meth:`undelivered`).
    context: RequestContext | None = None

    def undelivered(self) -> None:
        """The transport could not hand this answer over (its client left): release what
        the result named (:meth:`RequestContext.on_unanswered`)."""
        if self.context is not None:
            self.context.unanswered()

    @property
    def input_required(self) -> bool:
        return isinstance(self.result, InputRequiredResult)

    def encode(self, server_info: Any = None) -> bytes | None:
        """The JSON-RPC response (None when cancelled). ``server_info`` (wire form) goes
        into every result's ``_meta``; results get their ``resultType``."""
        if self.cancelled:
            return None
        return encode_answer(self.request_id, self.result, self.error, server_info)

    @property
    def code(self) -> int | None:
        return self.error.code if self.error is not None else None


_unstructure_hook_of = serde.unstructure_hook_of


def encode_answer(
    request_id: RequestId, result: Any, error: McpError | None, server_info: Any = None
) -> bytes:
    """The JSON-RPC response of a stateless request that ended with ``error`` (when not
    None) or ``result``: results stamped with their ``resultType`` and ``server_info``
    (wire form) in their ``_meta``. A result that cannot be encoded is answered ``-32603``
    (and logged). What :meth:`Answer.encode` sends; stdio calls it without an Answer."""
    if error is not None:
        return encode_error(request_id, error)
    try:
        if type(result) is dict:
            raw = result
        else:  # (serde.unstructure's dispatch, inline: every answer asks)
            hook = _unstructure_hook_of(type(result))
            raw = serde.unstructure(result) if hook is None else hook(result)
        if raw is None:
            raw = {}
        kind: modern.ResultType = (
            modern.INPUT_REQUIRED if isinstance(result, InputRequiredResult) else modern.COMPLETE
        )
        # response_object(), inline: every answer makes one.
        return dump_json(
            {
                "jsonrpc": JSONRPC_VERSION,
                "id": request_id,
                "result": modern.stamp_result(raw, server_info, kind),
            }
        )
    except Exception:
        logger.exception("cannot encode the result of request %r", request_id)
        return encode_error(request_id, McpError(INTERNAL_ERROR))


async def run_request(
    handler: SessionHandler,
    prepared: Prepared,
    outlet: Outlet,
    *,
    principal: Hashable | None = None,
    timeout: float | None = None,
    on_start: Callable[[RequestContext], None] | None = None,
    scope: trio.CancelScope | None = None,
) -> Answer:
    """Run the handler for one prepared 2026 request and say how it ended.

    ``timeout``: the handler's deadline (answered ``-32001``). ``on_start`` sees the
    :class:`RequestContext` before the handler runs. ``scope``: the request's cancel
    scope, when the transport wants to hold it (made here otherwise); a transport that
    cancels it for a client that left must not send the answer. How the handler ended
    maps to the answer through :func:`trimcp.session.outcome.run_handler`, as in the
    session era. Cancellation: see the module docstring.
    """
    ctx = request_context(prepared, outlet, principal=principal, timeout=timeout, scope=scope)
    if on_start is not None:
        on_start(ctx)
    return answer_of(ctx, await run_handler(handler.handle_request, ctx))


def request_context(
    prepared: Prepared,
    outlet: Outlet,
    principal: Hashable | None = None,
    timeout: float | None = None,
    scope: trio.CancelScope | None = None,
) -> RequestContext:
    """The :class:`RequestContext` :func:`run_request` runs a prepared request with (a
    transport that runs it itself, through :func:`~trimcp.session.outcome.run_handler`
    and :func:`answer_of`, as stdio does, saves a frame per request): its own cancel
    scope (``scope``, or a new one) with the ``timeout`` as its deadline."""
    if scope is None:
        # The deadline given at creation: setting it afterwards costs trio a second
        # registration.
        scope = (
            trio.CancelScope()
            if timeout is None
            else trio.CancelScope(deadline=trio.current_time() + timeout)
        )
    elif timeout is not None:
        scope.deadline = trio.current_time() + timeout
    return RequestContext(  # by position: every request makes one
        None,
        prepared.request_id,
        prepared.method,
        prepared.params,
        prepared.progress_token,
        scope,
        prepared.negotiated,
        outlet,
        principal,
        prepared.trace,
    )


def answer_of(ctx: RequestContext, outcome: Outcome) -> Answer:
    """The :class:`Answer` of the request of ``ctx``, which ended with ``outcome``."""
    if outcome.silent:
        return Answer(ctx.request_id, cancelled=True)
    return Answer(ctx.request_id, outcome.result, outcome.error, False, ctx)
