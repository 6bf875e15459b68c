"""What a resting session's protocol core keeps: no tables of its own, and the client
values it shares with every session of the same kind of client (an idle HTTP session's
memory, issue 31)."""

from __future__ import annotations

import pytest

from tests.support import init_params
from trimcp.protocol.connection import Connection
from trimcp.protocol.events import RequestReceived
from trimcp.protocol.lifecycle import Role
from trimcp.types import (
    ClientCapabilities,
    Implementation,
    InitializeResult,
    RootsCapability,
    ServerCapabilities,
    ToolsCapability,
)

RESULT = InitializeResult(
    protocol_version="2025-11-25",
    capabilities=ServerCapabilities(tools=ToolsCapability()),
    server_info=Implementation(name="s", version="1"),
)


def served(client_caps: ClientCapabilities) -> tuple[Connection, Connection]:
    """A client and a server core after a 2025-11-25 handshake."""
    client, server = Connection(Role.CLIENT), Connection(Role.SERVER)
    _, data = client.send_request("initialize", init_params("2025-11-25", client_caps))
    event = server.receive(data)
    assert isinstance(event, RequestReceived)
    client.receive(server.send_result(event.id, RESULT))
    server.receive(client.send_notification("notifications/initialized"))
    return client, server


def test_a_compacted_core_takes_nothing_until_it_is_reopened() -> None:
    client, server = served(ClientCapabilities())
    server.compact()
    _, call = client.send_request("tools/call", {"name": "echo", "arguments": {}})
    # A session that forgot to wake its core fails loudly, not by growing a table.
    with pytest.raises(RuntimeError, match="wake it first"):
        server.receive(call)
    server.reopen()
    event = server.receive(call)
    assert isinstance(event, RequestReceived)
    assert event.method == "tools/call"
    client.receive(server.send_result(event.id, {"content": []}))
    assert client.outbound_in_flight() == []
    # Compacting an idle core again, and reopening an open one, change nothing.
    server.reopen()
    server.compact()
    server.compact()
    server.reopen()
    _, again = client.send_request("tools/call", {"name": "echo", "arguments": {}})
    assert isinstance(server.receive(again), RequestReceived)


def test_sessions_of_one_kind_of_client_share_its_info_and_capabilities() -> None:
    caps = ClientCapabilities(roots=RootsCapability(list_changed=True))
    first = served(caps)[1].negotiated
    second = served(caps)[1].negotiated
    assert first is not None
    assert second is not None
    assert first.client_info is second.client_info
    assert first.client_capabilities is second.client_capabilities
    assert second.client_capabilities.roots == RootsCapability(list_changed=True)
    # Different values are never confused (true is not 1, another name is another client).
    other = served(ClientCapabilities())[1].negotiated
    assert other is not None
    assert other.client_capabilities is not first.client_capabilities
    assert other.client_capabilities.roots is None
