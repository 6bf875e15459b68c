"""Test helpers: a connected client/server pair in memory, a raw peer that speaks bytes, and a
server subprocess on a loopback port."""

from __future__ import annotations

import functools
import json
import subprocess
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import trio

from trimcp.protocol.lifecycle import Role
from trimcp.server.lowlevel import LowLevelServer
from trimcp.session import Session, SessionOptions, open_session
from trimcp.session.transport import Outgoing
from trimcp.transports.memory import MemoryTransport, memory_transport_pair
from trimcp.types import (
    ClientCapabilities,
    Implementation,
    InitializeRequestParams,
    ServerCapabilities,
    ToolsCapability,
)

RECEIVE_TIMEOUT = 30.0
CLIENT_INFO = Implementation(name="test-client", version="0.0.1")


def init_params(
    version: str = "2025-11-25", capabilities: ClientCapabilities | None = None
) -> InitializeRequestParams:
    return InitializeRequestParams(
        protocol_version=version,
        capabilities=capabilities or ClientCapabilities(),
        client_info=CLIENT_INFO,
    )


def make_server(**kwargs: Any) -> LowLevelServer:
    kwargs.setdefault("capabilities", ServerCapabilities(tools=ToolsCapability()))
    return LowLevelServer(Implementation(name="test-server", version="1.0.0"), **kwargs)


class NullClient:
    """A client-side handler that answers nothing and records notifications."""

    def __init__(self) -> None:
        self.notifications: list[tuple[str, Any]] = []

    async def handle_request(self, ctx: Any) -> Any:
        from trimcp.errors import METHOD_NOT_FOUND, McpError

        raise McpError(METHOD_NOT_FOUND)

    async def handle_notification(self, session: Session, method: str, params: Any) -> None:
        self.notifications.append((method, params))


@asynccontextmanager
async def session_pair(
    server: Any,
    client_handler: Any = None,
    *,
    server_options: SessionOptions | None = None,
    client_options: SessionOptions | None = None,
    version: str = "2025-11-25",
    capabilities: ClientCapabilities | None = None,
    initialize: bool = True,
) -> AsyncIterator[tuple[Session, Session]]:
    """A client session and a server session connected in memory (client, server)."""
    client_end, server_end = memory_transport_pair()
    async with (
        open_session(
            server_end, role=Role.SERVER, handler=server, options=server_options
        ) as server_session,
        open_session(
            client_end,
            role=Role.CLIENT,
            handler=client_handler or NullClient(),
            options=client_options,
        ) as client_session,
    ):
        if initialize:
            await client_session.initialize(init_params(version, capabilities))
        yield client_session, server_session


class RawPeer:
    """The far end of a memory transport, driven by hand with JSON values or raw bytes."""

    def __init__(self, transport: MemoryTransport) -> None:
        self.transport = transport

    async def send_bytes(self, data: bytes) -> None:
        await self.transport.send([Outgoing(data)])

    async def send(self, message: Any) -> None:
        await self.send_bytes(json.dumps(message).encode())

    async def receive(self) -> Any:
        # Bounded, so a missing reply fails the test instead of hanging it (under the
        # autojump clock this fails at once when everything is blocked).
        with trio.fail_after(RECEIVE_TIMEOUT):
            return json.loads(await self.transport.receive())

    def receive_nowait_all(self) -> list[Any]:
        out = []
        while True:
            try:
                out.append(json.loads(self.transport._receive_channel.receive_nowait()))
            except (trio.WouldBlock, trio.EndOfChannel):
                return out

    async def request(self, request_id: Any, method: str, params: Any = None) -> Any:
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if params is not None:
            message["params"] = params
        await self.send(message)
        return await self.receive()

    async def notify(self, method: str, params: Any = None) -> None:
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = params
        await self.send(message)

    async def initialize(self, version: str = "2025-11-25") -> Any:
        reply = await self.request(
            0,
            "initialize",
            {
                "protocolVersion": version,
                "capabilities": {},
                "clientInfo": {"name": "raw", "version": "0"},
            },
        )
        await self.notify("notifications/initialized")
        return reply


@asynccontextmanager
async def raw_client(
    server: Any,
    *,
    options: SessionOptions | None = None,
    initialize: bool = True,
    version: str = "2025-11-25",
) -> AsyncIterator[tuple[RawPeer, Session]]:
    """A server session whose client is a :class:`RawPeer` the test drives by hand."""
    peer_end, server_end = memory_transport_pair()
    async with open_session(server_end, role=Role.SERVER, handler=server, options=options) as s:
        peer = RawPeer(peer_end)
        if initialize:
            await peer.initialize(version)
        yield peer, s
        await peer_end.aclose()


@asynccontextmanager
async def http_server_url(
    argv: list[str], env: dict[str, str], bound: float = RECEIVE_TIMEOUT
) -> AsyncIterator[str]:
    """Run a server subprocess that prints where it listens as its first stdout line (a
    URL, or just a port: then ``http://127.0.0.1:PORT/mcp``), yield that URL, terminate it
    on exit. Waiting for the line is bounded by ``bound`` seconds."""
    async with trio.open_nursery() as nursery:
        run = functools.partial(
            trio.run_process, argv, stdout=subprocess.PIPE, env=env, check=False
        )
        process: trio.Process = await nursery.start(run)
        assert process.stdout is not None
        line = b""
        with trio.fail_after(bound):
            while not line.endswith(b"\n"):
                chunk = await process.stdout.receive_some(256)
                assert chunk, f"{argv[-1]} exited before printing where it listens"
                line += chunk
        first = line.decode().strip()
        try:
            yield first if first.startswith("http") else f"http://127.0.0.1:{int(first)}/mcp"
        finally:
            process.terminate()
