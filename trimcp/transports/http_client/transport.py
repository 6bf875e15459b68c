"""The HTTP client transports as trimcp :class:`~trimcp.session.transport.Transport` objects.

``open_http_client_transport`` speaks Streamable HTTP (falling back to the 2024-11-05
HTTP+SSE transport for servers that refuse the initialize POST);
``open_legacy_sse_client_transport`` speaks HTTP+SSE only. Both are async context managers
that own a nursery for their HTTP tasks, so nothing they start outlives the block.
"""

from __future__ import annotations

import ssl
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any, Literal

import trio

from trimcp._groups import open_nursery_unwrapped
from trimcp.http.client import ConnectionPool
from trimcp.http.url import Endpoint, parse_url
from trimcp.session.transport import Outgoing
from trimcp.transports.http_client.inbox import Inbox
from trimcp.transports.http_client.legacy import LegacySseClient
from trimcp.transports.http_client.options import DEFAULT_MAX_MESSAGE_BYTES, HttpClientOptions
from trimcp.transports.http_client.streamable import StreamableHttpClient
from trimcp.transports.http_client.tasks import TaskSet


class HttpClientTransport:
    """A client transport over HTTP; create it with :func:`open_http_client_transport` or
    :func:`open_legacy_sse_client_transport`.

    ``receive`` yields messages from every stream the server answers on, in the order
    they arrive; ``send`` POSTs messages (see :mod:`.streamable` for what happens to
    each). Failures of single requests come back as JSON-RPC error responses for them;
    ``receive`` ends (``trio.EndOfChannel``) only when the session is over: the transport
    was closed, the HTTP+SSE stream ended, or an expired session could not be renewed.
    """

    def __init__(
        self,
        nursery: trio.Nursery,
        endpoint: Endpoint,
        options: HttpClientOptions,
        *,
        legacy: bool = False,
    ) -> None:
        self.endpoint = endpoint
        self.options = options
        self._tasks = TaskSet(nursery)
        self.pool = ConnectionPool(
            ssl_context=options.ssl_context,
            connect_timeout=options.timeout,
            max_idle=options.max_connections + 2,
        )
        self._inbox = Inbox(options.inbox_size)
        self._streamable: StreamableHttpClient | None = None
        self._legacy: LegacySseClient | None = None
        if legacy:
            self._legacy = LegacySseClient(endpoint, options, self.pool, self._inbox)
        else:
            self._streamable = StreamableHttpClient(
                endpoint, options, self.pool, self._inbox, self._tasks
            )
        self._closed = False

    @property
    def kind(self) -> Literal["streamable-http", "http+sse"]:
        """Which transport is in use (``http+sse`` after a fallback too)."""
        if self._legacy is not None:
            return "http+sse"
        if self._streamable is not None and self._streamable.legacy is not None:
            return "http+sse"
        return "streamable-http"

    @property
    def session_id(self) -> str | None:
        """The ``Mcp-Session-Id`` the server assigned (Streamable HTTP only)."""
        return self._streamable.session_id if self._streamable is not None else None

    @property
    def protocol_version(self) -> str | None:
        """The version sent as ``MCP-Protocol-Version`` (from the initialize result)."""
        return self._streamable.protocol_version if self._streamable is not None else None

    @property
    def auth(self) -> Any:
        """The connection's :class:`~trimcp.auth.client.AuthSession` (None without
        ``auth=``): its ``logins`` and ``refreshes`` counters, its current token."""
        return self._streamable.auth if self._streamable is not None else None

    @property
    def reinitializations(self) -> int:
        """How many times an expired session was replaced by a new one."""
        return self._streamable.reinitializations if self._streamable is not None else 0

    async def _connect_legacy(self) -> None:
        assert self._legacy is not None
        self._tasks.spawn(self._legacy.run)
        await self._legacy.wait_ready()

    async def receive(self) -> bytes:
        """The next message from the server.

        Raises ``trio.EndOfChannel`` when the session is over, ``MessageTooLarge`` for an
        event that was dropped. Cancellation: safe, nothing is lost.
        """
        return await self._inbox.get()

    async def send(self, messages: Sequence[Outgoing]) -> None:
        """POST each message, in order.

        Waits while ``max_connections`` requests are in flight, and for the server to
        accept each notification or response (at most ``timeout``). Never raises for
        HTTP failures (they come back through :meth:`receive`); raises
        ``trio.ClosedResourceError`` once the transport is closed. Cancellation: messages
        not yet handed over are not sent.
        """
        for message in messages:
            data = message.data
            if self._closed:
                raise trio.ClosedResourceError("the HTTP client transport is closed")
            if self._streamable is not None:
                await self._streamable.send(data)
            else:
                assert self._legacy is not None
                await self._legacy.send(data)

    async def aclose(self) -> None:
        """End the session: stop every HTTP task, DELETE the session (at most
        ``delete_timeout``; 405 is fine), close every connection. Idempotent.

        Cancellation: the DELETE is abandoned; connections are closed anyway.
        """
        if self._closed:
            return
        self._closed = True
        self._inbox.close()
        self._tasks.cancel_all()
        try:
            if self._streamable is not None:
                await self._streamable.terminate()
        finally:
            await self.pool.aclose()

    def _discard_unread(self) -> None:
        self._inbox.close_receiver()


@asynccontextmanager
async def _run_transport(
    endpoint: Endpoint, options: HttpClientOptions, *, legacy: bool
) -> AsyncIterator[HttpClientTransport]:
    async with open_nursery_unwrapped() as nursery:
        transport = HttpClientTransport(nursery, endpoint, options, legacy=legacy)
        try:
            if legacy:
                await transport._connect_legacy()
            yield transport
        finally:
            with trio.CancelScope(shield=True) as scope:
                scope.deadline = trio.current_time() + options.close_bound
                await transport.aclose()
            transport._discard_unread()
            nursery.cancel_scope.cancel()


def open_http_client_transport(
    url: str,
    *,
    headers: Mapping[str, str] | None = None,
    timeout: float = 30.0,
    sse_read_timeout: float = 300.0,
    max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
    ssl_context: ssl.SSLContext | None = None,
    max_connections: int = 8,
    legacy_fallback: bool = True,
    reinitialize: bool = True,
    delete_timeout: float = 5.0,
    max_reconnect_attempts: int = 3,
    auth: Any = None,
) -> AbstractAsyncContextManager[HttpClientTransport]:
    """Connect to an MCP server's Streamable HTTP endpoint (``async with``).

    Yields an :class:`HttpClientTransport` to run a client session over, e.g.
    ``open_session(transport, role=Role.CLIENT, ...)``. Nothing is sent until the session
    sends ``initialize``. ``headers`` go on every request (``Authorization``, say; the
    MCP headers are the transport's own). ``https`` URLs verify certificates with the
    system store unless ``ssl_context`` says otherwise. See :class:`HttpClientOptions`
    for every bound. ``auth``: an :class:`~trimcp.auth.OAuthClient` to log in with when the
    server asks (401/403; see docs/authorization.md).

    Raises ValueError for a URL or option it cannot use. Leaving the block closes the
    transport (DELETE of the session, bounded by ``delete_timeout``) and cancels its
    tasks, also when the block is cancelled.
    """
    options = HttpClientOptions(
        headers=headers,
        timeout=timeout,
        sse_read_timeout=sse_read_timeout,
        max_message_bytes=max_message_bytes,
        ssl_context=ssl_context,
        max_connections=max_connections,
        legacy_fallback=legacy_fallback,
        reinitialize=reinitialize,
        delete_timeout=delete_timeout,
        max_reconnect_attempts=max_reconnect_attempts,
        auth=auth,
    )
    return _run_transport(parse_url(url), options, legacy=False)


def open_legacy_sse_client_transport(
    url: str,
    *,
    headers: Mapping[str, str] | None = None,
    timeout: float = 30.0,
    sse_read_timeout: float = 300.0,
    max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
    ssl_context: ssl.SSLContext | None = None,
) -> AbstractAsyncContextManager[HttpClientTransport]:
    """Connect to a 2024-11-05 HTTP+SSE server's event stream at ``url`` (``async with``).

    Opens the stream and waits (at most ``timeout``) for the ``endpoint`` event before
    yielding; raises :class:`HttpClientError` / :class:`HttpStatusError` if that fails.
    The session ends (``receive`` raises ``trio.EndOfChannel``) when the stream does.
    Leaving the block closes the stream and cancels the transport's tasks.
    """
    options = HttpClientOptions(
        headers=headers,
        timeout=timeout,
        sse_read_timeout=sse_read_timeout,
        max_message_bytes=max_message_bytes,
        ssl_context=ssl_context,
        legacy_fallback=False,
    )
    return _run_transport(parse_url(url), options, legacy=True)
