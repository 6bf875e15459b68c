"""The handshake, version and capability negotiation, in both roles."""

from __future__ import annotations

from typing import Any

import pytest
import trio

from tests.support import NullClient, RawPeer, init_params, make_server, raw_client, session_pair
from trimcp.errors import INVALID_REQUEST, METHOD_NOT_FOUND, LocalProtocolError, McpError
from trimcp.protocol.lifecycle import Role, State
from trimcp.session import open_session
from trimcp.transports.memory import memory_transport_pair
from trimcp.types import ServerCapabilities

REVISIONS = ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"]


@pytest.mark.parametrize("version", REVISIONS)
async def test_handshake_agrees_on_the_clients_version(autojump_clock: Any, version: str) -> None:
    async with session_pair(make_server(), version=version) as (client, server):
        assert client.negotiated is not None
        assert server.negotiated is not None
        assert client.negotiated.protocol_version == version
        assert server.negotiated == client.negotiated
        assert client.state is State.OPERATING
        assert server.state is State.OPERATING
        await trio.testing.wait_all_tasks_blocked()
        assert server.peer_initialized


async def test_unknown_version_gets_our_latest(autojump_clock: Any) -> None:
    async with raw_client(make_server(), initialize=False) as (peer, _session):
        reply = await peer.initialize("1999-01-01")
        assert reply["result"]["protocolVersion"] == "2025-11-25"
        assert reply["result"]["serverInfo"] == {"name": "test-server", "version": "1.0.0"}


async def test_client_refuses_a_version_it_does_not_support(autojump_clock: Any) -> None:
    client_end, raw_end = memory_transport_pair()
    peer = RawPeer(raw_end)
    async with open_session(client_end, role=Role.CLIENT, handler=NullClient()) as client:
        async with trio.open_nursery() as nursery:

            async def fake_server() -> None:
                request = await peer.receive()
                await peer.send(
                    {
                        "jsonrpc": "2.0",
                        "id": request["id"],
                        "result": {
                            "protocolVersion": "1999-01-01",
                            "capabilities": {},
                            "serverInfo": {"name": "old", "version": "0"},
                        },
                    }
                )

            nursery.start_soon(fake_server)
            with pytest.raises(McpError, match="1999-01-01"):
                await client.initialize(init_params())
        assert client.negotiated is None
        await raw_end.aclose()


async def test_requests_before_initialize_are_refused_but_ping_works(autojump_clock: Any) -> None:
    async with raw_client(make_server(), initialize=False) as (peer, _session):
        assert (await peer.request(1, "ping")) == {"jsonrpc": "2.0", "id": 1, "result": {}}
        reply = await peer.request(2, "tools/list")
        assert reply["error"]["code"] == INVALID_REQUEST
        assert "initialization" in reply["error"]["message"]


async def test_second_initialize_is_refused_and_state_kept(autojump_clock: Any) -> None:
    async with raw_client(make_server(), version="2025-03-26") as (peer, session):
        reply = await peer.request(
            5,
            "initialize",
            {
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "clientInfo": {"name": "again", "version": "1"},
            },
        )
        assert reply["error"]["code"] == INVALID_REQUEST
        assert session.negotiated is not None
        assert session.negotiated.protocol_version == "2025-03-26"
        assert session.negotiated.client_info is not None
        assert session.negotiated.client_info.name == "raw"


async def test_client_cannot_call_what_the_server_did_not_declare(autojump_clock: Any) -> None:
    server = make_server(capabilities=ServerCapabilities())
    async with session_pair(server) as (client, _server):
        with pytest.raises(LocalProtocolError, match="tools"):
            await client.send_request("tools/list")


async def test_server_refuses_methods_for_undeclared_capabilities(autojump_clock: Any) -> None:
    server = make_server(capabilities=ServerCapabilities())
    async with raw_client(server) as (peer, _session):
        reply = await peer.request(1, "prompts/list")
        assert reply["error"]["code"] == METHOD_NOT_FOUND
        reply = await peer.request(2, "sampling/createMessage", {"messages": [], "maxTokens": 5})
        assert reply["error"]["code"] == METHOD_NOT_FOUND  # a server never handles this


async def test_client_cannot_send_requests_before_initialize(autojump_clock: Any) -> None:
    async with session_pair(make_server(), initialize=False) as (client, _server):
        with pytest.raises(LocalProtocolError):
            await client.send_request("tools/list")
        await client.ping()  # allowed


async def test_unknown_method_is_method_not_found(autojump_clock: Any) -> None:
    async with session_pair(make_server()) as (client, _server):
        with pytest.raises(McpError) as info:
            await client.send_request("x/custom", {"a": 1})
        assert info.value.code == METHOD_NOT_FOUND
