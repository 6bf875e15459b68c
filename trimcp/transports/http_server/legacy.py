"""The 2024-11-05 HTTP+SSE transport, served next to Streamable HTTP.

``GET /sse`` opens a session whose only outgoing channel is that SSE response: its first
event is ``endpoint`` with the URL to POST to (``/messages?session_id=...``); every
message the server sends follows as a ``message`` event. ``POST /messages?session_id=...``
takes one JSON-RPC message and answers 202; the answer comes on the SSE stream. The
session ends when the SSE response ends (the client went away) and vice versa. There is no
resumption in this revision: a client that does not read its stream until
``stream_max_bytes`` are queued loses the session.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import TYPE_CHECKING, cast
from urllib.parse import parse_qs

import trio

from trimcp.http.security import accepts, is_json_content_type
from trimcp.protocol.jsonrpc import Request
from trimcp.session.transport import Decoded, Outgoing
from trimcp.transports.http_server.asgi import (
    SSE_HEADERS,
    HttpRejection,
    Receive,
    RequestHeaders,
    Scope,
    Send,
    feed_bounded,
    parse_body,
    read_body,
    respond,
    session_gone,
)
from trimcp.transports.http_server.streams import Sink, pump_until_disconnect, sse_message
from trimcp.transports.http_server.tracecontext import trace_adopter

if TYPE_CHECKING:
    from trimcp.auth.principal import AuthInfo
    from trimcp.transports.http_server.app import McpHttpApp

KIND = "legacy"
_CLOSED = (trio.ClosedResourceError, trio.BrokenResourceError)


class LegacySseTransport:
    """Messages POSTed to the session in; every outgoing message onto its one SSE stream."""

    def __init__(self, sink: Sink, inbound_queue: int) -> None:
        self.sink = sink
        self._in_send, self._in_recv = trio.open_memory_channel[Decoded](inbound_queue)

    async def receive(self) -> Decoded:
        """The next POSTed message (parsed by the endpoint already); ``EndOfChannel`` once
        closed. Cancellation: safe."""
        try:
            return await self._in_recv.receive()
        except trio.ClosedResourceError:
            raise trio.EndOfChannel from None

    async def send(self, messages: Sequence[Outgoing]) -> None:
        """Queue the messages on the SSE stream; a client too slow to read loses the session."""
        for message in messages:
            if not self.sink.put(sse_message(message.data, None)):
                raise trio.BrokenResourceError("the client is not reading its SSE stream")

    async def aclose(self) -> None:
        """End the SSE response and refuse further POSTs. Idempotent."""
        self._in_send.close()
        self._in_recv.close()
        self.sink.finish()

    async def feed(self, body: Decoded, timeout: float) -> None:
        """Hand a POSTed message to the engine (404 if closed, 503 if not taken in time)."""
        await feed_bounded(self._in_send, body, timeout)


async def handle(
    app: McpHttpApp,
    path: str,
    scope: Scope,
    receive: Receive,
    send: Send,
    headers: RequestHeaders,
    principal: Hashable | None,
) -> None:
    """Serve one request to the legacy SSE or messages endpoint (after the app's gate)."""
    config = app.config
    method = scope["method"]
    if path == config.legacy_sse_path and method == "GET":
        await _open_stream(app, scope, receive, send, headers, principal)
    elif path == config.legacy_messages_path and method == "POST":
        await _post(app, scope, receive, send, headers, principal)
    else:
        allow = b"GET" if path == config.legacy_sse_path else b"POST"
        raise HttpRejection(405, "Method not allowed", headers=[(b"allow", allow)])


async def _open_stream(
    app: McpHttpApp,
    scope: Scope,
    receive: Receive,
    send: Send,
    headers: RequestHeaders,
    principal: Hashable | None,
) -> None:
    if not accepts(headers.get(b"accept"), "text/event-stream"):
        raise HttpRejection(406, "Accept must allow text/event-stream")
    config = app.config
    manager = app.manager
    manager.reserve()
    sink = Sink(config.stream_max_bytes, config.stream_max_messages)
    entry = await manager.create(
        principal, lambda _: LegacySseTransport(sink, config.inbound_queue), kind=KIND
    )
    try:
        endpoint = f"{scope.get('root_path', '')}{config.legacy_messages_path}"
        sink.put(f"event: endpoint\ndata: {endpoint}?session_id={entry.session_id}\n\n".encode())
        await send({"type": "http.response.start", "status": 200, "headers": SSE_HEADERS})
        await pump_until_disconnect(send, receive, sink)
    finally:
        manager.end(entry, "the SSE stream ended")


async def _post(
    app: McpHttpApp,
    scope: Scope,
    receive: Receive,
    send: Send,
    headers: RequestHeaders,
    principal: Hashable | None,
) -> None:
    config = app.config
    if not is_json_content_type(headers.get(b"content-type")):
        raise HttpRejection(415, "Content-Type must be application/json")
    query = parse_qs(scope.get("query_string", b"").decode("latin-1"))
    ids = query.get("session_id", [])
    if len(ids) != 1:
        raise HttpRejection(400, "Missing session_id query parameter")
    entry = app.manager.get(ids[0], principal, KIND)
    if entry is None:
        raise session_gone()
    entry.active += 1
    try:
        body = await read_body(
            receive, config.max_body_bytes, config.body_timeout, headers.get(b"content-length")
        )
        parsed = parse_body(body, prepare=trace_adopter(headers))
        if config.auth is not None:  # per tool/prompt/resource scopes, as on /mcp
            requests = [m for m in parsed.messages if type(m) is Request]
            config.auth.authorize(requests, cast("AuthInfo | None", principal))
        await entry.transport.feed(Decoded(parsed.value), config.enqueue_timeout)
        await respond(send, 202, b"Accepted", content_type=b"text/plain")
    finally:
        entry.active -= 1
        entry.touch()
