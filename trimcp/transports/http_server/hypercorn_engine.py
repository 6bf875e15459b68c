"""Hypercorn's HTTP protocols under trimcp's own accept loop, so that shutdown is bounded.

Hypercorn writes each response chunk inside a shielded cancel scope: a client that stops
reading keeps that write, its connection, and ``hypercorn.trio.serve`` running after the
graceful timeout, for as long as the client likes (measured: still running 120 s after
SIGTERM). Here trimcp accepts the connections itself and runs hypercorn's per-connection
server (``hypercorn.trio.tcp_server.TCPServer``: HTTP/1.1, HTTP/2, TLS, WebSocket upgrades
as hypercorn does them) on each, keeping every connection's stream. At shutdown: stop
accepting, tell hypercorn (idle connections close, answers say ``Connection: close``),
give busy connections ``graceful_timeout``, cancel them, and close the sockets of those
still stuck in a shielded write, which ends that write at once.

HTTP/3 (``quic_bind``) is served by hypercorn's own loop, whose shutdown is hypercorn's.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, cast

import trio
from hypercorn.config import Config
from hypercorn.trio import serve as hypercorn_serve
from hypercorn.trio.tcp_server import TCPServer
from hypercorn.trio.worker_context import WorkerContext
from hypercorn.typing import ConnectionState
from hypercorn.utils import repr_socket_addr, wrap_app

#: After the cancel, how long connections may take to notice their closed sockets.
_FORCED_CLOSE_BOUND = 2.0


async def serve_hypercorn(
    app: Any,
    config: Config,
    *,
    shutdown_trigger: Callable[[], Awaitable[None]],
    task_status: trio.TaskStatus[list[str]] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Serve the ASGI ``app`` with hypercorn's protocols until ``shutdown_trigger`` returns.

    Reports the bound addresses (``http://host:port``) like ``hypercorn.trio.serve``. The
    app's lifespan is not run here (``serve_http`` runs the session manager itself).
    Shutdown is bounded by ``config.graceful_timeout`` plus a short forced close.
    Cancellation: stops at once; the sockets of open connections are closed.
    """
    if config.quic_bind:
        await hypercorn_serve(
            app, config, shutdown_trigger=shutdown_trigger, task_status=task_status
        )
        return
    wrapped = wrap_app(app, config.wsgi_max_body_size, "asgi")
    context = WorkerContext(None)
    sockets = config.create_sockets()
    ssl_context = config.create_ssl_context()
    listeners: list[trio.abc.Listener[Any]] = []
    binds: list[str] = []
    for secure, group in ((True, sockets.secure_sockets), (False, sockets.insecure_sockets)):
        for sock in group:
            sock.listen(config.backlog)
            listener: trio.abc.Listener[Any] = trio.SocketListener(
                trio.socket.from_stdlib_socket(sock)
            )
            if secure:
                assert ssl_context is not None
                listener = trio.SSLListener(
                    cast(trio.SocketListener, listener), ssl_context, https_compatible=True
                )
            listeners.append(listener)
            scheme = "https" if secure else "http"
            binds.append(f"{scheme}://{repr_socket_addr(sock.family, sock.getsockname())}")
    streams: set[trio.abc.Stream] = set()
    none_open = trio.Event()

    async def handle(stream: trio.abc.Stream) -> None:
        streams.add(stream)
        try:
            await TCPServer(wrapped, config, context, ConnectionState({}), stream)  # type: ignore[arg-type]
        finally:
            streams.discard(stream)
            if not streams and context.terminated.is_set():
                none_open.set()

    try:
        async with trio.open_nursery() as connections:
            accepting = trio.CancelScope()

            async def accept() -> None:
                with accepting:
                    await trio.serve_listeners(handle, listeners, handler_nursery=connections)

            connections.start_soon(accept)
            task_status.started(binds)
            await shutdown_trigger()
            accepting.cancel()
            await context.terminated.set()  # idle keep-alive connections close now
            if not streams:
                none_open.set()
            with trio.move_on_after(float(config.graceful_timeout)):
                await none_open.wait()
            connections.cancel_scope.cancel()
            _close_sockets(streams)
            connections.cancel_scope.deadline = trio.current_time() + _FORCED_CLOSE_BOUND
    finally:
        _close_sockets(streams)
        for each in listeners:
            socket_of(each).close()


def socket_of(resource: Any) -> Any:
    """The trio socket under a stream or listener (through TLS)."""
    inner = getattr(resource, "transport_stream", None) or getattr(
        resource, "transport_listener", None
    )
    return socket_of(inner) if inner is not None else resource.socket


def _close_sockets(streams: set[trio.abc.Stream]) -> None:
    # Closing a trio socket wakes a task blocked writing to it (with ClosedResourceError),
    # shielded or not: the one way to end hypercorn's shielded writes to a silent client.
    for stream in list(streams):
        socket_of(stream).close()
