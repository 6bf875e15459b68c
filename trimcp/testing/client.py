"""An in-memory client for a server under test, and pytest fixtures built on it."""

from __future__ import annotations

import functools
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any, Unpack

from trimcp._groups import open_nursery_unwrapped
from trimcp.client import Client, ClientKwargs, connect_transport
from trimcp.protocol.lifecycle import Role
from trimcp.session import SessionHandler, SessionOptions, serve_session
from trimcp.transports.memory import memory_transport_pair

ServerOrFactory = SessionHandler | Callable[[], SessionHandler]


def _serve_function(server: SessionHandler) -> Callable[..., Any]:
    # A trimcp.Server serves through its own method, which also runs its notification
    # delivery (list_changed, bridged logs); any other handler through the engine.
    own: Callable[..., Any] | None = getattr(server, "serve_session", None)
    if callable(own):
        return own
    return functools.partial(serve_session, handler=server, role=Role.SERVER)


@asynccontextmanager
async def open_test_client(
    server: SessionHandler,
    *,
    server_options: SessionOptions | None = None,
    options: SessionOptions | None = None,
    max_buffered: int = 64,
    **client_kwargs: Unpack[ClientKwargs],
) -> AsyncIterator[Client]:
    """Serve ``server`` (a ``trimcp.Server``, a ``LowLevelServer`` or any
    ``SessionHandler``) in this process and yield an initialized :class:`Client` for it.

    Both ends run in a nursery this context manager owns, over a memory transport pair that
    buffers at most ``max_buffered`` messages each way; the server session uses
    ``server_options``, the client ``options`` and ``client_kwargs`` (sampling handler,
    roots, callbacks... as :func:`trimcp.client.connect_memory`). The block starts once the
    handshake is done and the server has seen ``notifications/initialized`` (a ``ping``
    round trip makes sure), so list changes made in the block reach the client. Nothing
    touches the network or the real clock, so it works under pytest-trio's
    ``autojump_clock``: a tool that sleeps for an hour returns at once in virtual time.

    Errors surface as one exception (never a group). Cancellation: leaving the block (also
    by cancellation) closes the client, then cancels the server session, each with the
    engine's bounded, shielded close.
    """
    client_end, server_end = memory_transport_pair(max_buffered)
    serve = _serve_function(server)
    async with open_nursery_unwrapped() as nursery:
        await nursery.start(functools.partial(serve, server_end, options=server_options))
        try:
            async with connect_transport(client_end, options=options, **client_kwargs) as client:
                # The server marks the session initialized when it reads
                # notifications/initialized; one round trip makes sure it has, so a change
                # the test makes next (add_tool...) is announced to this client.
                await client.ping()
                yield client
        finally:
            nursery.cancel_scope.cancel()


def _resolve(server: ServerOrFactory) -> SessionHandler:
    if hasattr(server, "handle_request"):
        return server  # type: ignore[return-value]
    return server()


def make_client_fixture(server: ServerOrFactory, **client_kwargs: Any) -> Any:
    """A pytest-trio fixture yielding an :func:`open_test_client` for ``server``.

    ``server`` is a server object, or a zero-argument factory called once per test (a
    fresh server each time). Assign the result to the fixture's name in a test module or
    ``conftest.py``::

        client = make_client_fixture(app)

        async def test_add(client):
            result = await client.call_tool("add", {"a": 1, "b": 2})

    Needs pytest and pytest-trio (``trio_mode`` on, or mark the tests ``@pytest.mark.trio``).
    """
    import pytest

    @pytest.fixture
    async def client() -> AsyncIterator[Client]:
        async with open_test_client(_resolve(server), **client_kwargs) as connected:
            yield connected

    return client


@functools.cache
def mcp_client_fixture() -> Any:
    """The ready-made ``mcp_client`` fixture: a client for the server your own
    ``mcp_server`` fixture returns (built lazily so importing trimcp needs no pytest)."""
    import pytest

    @pytest.fixture
    async def mcp_client(mcp_server: Any) -> AsyncIterator[Client]:
        async with open_test_client(_resolve(mcp_server)) as connected:
            yield connected

    return mcp_client


__all__ = ["make_client_fixture", "mcp_client_fixture", "open_test_client"]
