"""WebSocket: one JSON-RPC message per text frame, subprotocol ``mcp`` (trio-websocket).

No official SDK ships a WebSocket transport any more; this one is trimcp's own. The server
checks the handshake like the HTTP transport checks requests: the ``Host`` and ``Origin``
headers against an allowlist (localhost names by default, which blocks DNS-rebinding
attacks on a server bound to loopback), and the ``mcp`` subprotocol. Messages over
``max_message_bytes`` close the connection with code 1009 (trio-websocket's limit).
"""

from __future__ import annotations

import logging
import ssl
import urllib.parse
from collections.abc import AsyncIterator, Callable, Collection, Sequence
from contextlib import asynccontextmanager

import trio
import trio_websocket

from trimcp._groups import unwrap_single_exception
from trimcp.auth.declared import declared_auth
from trimcp.http.security import LOCALHOST_NAMES, host_allowed, origin_allowed
from trimcp.protocol.lifecycle import Role
from trimcp.session import SessionHandler, SessionOptions, open_session
from trimcp.session.lifespan import open_handler_lifespan
from trimcp.session.options import DEFAULT_IDLE_TIMEOUT, DEFAULT_MAX_SESSIONS
from trimcp.session.transport import Outgoing, Transport

logger = logging.getLogger("trimcp.websocket")

SUBPROTOCOL = "mcp"
DEFAULT_MAX_MESSAGE_BYTES = 4 * 1024 * 1024
#: Host names a loopback server accepts by default (any port): the HTTP server's list.
LOCAL_HOSTS: tuple[str, ...] = LOCALHOST_NAMES


class WebSocketTransport:
    """A trimcp transport over an open trio-websocket connection.

    ``last_activity`` is the Trio time of the last message received or sent (the server's
    idle timeout reads it).
    """

    def __init__(self, connection: trio_websocket.WebSocketConnection) -> None:
        self._connection = connection
        self.last_activity = trio.current_time()

    async def receive(self) -> bytes:
        """The next message; ``trio.EndOfChannel`` once the socket closed. Cancellation: safe."""
        try:
            message = await self._connection.get_message()
        except trio_websocket.ConnectionClosed:
            raise trio.EndOfChannel from None
        self.last_activity = trio.current_time()
        return message.encode("utf-8") if isinstance(message, str) else message

    async def send(self, messages: Sequence[Outgoing]) -> None:
        """Send each message as one text frame."""
        try:
            for message in messages:
                await self._connection.send_message(message.data.decode("utf-8"))
        except trio_websocket.ConnectionClosed:
            raise trio.BrokenResourceError("the WebSocket is closed") from None
        self.last_activity = trio.current_time()

    async def aclose(self) -> None:
        """Close the WebSocket (normal closure)."""
        await self._connection.aclose()


def handshake_allowed(
    host: str | None,
    origin: str | None,
    allowed_hosts: Collection[str],
    allowed_origins: Collection[str] | None = None,
) -> bool:
    """The HTTP transport's rules: a good ``Host``, and an ``Origin`` (when present) that
    is in ``allowed_origins``, or, when that is None, whose host is an allowed host. Shared
    with the HTTP server (:func:`~trimcp.http.security.origin_allowed`),
    not a twin of it."""
    hosts = tuple(allowed_hosts)
    if not host_allowed(host, hosts):
        return False
    origins = tuple(allowed_origins) if allowed_origins is not None else None
    return origin is None or origin_allowed(origin, origins, hosts)


def _headers(request: trio_websocket.WebSocketRequest, name: bytes) -> list[str]:
    """Every value of header ``name`` in the handshake request."""
    if name == b"host":
        # wsproto keeps Host out of the extra headers; trio-websocket only exposes those.
        host = getattr(getattr(request, "_event", None), "host", None)
        return [host] if isinstance(host, str) else []
    return [value.decode("latin-1") for key, value in request.headers if key.lower() == name]


async def serve_until_idle(
    transport: Transport,
    handler: SessionHandler,
    *,
    idle_timeout: float,
    last_activity: Callable[[], float],
    options: SessionOptions | None = None,
) -> None:
    """Serve one session until either side closes it or it is idle for ``idle_timeout``.

    Idle: no message either way since ``last_activity()`` (a Trio time) and nothing under
    way (no handler running, no request of ours awaiting the client). An idle session is
    closed with the engine's bounded close sequence, as the HTTP server closes its idle
    sessions. Cancellation: the session closes with that same sequence.
    """
    async with (
        open_session(transport, role=Role.SERVER, handler=handler, options=options) as (session),
        trio.open_nursery() as nursery,
    ):

        async def watch() -> None:
            while True:
                deadline = last_activity() + idle_timeout
                if trio.current_time() < deadline:
                    await trio.sleep_until(deadline)
                elif session.busy:  # a long call with nothing to say is not idleness
                    await trio.sleep(idle_timeout)  # (its answer will count as activity)
                else:
                    logger.info("closing a WebSocket session: idle for %gs", idle_timeout)
                    session.request_close(f"idle for {idle_timeout:g}s")
                    return

        nursery.start_soon(watch)
        await session.wait_closed()
        nursery.cancel_scope.cancel()


async def serve_websocket(
    handler: SessionHandler | Callable[[], SessionHandler],
    *,
    host: str = "127.0.0.1",
    port: int = 8765,
    path: str = "/mcp",
    allowed_hosts: Collection[str] = LOCAL_HOSTS,
    allowed_origins: Collection[str] | None = None,
    options: SessionOptions | None = None,
    max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
    max_sessions: int = DEFAULT_MAX_SESSIONS,
    idle_timeout: float = DEFAULT_IDLE_TIMEOUT,
    connect_timeout: float = 10.0,
    disconnect_timeout: float = 5.0,
    task_status: trio.TaskStatus[int] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Serve MCP over WebSocket; each connection is one session. Reports the bound port.

    ``handler`` is shared by every session, or a zero-argument factory called per
    connection. The handshake is refused with 403 for a bad ``Host``/``Origin``, 400 for a
    repeated ``Origin`` or a missing ``mcp`` subprotocol, 404 for another path, and 503 when
    ``max_sessions`` sessions are open (nothing is allocated for a refused one). A request
    without ``Origin`` (a non-browser client) is allowed when its ``Host`` is good; a
    browser's ``Origin`` must be in ``allowed_origins`` (entries like
    ``https://app.example.com``, ``http://localhost:*`` for any port, ``*`` for any), or,
    when that is None, name an allowed host, as over HTTP. The
    limits are the HTTP server's (HTTP server's defaults): at most
    ``max_sessions`` at once, and a session idle for ``idle_timeout`` seconds (no message
    either way, nothing under way) is closed. Cancellation: stops accepting; every open
    session closes with the engine's bounded close sequence. A shared handler's lifespan
    (``trimcp.Server(lifespan=...)``) is entered once before listening. A server that
    declares its authorization (``trimcp.Server(auth=...)``) is refused (ValueError):
    WebSocket carries no OAuth here, and serving it open would drop that protection.
    """
    if max_sessions < 1 or not idle_timeout > 0:
        raise ValueError("max_sessions must be >= 1 and idle_timeout > 0")
    if declared_auth(handler) is not None:
        raise ValueError(
            "this server declares its authorization (Server(auth=...)), which the WebSocket "
            "transport cannot apply: serve it over HTTP"
        )
    open_sessions = 0

    def session_handler() -> SessionHandler:
        if callable(handler) and not hasattr(handler, "handle_request"):
            return handler()
        return handler  # type: ignore[return-value]

    async def on_connect(request: trio_websocket.WebSocketRequest) -> None:
        nonlocal open_sessions
        hosts, origins = _headers(request, b"host"), _headers(request, b"origin")
        if len(hosts) > 1 or len(origins) > 1:
            await request.reject(400, body=b"Bad request: repeated Host or Origin header")
            return
        if not handshake_allowed(
            hosts[0] if hosts else None,
            origins[0] if origins else None,
            allowed_hosts,
            allowed_origins,
        ):
            await request.reject(403, body=b"Forbidden: Host or Origin not allowed")
            return
        if request.path.split("?", 1)[0] != path:
            await request.reject(404, body=b"Not found")
            return
        if SUBPROTOCOL not in request.proposed_subprotocols:
            await request.reject(400, body=b"The 'mcp' WebSocket subprotocol is required")
            return
        if open_sessions >= max_sessions:
            await request.reject(503, body=b"Too many sessions; try again later")
            return
        open_sessions += 1
        try:
            connection = await request.accept(subprotocol=SUBPROTOCOL)
            transport = WebSocketTransport(connection)
            await serve_until_idle(
                transport,
                session_handler(),
                idle_timeout=idle_timeout,
                last_activity=lambda: transport.last_activity,
                options=options,
            )
        finally:
            open_sessions -= 1

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


def _split_url(url: str) -> tuple[str, int, str, bool]:
    """``ws://host:port/path?q`` -> ``(host, port, resource, tls)``; ValueError if malformed."""
    parts = urllib.parse.urlsplit(url)
    if parts.scheme not in ("ws", "wss"):
        raise ValueError(f"a WebSocket URL starts with ws:// or wss://, got {url!r}")
    host = parts.hostname
    if not host:
        raise ValueError(f"the WebSocket URL {url!r} has no host")
    tls = parts.scheme == "wss"
    port = parts.port or (443 if tls else 80)
    resource = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    return host, port, resource, tls


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

    Raises ``trio_websocket.HandshakeError`` when the server refuses
    (``ConnectionRejected``, with its status), cannot be reached, or does not answer
    within ``connect_timeout`` (``ConnectionTimeout``). The socket is always closed on the
    way out, refused or not. Cancellation: the WebSocket is closed (bounded by
    ``disconnect_timeout``).
    """
    host, port, resource, tls = _split_url(url)
    extra = [(k.encode("latin-1"), v.encode("latin-1")) for k, v in headers]
    name = f"[{host}]" if ":" in host else host
    host_header = name if port == (443 if tls else 80) else f"{name}:{port}"
    # The connection's reader runs in this nursery; a refused handshake is raised there,
    # so the nursery wraps it: surface it alone.
    async with unwrap_single_exception(), trio.open_nursery() as nursery:
        stream: trio.abc.Stream | None = None
        try:
            try:
                with trio.fail_after(connect_timeout):
                    if tls:
                        stream = await trio.open_ssl_over_tcp_stream(
                            host,
                            port,
                            ssl_context=ssl.create_default_context(),
                            https_compatible=True,
                        )
                    else:
                        stream = await trio.open_tcp_stream(host, port)
                    connection = await trio_websocket.wrap_client_stream(
                        nursery,
                        stream,
                        host_header,
                        resource,
                        subprotocols=[SUBPROTOCOL],
                        extra_headers=extra,
                        max_message_size=max_message_bytes,
                        message_queue_size=16,
                    )
            except trio.TooSlowError:
                raise trio_websocket.ConnectionTimeout from None
            except OSError as exc:
                raise trio_websocket.HandshakeError(str(exc)) from exc
            try:
                if connection.subprotocol != SUBPROTOCOL:
                    raise trio_websocket.HandshakeError(
                        "the server did not accept the 'mcp' subprotocol"
                    )
                yield WebSocketTransport(connection)
            finally:
                with trio.move_on_after(disconnect_timeout) as scope:
                    scope.shield = True
                    await connection.aclose()
        finally:
            if stream is not None:
                # trio-websocket leaves the socket open when the server refuses the
                # handshake (and to the garbage collector's ResourceWarning): close it.
                with trio.CancelScope(shield=True):
                    await stream.aclose()
            nursery.cancel_scope.cancel()
