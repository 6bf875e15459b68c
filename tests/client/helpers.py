"""A recording low-level server with every server capability, and a client/server pair."""

from __future__ import annotations

import functools
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any, Unpack

import trio

from trimcp.client import Client, ClientKwargs, connect_transport
from trimcp.server.lowlevel import LowLevelServer
from trimcp.session import RequestContext, Session, SessionOptions, serve_session
from trimcp.transports.memory import memory_transport_pair
from trimcp.types import (
    Implementation,
    PromptsCapability,
    ResourcesCapability,
    ServerCapabilities,
    ToolsCapability,
)

ALL_CAPABILITIES = ServerCapabilities(
    tools=ToolsCapability(list_changed=True),
    resources=ResourcesCapability(subscribe=True, list_changed=True),
    prompts=PromptsCapability(list_changed=True),
    logging={},
    completions={},
)


class RecordingServer(LowLevelServer):
    """A LowLevelServer that records every request (method, params) it receives."""

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("capabilities", ALL_CAPABILITIES)
        super().__init__(Implementation(name="test-server", version="1.0.0"), **kwargs)
        self.requests: list[tuple[str, Any]] = []

    async def handle_request(self, ctx: RequestContext) -> Any:
        self.requests.append((ctx.method, ctx.params))
        return await super().handle_request(ctx)

    def params_of(self, method: str) -> list[Any]:
        return [params for name, params in self.requests if name == method]


@asynccontextmanager
async def client_and_server(
    server: Any,
    *,
    server_options: SessionOptions | None = None,
    options: SessionOptions | None = None,
    **client_kwargs: Unpack[ClientKwargs],
) -> AsyncIterator[tuple[Client, Session]]:
    """A connected client and the server's engine session (to send requests to the client)."""
    client_end, server_end = memory_transport_pair()
    async with trio.open_nursery() as nursery:
        serve = functools.partial(serve_session, server_end, server, options=server_options)
        server_session: Session = await nursery.start(serve)
        async with connect_transport(client_end, options=options, **client_kwargs) as client:
            yield client, server_session
        nursery.cancel_scope.cancel()
