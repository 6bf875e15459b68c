"""Openers: async context managers that own a client session and run the handshake.

Each opener creates a :class:`~trimcp.client.Client` from its keyword arguments (see
:class:`~trimcp.client.client.ClientKwargs`), opens a session with it as the handler,
connects as ``mode`` says (by default ``server/discover``, then ``initialize`` and
``notifications/initialized`` if the server is a 2025 one; see ``docs/eras.md``), and
yields the ready client. Leaving the
block closes the session with the engine's bounded close sequence (and, for stdio, stops the
child with its bounded shutdown ladder). An error, during the handshake or in the body,
surfaces as that one exception, never as an exception group.
"""

from __future__ import annotations

import functools
import os
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from typing import Any, Unpack

from trimcp._groups import open_nursery_unwrapped, unwrap_single_exception
from trimcp.client.client import Client, ClientKwargs
from trimcp.protocol.framing import DEFAULT_MAX_LINE_BYTES
from trimcp.protocol.lifecycle import Role
from trimcp.session import SessionHandler, SessionOptions, open_session, serve_session
from trimcp.session.lifespan import open_handler_lifespan
from trimcp.session.transport import Transport
from trimcp.transports.memory import memory_transport_pair
from trimcp.transports.stdio import ShutdownTimeouts, open_stdio_client_transport


@asynccontextmanager
async def connect_transport(
    transport: Transport,
    *,
    options: SessionOptions | None = None,
    **client_kwargs: Unpack[ClientKwargs],
) -> AsyncIterator[Client]:
    """A connected, initialized client over ``transport`` (any :class:`Transport`).

    ``options`` bounds the session (timeouts, queues, shutdown; ``request_timeout`` also
    bounds the handshake). The transport is closed when the block ends. Cancellation:
    cancelling during the handshake abandons it and closes the session; leaving the block
    runs the bounded close, shielded, so it completes even when the block was cancelled.
    """
    client = Client(**client_kwargs)
    async with (
        open_session(transport, role=Role.CLIENT, handler=client, options=options) as s,
        client.open_task_runner(s),
    ):
        await client.attach(s)
        yield client


@asynccontextmanager
async def connect_stdio(
    argv: Sequence[str],
    *,
    env: Mapping[str, str] | None = None,
    cwd: str | os.PathLike[str] | None = None,
    on_stderr: Callable[[str], None] | None = None,
    shutdown: ShutdownTimeouts | None = None,
    max_message_bytes: int = DEFAULT_MAX_LINE_BYTES,
    options: SessionOptions | None = None,
    **client_kwargs: Unpack[ClientKwargs],
) -> AsyncIterator[Client]:
    """Spawn the server ``argv`` and yield a client connected to it over stdio.

    ``env`` replaces the child's environment (merge ``os.environ`` yourself to extend it);
    each line the child writes to stderr goes to ``on_stderr`` (default: the
    ``trimcp.stdio.stderr`` logger); lines longer than ``max_message_bytes`` on stdout are
    skipped. If the child exits, pending requests fail at once with ``SessionClosed``.
    On exit: the session closes, then the child's stdin is closed, then SIGTERM, then
    SIGKILL, each step bounded by ``shutdown`` (a :class:`ShutdownTimeouts`).
    Cancellation: as :func:`connect_transport`; the child shutdown is shielded and bounded.
    """
    async with (
        unwrap_single_exception(),
        open_stdio_client_transport(
            argv,
            env=env,
            cwd=cwd,
            on_stderr=on_stderr,
            max_message_bytes=max_message_bytes,
            shutdown=shutdown or ShutdownTimeouts(),
        ) as transport,
        connect_transport(transport, options=options, **client_kwargs) as client,
    ):
        yield client


@asynccontextmanager
async def connect_memory(
    server_handler: SessionHandler,
    *,
    server_options: SessionOptions | None = None,
    max_buffered: int = 64,
    options: SessionOptions | None = None,
    **client_kwargs: Unpack[ClientKwargs],
) -> AsyncIterator[Client]:
    """Serve ``server_handler`` (e.g. a ``LowLevelServer``) in this process and yield a
    client connected to it through a memory transport pair.

    The server session runs in a nursery this context manager owns, with
    ``server_options``; each direction buffers at most ``max_buffered`` messages. When the
    block ends the client closes, then the server session is cancelled, which runs its own
    bounded, shielded close. The handler's lifespan (``trimcp.Server(lifespan=...)``) is
    entered around it unless it already runs. Cancellation: as :func:`connect_transport`.
    """
    client_end, server_end = memory_transport_pair(max_buffered)
    async with open_handler_lifespan(server_handler), open_nursery_unwrapped() as nursery:
        serve = functools.partial(
            serve_session, server_end, server_handler, role=Role.SERVER, options=server_options
        )
        await nursery.start(serve)
        try:
            async with connect_transport(client_end, options=options, **client_kwargs) as client:
                yield client
        finally:
            nursery.cancel_scope.cancel()


@asynccontextmanager
async def connect_http(
    url: str,
    *,
    headers: Mapping[str, str] | None = None,
    timeout: float = 30.0,
    legacy_fallback: bool = True,
    options: SessionOptions | None = None,
    auth: Any = None,
    **client_kwargs: Unpack[ClientKwargs],
) -> AsyncIterator[Client]:
    """A client connected to the MCP server at ``url`` over Streamable HTTP.

    Speaks 2026-07-28 with a server that answers ``server/discover`` (``mode="auto"``),
    else Streamable HTTP with a session, and falls back to the legacy HTTP+SSE transport
    (2024-11-05 servers) when the server refuses the initialize POST with 400/404/405 and
    ``legacy_fallback`` is on. ``timeout``
    bounds each HTTP exchange (connect, headers, body); certificates are verified for
    ``https``. ``auth``: an :class:`~trimcp.auth.OAuthClient` that logs in when the
    server asks (docs/authorization.md). On exit the session is closed and the HTTP
    session deleted (bounded). Cancellation: as :func:`connect_transport`.
    """
    from trimcp.transports.http_client import open_http_client_transport

    async with (
        unwrap_single_exception(),
        open_http_client_transport(
            url,
            headers=dict(headers or {}),
            timeout=timeout,
            legacy_fallback=legacy_fallback,
            auth=auth,
        ) as transport,
        connect_transport(transport, options=options, **client_kwargs) as client,
    ):
        yield client


@asynccontextmanager
async def connect_websocket(
    url: str,
    *,
    headers: Sequence[tuple[str, str]] = (),
    options: SessionOptions | None = None,
    **client_kwargs: Unpack[ClientKwargs],
) -> AsyncIterator[Client]:
    """A client connected to the MCP server at ``url`` (``ws://``/``wss://``) over WebSocket.

    Uses trimcp's WebSocket transport (subprotocol ``mcp``). Cancellation: as
    :func:`connect_transport`; the socket is closed on the way out.
    """
    from trimcp.transports.websocket import open_websocket_client_transport

    async with (
        unwrap_single_exception(),
        open_websocket_client_transport(url, headers=headers) as transport,
        connect_transport(transport, options=options, **client_kwargs) as client,
    ):
        yield client
