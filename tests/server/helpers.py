"""Helpers for the server framework tests: a Server served in memory, a scripted client."""

from __future__ import annotations

import functools
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

import trio

from tests.support import init_params
from trimcp import serde
from trimcp.errors import METHOD_NOT_FOUND, McpError
from trimcp.protocol.lifecycle import Role
from trimcp.server import Server
from trimcp.session import RequestContext, Session, SessionOptions, open_session
from trimcp.transports.memory import memory_transport_pair
from trimcp.types import CallToolResult, ClientCapabilities

Answer = Callable[[RequestContext], Awaitable[Any]]


class ScriptedClient:
    """A client-side handler: answers requests with the given functions, records notes."""

    def __init__(self, **answers: Answer) -> None:
        # Keys are method names with "/" written as "__": sampling__createMessage=...
        self.answers = {name.replace("__", "/"): fn for name, fn in answers.items()}
        self.notifications: list[tuple[str, Any]] = []
        self.requests: list[tuple[str, Any]] = []

    async def handle_request(self, ctx: RequestContext) -> Any:
        self.requests.append((ctx.method, ctx.params))
        answer = self.answers.get(ctx.method)
        if answer is None:
            raise McpError(METHOD_NOT_FOUND, f"Method not found: {ctx.method}")
        return await answer(ctx)

    async def handle_notification(self, session: Session, method: str, params: Any) -> None:
        self.notifications.append((method, params))

    def methods(self) -> list[str]:
        return [method for method, _ in self.notifications]


@asynccontextmanager
async def connect(
    app: Server,
    client: Any = None,
    *,
    version: str = "2025-11-25",
    capabilities: ClientCapabilities | None = None,
    initialize: bool = True,
    server_options: SessionOptions | None = None,
) -> AsyncIterator[tuple[Session, Session]]:
    """(client session, server session), the server run by ``app.serve_session``."""
    client_end, server_end = memory_transport_pair()
    async with trio.open_nursery() as nursery:
        server: Session = await nursery.start(
            functools.partial(app.serve_session, server_end, options=server_options)
        )
        async with open_session(
            client_end, role=Role.CLIENT, handler=client or ScriptedClient()
        ) as session:
            if initialize:
                await session.initialize(init_params(version, capabilities))
                await trio.testing.wait_all_tasks_blocked()
            yield session, server


async def call_tool(client: Session, name: str, arguments: Any = None) -> CallToolResult:
    params: dict[str, Any] = {"name": name}
    if arguments is not None:
        params["arguments"] = arguments
    result: CallToolResult = await client.send_request("tools/call", params)
    return result


def wire(obj: Any) -> Any:
    """The JSON form of a typed result, for comparing with expected JSON."""
    return json.loads(json.dumps(serde.unstructure(obj)))


def text_of(result: CallToolResult) -> str:
    texts = [block.text for block in result.content if block.type == "text"]
    return "\n".join(texts)
