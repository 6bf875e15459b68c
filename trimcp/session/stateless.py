"""Serving one stateless (2026-07-28) request: no session object, still a cancel scope.

A 2026 request carries everything needed to answer it, so no :class:`~trimcp.session.Session`
is made for it. The transport that received it calls, in the task that received it:

1. :func:`prepare`: the ``_meta`` envelope is read into the request's own
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
import math
from collections.abc import Callable, Hashable
from typing import Any, Protocol, runtime_checkable

import attrs
import trio

from trimcp import serde
from trimcp._record import Record
from trimcp.errors import (
    INTERNAL_ERROR,
    METHOD_NOT_FOUND,
    McpError,
    RemoteProtocolError,
)
from trimcp.protocol import modern
from trimcp.protocol.admission import admit_request
from trimcp.protocol.jsonrpc import (
    Request,
    RequestId,
    dump_json,
    encode_error,
    response_object,
)
from trimcp.protocol.negotiated import Negotiated
from trimcp.session.context import Outlet, RequestContext
from trimcp.session.engine import SessionHandler
from trimcp.session.outcome import run_handler
from trimcp.types import InputRequiredResult

logger = logging.getLogger("trimcp.session")


@runtime_checkable
class StatelessHandler(SessionHandler, Protocol):
    """A :class:`SessionHandler` that also answers 2026-07-28 requests.

    ``negotiate_request`` builds one request's agreement from its ``_meta`` (raise
    :class:`RemoteProtocolError` to refuse it, e.g. ``-32021``); ``advertised_versions``
    are the protocol versions an ``UnsupportedProtocolVersionError`` names.
    """

    @property
    def advertised_versions(self) -> tuple[str, ...]: ...

    def negotiate_request(self, meta: modern.RequestMeta) -> Negotiated: ...


class RequestRefused(Exception):
    """A 2026 request refused before its handler ran; ``error`` is the answer.

    ``malformed``: the envelope itself was at fault (HTTP 400 whatever the code; see
    :func:`~trimcp.protocol.modern.http_status`).
    """

    def __init__(self, request_id: RequestId, error: McpError, *, malformed: bool) -> None:
        super().__init__(error.message)
        self.request_id = request_id
        self.error = error
        self.malformed = malformed

    def encode(self) -> bytes:
        return encode_error(self.request_id, self.error)

    @property
    def http_status(self) -> int:
        return modern.http_status(self.error.code, malformed=self.malformed)


@attrs.frozen(kw_only=True, repr=False, eq=False)
class Prepared(Record):
    """A 2026 request that passed its checks, ready to run."""

    request_id: RequestId
    method: str
    params: Any
    progress_token: int | str | None
    negotiated: Negotiated
    trace: modern.TraceContext | None = None


def prepare(handler: StatelessHandler, request: Request) -> Prepared:
    """Check a 2026 request and build its :class:`Negotiated` (sans I/O).

    Raises :class:`RequestRefused`: ``-32602`` for a missing or malformed ``_meta``
    field, ``-32022`` for an unsupported version (both malformed), ``-32601`` for a
    removed or unknown method, ``-32602`` for params that do not fit the method.
    """
    request_id = request.id
    try:
        meta = modern.read_request_meta(request.params, advertise=handler.advertised_versions)
        negotiated = handler.negotiate_request(meta)
    except RemoteProtocolError as exc:
        raise RequestRefused(request_id, exc, malformed=True) from None
    try:
        params = admit_request(
            request.method,
            request.params,
            peer="client",
            version=negotiated.protocol_version,
            capabilities=_wire_capabilities(negotiated.server_capabilities),
        )
    except RemoteProtocolError as exc:
        raise RequestRefused(request_id, exc, malformed=False) from None
    token = request.params.get("_meta", {}).get("progressToken") if request.params else None
    return Prepared(
        request_id=request_id,
        method=request.method,
        params=params,
        progress_token=token if type(token) in (int, str) else None,
        negotiated=negotiated,
        trace=meta.trace,
    )


_last_capabilities: tuple[object, dict[str, Any]] | None = None


def _wire_capabilities(capabilities: object) -> dict[str, Any]:
    """The wire form of a server's capabilities, kept for the object seen last (a server
    hands every request the same object until what it registers changes)."""
    global _last_capabilities
    last = _last_capabilities
    if last is not None and last[0] is capabilities:
        return last[1]
    wire: dict[str, Any] = serde.unstructure(capabilities)
    _last_capabilities = (capabilities, wire)
    return wire


@attrs.define(kw_only=True)
class Answer:
    """How a stateless request ended: a result, an error, or nothing to send."""

    request_id: RequestId
    result: Any = None
    error: McpError | None = None
    #: The client cancelled it: the spec says no response.
    cancelled: bool = False

    @property
    def input_required(self) -> bool:
        return isinstance(self.result, InputRequiredResult)

    def encode(self, server_info: Any = None) -> bytes | None:
        """The JSON-RPC response (None when cancelled). ``server_info`` (wire form) goes
        into every result's ``_meta``; results get their ``resultType``."""
        if self.cancelled:
            return None
        if self.error is not None:
            return encode_error(self.request_id, self.error)
        try:
            raw = self.result if type(self.result) is dict else serde.unstructure(self.result)
            if raw is None:
                raw = {}
            kind: modern.ResultType = (
                modern.INPUT_REQUIRED if self.input_required else modern.COMPLETE
            )
            return dump_json(
                response_object(self.request_id, modern.stamp_result(raw, server_info, kind))
            )
        except Exception:
            logger.exception("cannot encode the result of request %r", self.request_id)
            return encode_error(self.request_id, McpError(INTERNAL_ERROR))

    @property
    def code(self) -> int | None:
        return self.error.code if self.error is not None else None


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
    :class:`RequestContext` before the handler runs (stdio keeps it to apply
    ``notifications/cancelled``). ``scope``: the request's cancel scope, when the
    transport wants to hold it (made here otherwise); a transport that cancels it for a
    client that left must not send the answer. How the handler ended maps to the answer
    through :func:`trimcp.session.outcome.run_handler`, as in the session era.
    Cancellation: see the module docstring.
    """
    if scope is None:
        # The deadline given at creation: setting it afterwards costs trio a second
        # registration.
        scope = trio.CancelScope(
            deadline=math.inf if timeout is None else trio.current_time() + timeout
        )
    elif timeout is not None:
        scope.deadline = trio.current_time() + timeout
    ctx = RequestContext(
        None,
        prepared.request_id,
        prepared.method,
        prepared.params,
        prepared.progress_token,
        scope,
        negotiated=prepared.negotiated,
        outlet=outlet,
        principal=principal,
        trace=prepared.trace,
    )
    if on_start is not None:
        on_start(ctx)
    outcome = await run_handler(handler.handle_request, ctx)
    if outcome.silent:
        return Answer(request_id=prepared.request_id, cancelled=True)
    return Answer(request_id=prepared.request_id, result=outcome.result, error=outcome.error)


def method_not_found(request_id: RequestId, method: str) -> RequestRefused:
    """The refusal of a method nobody serves (``-32601``)."""
    return RequestRefused(
        request_id,
        McpError(METHOD_NOT_FOUND, f"Method not found: {method[:100]}"),
        malformed=False,
    )
