"""2026-07-28 over Streamable HTTP: one POST, one request, no session.

:class:`ModernEndpoint` answers the POSTs the HTTP app hands it (those whose
``MCP-Protocol-Version`` is a stateless revision, or whose body carries the 2026 ``_meta``
envelope). Per POST, in the task that received it:

1. The body is one JSON-RPC request (a batch or a response is 400; a notification 202).
2. ``MCP-Protocol-Version``, ``Mcp-Method`` and ``Mcp-Name`` are checked against the body,
   and for ``tools/call`` the ``Mcp-Param-*`` headers of the tool's ``x-mcp-header``
   parameters (``-32020``, 400); then the ``_meta`` envelope (``-32602`` or ``-32022``,
   400) and the method (``-32601``, 404). See :mod:`trimcp.protocol.modern`.
3. The request runs through :func:`~trimcp.session.stateless.run_request` in its own
   cancel scope, with the handler timeout; a client that disconnects cancels it (noticed
   once the request has run for a short grace: :mod:`.slow`). It holds
   one of the app's ``max_sessions`` slots while it runs (503 past it); a listen stream
   holds none: the server's listen hub bounds streams per principal (429 past it) and in
   total (503).
4. The answer is sent as one JSON body with the status the spec gives for its error code,
   unless the handler sent notifications first (progress, log messages, a listen
   stream's acknowledgement): then the response is an SSE stream that starts with the
   first of them and ends with the answer (with ``json_response``: always one JSON body,
   those notifications dropped). A ``subscriptions/listen`` stream, in either mode, sends
   its head and acknowledgement at once, keeps quiet streams alive with comments, and
   ends with its result when the server shuts down.

Nothing is kept per request once it is answered. Every write is bounded in time
(``body_timeout``): a client that stops reading ends its own request.
"""

from __future__ import annotations

import functools
import logging
import math
from collections.abc import Hashable, Mapping
from contextlib import AbstractAsyncContextManager, nullcontext
from typing import Any, Protocol, runtime_checkable

import trio

from trimcp import serde
from trimcp.auth.principal import principal_key
from trimcp.errors import INTERNAL_ERROR, INVALID_REQUEST, RemoteProtocolError
from trimcp.http.security import accepts
from trimcp.protocol import modern
from trimcp.protocol.jsonrpc import Notification, Request, RequestId, dump_json, encode_error
from trimcp.protocol.jsonrpc import notification_object as _notification
from trimcp.protocol.stateless import RequestRefused, prepare
from trimcp.protocol.versions import STATELESS_VERSIONS
from trimcp.session.stateless import StatelessHandler, run_request
from trimcp.transports.http_server.asgi import (
    JSON_TYPE,
    SSE_HEADERS,
    HttpRejection,
    ParsedBody,
    Receive,
    RequestHeaders,
    Send,
    respond,
)
from trimcp.transports.http_server.budgets import StreamBudgets
from trimcp.transports.http_server.config import HttpServerConfig
from trimcp.transports.http_server.manager import SessionManager
from trimcp.transports.http_server.slow import SlowRequests
from trimcp.transports.http_server.streams import sse_message

logger = logging.getLogger("trimcp.http")

_KEEPALIVE = b": keepalive\n\n"


@runtime_checkable
class HeaderParameters(Protocol):
    """A handler whose tools may mirror parameters into ``Mcp-Param-*`` headers."""

    def header_parameters(self, tool: str) -> Mapping[str, tuple[str, ...]]: ...


class ClientGone(Exception):
    """The client stopped reading (a write timed out) or went away."""


def claims(version: str | None) -> bool:
    """Whether a POST with this ``MCP-Protocol-Version`` is a 2026 request by its header."""
    return version is not None and version in STATELESS_VERSIONS


def is_modern_body(parsed: ParsedBody) -> bool:
    """Whether a parsed POST body is one request carrying the 2026 ``_meta`` envelope."""
    if parsed.batch or len(parsed.messages) != 1:
        return False
    message = parsed.messages[0]
    return type(message) is Request and modern.is_modern(message.params)


class _Response:
    """The HTTP response of one 2026 request, and the outlet its handler writes to."""

    __slots__ = (
        "_bounded",
        "_send",
        "gone",
        "request_scope",
        "sse",
        "started",
        "stream_ok",
        "write_timeout",
    )

    def __init__(
        self, send: Send, *, stream_ok: bool, write_timeout: float, bounded: bool = False
    ) -> None:
        self._send = send
        #: The server bounds and protects each send itself (``BOUNDED_SEND``).
        self._bounded = bounded
        self.stream_ok = stream_ok
        self.write_timeout = write_timeout
        self.started = False
        self.sse = False
        self.gone = False
        #: Cancelled when the client goes away (the request's own scope).
        self.request_scope: trio.CancelScope | None = None

    async def _write(self, message: dict[str, Any]) -> None:
        if not self.gone:
            # A write is never cut in the middle (the HTTP server's state must stay
            # whole), but a client that does not read in time ends the request.
            with trio.CancelScope(
                shield=True, deadline=trio.current_time() + self.write_timeout
            ) as scope:
                try:
                    await self._send(message)
                except OSError:
                    self.gone = True
            if scope.cancelled_caught:
                self.gone = True
        if self.gone:
            # The request ends as if the client had cancelled it.
            if self.request_scope is not None:
                self.request_scope.cancel()
                await trio.lowlevel.checkpoint()
            raise ClientGone

    async def start_stream(self) -> None:
        """Send the SSE head now (a listen stream's head goes out at once)."""
        if not self.started:
            self.started = self.sse = True
            await self._write(
                {"type": "http.response.start", "status": 200, "headers": list(SSE_HEADERS)}
            )

    async def send_notification(
        self, method: str, params: Any = None, *, related_request_id: RequestId | None = None
    ) -> None:
        if not self.stream_ok:
            logger.debug("dropped %s: the client accepts no event stream", method)
            return
        await self.start_stream()
        raw = params if params is None or type(params) is dict else serde.unstructure(params)
        data = dump_json(_notification(method, raw))
        await self._write(
            {"type": "http.response.body", "body": sse_message(data, None), "more_body": True}
        )

    async def keepalive(self) -> None:
        if self.sse:
            await self._write({"type": "http.response.body", "body": _KEEPALIVE, "more_body": True})

    async def finish(self, data: bytes, status: int) -> None:
        """Send the answer: the last event of the stream, or the whole JSON response."""
        if self.sse:
            await self._write(
                {"type": "http.response.body", "body": sse_message(data, None), "more_body": False}
            )
            return
        self.started = True
        if self.gone:
            raise ClientGone
        if self._bounded:
            await respond(self._send, status, data, [JSON_TYPE])
            return
        with trio.CancelScope(shield=True, deadline=trio.current_time() + self.write_timeout):
            await respond(self._send, status, data, [JSON_TYPE])

    async def end_empty(self) -> None:
        """End a started stream with no answer (the request was cancelled)."""
        if self.sse and not self.gone:
            await self._write({"type": "http.response.body", "body": b"", "more_body": False})


class ModernEndpoint:
    """Answers 2026-07-28 POSTs for one HTTP app (see the module docstring)."""

    def __init__(
        self,
        handler: StatelessHandler,
        config: HttpServerConfig,
        manager: SessionManager,
        budgets: StreamBudgets,
        slow: SlowRequests,
    ) -> None:
        self.handler = handler
        self.config = config
        self.manager = manager
        #: Listen streams counted across replicas (when the store is shared).
        self.budgets = budgets
        self._server_info = serde.unstructure(getattr(handler, "info", None))
        self._header_params = handler if isinstance(handler, HeaderParameters) else None
        #: Starts disconnect watchers for slow requests (the app's, run by the app).
        self.slow = slow

    def close(self) -> None:
        """End open listen streams gracefully (the server is shutting down)."""
        hub = getattr(self.handler, "listen_hub", None)
        if hub is not None:
            hub.close()

    async def post(
        self,
        receive: Receive,
        send: Send,
        headers: RequestHeaders,
        parsed: ParsedBody,
        principal: Hashable | None,
        *,
        bounded_send: bool = False,
    ) -> None:
        """Answer one POST whose body is ``parsed`` (already read within the app's bounds).

        ``bounded_send``: the server bounds every send itself (``BOUNDED_SEND``). Raises
        :class:`HttpRejection` for what is refused before a JSON-RPC answer can be made.
        Cancellation: cancels the request (no answer is written).
        """
        if parsed.batch:
            raise HttpRejection(400, "Invalid request: 2026-07-28 has no batches")
        message = parsed.messages[0]
        if type(message) is Notification:
            await respond(send, 202)  # nothing to act on: 2026 HTTP has no client notices
            return
        if type(message) is not Request:
            raise HttpRejection(400, "Invalid request: a client sends no responses")
        request = message
        config = self.config
        if config.auth is not None:
            config.auth.authorize([request], principal)  # type: ignore[arg-type]
        try:
            self._check_headers(headers, request)
            prepared = prepare(self.handler, request)
        except RemoteProtocolError as exc:
            await _error(send, 400, encode_error(request.id, exc))
            return
        except RequestRefused as refused:
            await _error(send, refused.http_status, refused.encode())
            return
        accept = headers.get(b"accept")
        listen = request.method == "subscriptions/listen"
        # JSON-response mode turns answers into one JSON body; a listen stream has no
        # answer to wait for (its notifications are the point), so it streams anyway.
        response = _Response(
            send,
            stream_ok=(listen or not config.json_response) and accepts(accept, "text/event-stream"),
            write_timeout=config.body_timeout,
            bounded=bounded_send,
        )
        if listen and not response.stream_ok:
            error = RemoteProtocolError(
                INVALID_REQUEST,
                "subscriptions/listen needs an event stream: accept text/event-stream",
            )
            await _error(send, 400, encode_error(request.id, error))
            return
        if not listen:
            self.manager.reserve()
            try:
                await self._run(receive, response, prepared, principal, listen=False)
            finally:
                self.manager.release()
            return
        # Its own bounds, no session slot: this process's count, then every replica's.
        bounds = self._admit_listen(principal, request.id)
        if bounds is None:
            lease: AbstractAsyncContextManager[None] = nullcontext()
        else:
            lease = self.budgets.listen(
                principal, request.id, max_streams=bounds[0], max_per_principal=bounds[1]
            )
        async with lease:
            self.manager.hold()
            try:
                await self._run(receive, response, prepared, principal, listen=True)
            finally:
                self.manager.unhold()

    async def _run(
        self,
        receive: Receive,
        response: _Response,
        prepared: Any,
        principal: Hashable | None,
        *,
        listen: bool,
    ) -> None:
        """Run the admitted request and write its answer."""
        timeout = None if listen else self.config.session_options.handler_timeout
        # The request's own cancel scope: its deadline is the handler timeout, and a
        # client that leaves cancels it, which is watched only once the request outlives
        # a short grace (see trimcp.transports.http_server.slow).
        deadline = math.inf if timeout is None else trio.current_time() + timeout
        scope = response.request_scope = trio.CancelScope(deadline=deadline)
        watch = self.slow.add(functools.partial(_watch_disconnect, receive, response, scope))
        try:
            answer = await run_request(
                self.handler, prepared, response, principal=principal, scope=scope
            )
        finally:
            if not watch.end_now():
                await watch.end()
        response.request_scope = None
        if response.gone:
            answer.undelivered()
            return  # the client went away: the spec says nothing more is sent
        data = answer.encode(self._server_info)
        if data is None:
            await response.end_empty()
            return
        status = 200 if answer.error is None else modern.http_status(answer.error.code)
        try:
            await response.finish(data, status)
        except ClientGone:
            answer.undelivered()
            return

    def _admit_listen(
        self, principal: Hashable | None, request_id: RequestId
    ) -> tuple[int, int] | None:
        """Refuse a listen stream past the hub's bounds in this process: 429 for one
        caller's, 503 for the server's (checked again, as a ``-32603``, when the stream
        starts). The hub's bounds, in total and per principal (None: no hub)."""
        hub = getattr(self.handler, "listen_hub", None)
        if hub is None:
            return None
        refused = hub.refusal(principal_key(principal))
        if refused is not None:
            limit, message = refused
            status = 429 if limit == "max_per_principal" else 503
            raise HttpRejection(status, message, code=INTERNAL_ERROR, request_id=request_id)
        return int(hub.max_streams), int(hub.max_per_principal)

    def _check_headers(self, headers: RequestHeaders, request: Request) -> None:
        wire = {
            name.decode("latin-1"): value
            for name, value in headers.items()
            if name.startswith(b"mcp-")
        }
        modern.check_headers(wire, request.method, request.params)
        header_params = self._header_params
        if request.method == "tools/call" and header_params is not None:
            name = modern.name_of(request.method, request.params)
            annotations = header_params.header_parameters(name) if name is not None else {}
            if annotations:
                arguments = (request.params or {}).get("arguments")
                modern.check_parameter_headers(wire, arguments, annotations)


async def _watch_disconnect(receive: Receive, response: _Response, scope: trio.CancelScope) -> None:
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            response.gone = True
            scope.cancel()
            return


async def _error(send: Send, status: int, body: bytes) -> None:
    await respond(send, status, body, [JSON_TYPE])
