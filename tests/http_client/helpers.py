"""A client session over the HTTP client transport, for tests."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from tests.support import NullClient, init_params
from trimcp.protocol.lifecycle import Role
from trimcp.session import Session, SessionOptions, open_session
from trimcp.transports.http_client import HttpClientTransport, open_http_client_transport


@asynccontextmanager
async def http_session(
    url: str,
    *,
    handler: Any = None,
    options: SessionOptions | None = None,
    initialize: bool = True,
    version: str = "2025-11-25",
    **transport_options: Any,
) -> AsyncIterator[tuple[Session, HttpClientTransport]]:
    async with (
        open_http_client_transport(url, **transport_options) as transport,
        open_session(
            transport, role=Role.CLIENT, handler=handler or NullClient(), options=options
        ) as session,
    ):
        if initialize:
            await session.initialize(init_params(version))
        yield session, transport
