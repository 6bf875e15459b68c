"""WebSocket: one JSON-RPC message per text frame, subprotocol ``mcp`` (trio-websocket).

No official SDK ships a WebSocket transport any more; this one is trimcp's own. The server
checks the handshake like the HTTP transport checks requests: the ``Host`` and ``Origin``
headers against an allowlist (localhost names by default, which blocks DNS-rebinding
attacks on a server bound to loopback), and the ``mcp`` subprotocol. Messages over
``max_message_bytes`` close the connection with code 1009 (trio-websocket's limit).
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable, Collection, Sequence
from contextlib import asynccontextmanager

import trio
import trio_websocket

from trimcp._groups import unwrap_single_exception
from trimcp.session import SessionHandler, SessionOptions, serve_session
from trimcp.session.lifespan import open_handler_lifespan
from trimcp.transports.base import Outgoing
from trimcp.transports.http_server.config import LOCALHOST_NAMES
from trimcp.transports.http_server.security import host_allowed, origin_allowed

logger = logging.getLogger("trimcp.websocket")

SUBPROTOCOL = "mcp"
DEFAULT_MAX_MESSAGE_BYTES = 4 * 1024 * 1024
#: Host names a loopback server accepts by default (any port): the HTTP server's list.
LOCAL_HOSTS: tuple[str, ...] = LOCALHOST_NAMES


class WebSocketTransport:
    """A trimcp transport over an open trio-websocket connection."""

    def __init__(self, connection: trio_websocket.WebSocketConnection) -> None:
        self._connection = connection

    async def receive(self) -> bytes:
        """The next message; ``trio.EndOfChannel`` once the socket closed. Cancellation: safe."""
        try:
            message = await self._connection.get_message()
        except trio_websocket.ConnectionClosed:
            raise trio.EndOfChannel from None
        return message.encode("utf-8") if isinstance(message, str) else message

    async def send(self, messages: Sequence[Outgoing]) -> None:
        """Send each message as one text frame."""
        try:
            for message in messages:
                await self._connection.send_message(message.data.decode("utf-8"))
        except trio_websocket.ConnectionClosed:
            raise trio.BrokenResourceError("the WebSocket is closed") from None

    async def aclose(self) -> None:
        """Close the WebSocket (normal closure)."""
        await self._connection.aclose()


def handshake_allowed(host: str | None, origin: str | None, allowed_hosts: Collection[str]) -> bool:
    """The HTTP transport's DNS-rebinding rule: a good ``Host``, and an ``Origin`` (when
    present) whose host is allowed too. Shared with the HTTP server, not a twin of it."""
    hosts = tuple(allowed_hosts)
    if not host_allowed(host, hosts):
        return False
    return origin is None or origin_allowed(origin, None, hosts)


def _header(request: trio_websocket.WebSocketRequest, name: bytes) -> str | None:
    if name == b"host":
        # wsproto keeps Host out of the extra headers; trio-websocket only exposes those.
        host = getattr(getattr(request, "_event", None), "host", None)
        return host if isinstance(host, str) else None
    for key, value in request.headers:
        if key.lower() == name:
            return value.decode("latin-1")
    return None


async def serve_websocket(
    handler: SessionHandler | Callable[[], SessionHandler],
    *,
    host: str = "127.0.0.1",
    port: int = 8765,
    path: str = "/mcp",
    allowed_hosts: Collection[str] = LOCAL_HOSTS,
    options: SessionOptions | None = None,
    max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
    connect_timeout: float = 10.0,
    disconnect_timeout: float = 5.0,
    task_status: trio.TaskStatus[int] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Serve MCP over WebSocket; each connection is one session. Reports the bound port.

    ``handler`` is shared by every session, or a zero-argument factory called per
    connection. The handshake is refused with 403 for a bad ``Host``/``Origin`` or a wrong
    path, and 400 without the ``mcp`` subprotocol. A request without ``Origin`` (a non-browser
    client) is allowed when its ``Host`` is good. Cancellation: stops accepting; every open
    session closes with the engine's bounded close sequence. A shared handler's lifespan
    (``trimcp.Server(lifespan=...)``) is entered once before listening.
    """

    def session_handler() -> SessionHandler:
        if callable(handler) and not hasattr(handler, "handle_request"):
            return handler()
        return handler  # type: ignore[return-value]

    async def on_connect(request: trio_websocket.WebSocketRequest) -> None:
        if not handshake_allowed(
            _header(request, b"host"), _header(request, b"origin"), allowed_hosts
        ):
            await request.reject(403, body=b"Forbidden: Host or Origin not allowed")
            return
        if request.path.split("?", 1)[0] != path:
            await request.reject(404, body=b"Not found")
            return
        if SUBPROTOCOL not in request.proposed_subprotocols:
            await request.reject(400, body=b"The 'mcp' WebSocket subprotocol is required")
            return
        connection = await request.accept(subprotocol=SUBPROTOCOL)
        await serve_session(WebSocketTransport(connection), session_handler(), options=options)

    async with open_handler_lifespan(handler), trio.open_nursery() as nursery:
        listener: trio_websocket.WebSocketServer = await nursery.start(
            _listen, on_connect, host, port, max_message_bytes, connect_timeout, disconnect_timeout
        )
        task_status.started(listener.port)


async def _listen(
    on_connect: Callable[[trio_websocket.WebSocketRequest], object],
    host: str,
    port: int,
    max_message_bytes: int,
    connect_timeout: float,
    disconnect_timeout: float,
    *,
    task_status: trio.TaskStatus[trio_websocket.WebSocketServer],
) -> None:
    await trio_websocket.serve_websocket(
        on_connect,  # type: ignore[arg-type]
        host,
        port,
        None,
        max_message_size=max_message_bytes,
        message_queue_size=16,
        connect_timeout=connect_timeout,
        disconnect_timeout=disconnect_timeout,
        task_status=task_status,
    )


@asynccontextmanager
async def open_websocket_client_transport(
    url: str,
    *,
    headers: Sequence[tuple[str, str]] = (),
    max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
    connect_timeout: float = 10.0,
    disconnect_timeout: float = 5.0,
) -> AsyncIterator[WebSocketTransport]:
    """Connect to an MCP WebSocket endpoint (``ws://`` or ``wss://``), subprotocol ``mcp``.

    Raises ``trio_websocket.HandshakeError`` when the server refuses. Cancellation: the
    socket is closed on the way out (bounded by ``disconnect_timeout``).
    """
    extra = [(k.encode("latin-1"), v.encode("latin-1")) for k, v in headers]
    # trio-websocket's internal nursery wraps a refused handshake; surface it alone.
    async with (
        unwrap_single_exception(),
        trio_websocket.open_websocket_url(
            url,
            subprotocols=[SUBPROTOCOL],
            extra_headers=extra,
            max_message_size=max_message_bytes,
            message_queue_size=16,
            connect_timeout=connect_timeout,
            disconnect_timeout=disconnect_timeout,
        ) as connection,
    ):
        if connection.subprotocol != SUBPROTOCOL:
            raise trio_websocket.HandshakeError("the server did not accept the 'mcp' subprotocol")
        yield WebSocketTransport(connection)
