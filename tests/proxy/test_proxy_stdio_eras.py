"""The proxy over stdio in front of a backend that speaks only the session era: a client
in auto mode asks ``server/discover`` first; the proxy refuses it as a session-era server
does, on a connection it then serves as a session, so the client falls back to
``initialize`` on the same stdin/stdout. Both ways of serving stdio: ``ProxyServer.run``
and ``trimcp.transports.stdio.serve_stdio``."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

import trimcp
from trimcp.client import Era
from trimcp.errors import McpError
from trimcp.types import TextContent

PEERS = Path(__file__).resolve().parents[1] / "peers"
BACKEND = [sys.executable, str(PEERS / "session_only_server.py")]
ENV = dict(os.environ, PYTHONPATH=str(PEERS.parents[1]))


@pytest.mark.parametrize("how", [[], ["--serve-stdio"]], ids=["run", "serve_stdio"])
async def test_auto_clients_fall_back_to_a_session_through_the_proxy(how: list[str]) -> None:
    argv = [sys.executable, str(PEERS / "proxy_peer.py"), *how, "--", *BACKEND]
    async with trimcp.connect_stdio(argv, env=ENV) as client:
        assert client.era is Era.LEGACY
        assert client.server_info.name == "session-only"
        result = await client.call_tool("echo", {"text": "through"})
        assert result.content == [TextContent(text="through")]
    with pytest.raises(McpError) as info:
        async with trimcp.connect_stdio(argv, env=ENV, mode="2026-07-28"):
            pass  # pragma: no cover
    assert "needs a 2026-07-28 server" in info.value.message  # the probe was refused
