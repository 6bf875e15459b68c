"""The Server as a whole: the handshake, unknown methods, pagination, who hears about changes,
and sessions served without a delivery task."""

from __future__ import annotations

import functools
from typing import Any

import pytest
import trio
import trio.testing

from tests.server.helpers import ScriptedClient, connect, wire
from tests.support import RawPeer, raw_client, session_pair
from trimcp.errors import INVALID_PARAMS, METHOD_NOT_FOUND, McpError
from trimcp.server import Server
from trimcp.transports.memory import memory_transport_pair


def full_app(page_size: int | None = None) -> Server:
    app = Server(
        "full",
        "2.0.0",
        title="Full server",
        description="Has everything",
        website_url="https://example.com",
        icons=[{"src": "https://example.com/icon.png"}],
        instructions="Use the tools.",
        page_size=page_size,
    )
    for n in range(5):
        app.add_tool(lambda: "x", name=f"tool{n}")
        app.add_prompt(lambda: "x", name=f"prompt{n}")
        app.add_resource(lambda: "x", f"res://{n}", name=f"res{n}")
        app.add_resource(lambda v: v, f"tpl{n}://{{v}}", name=f"tpl{n}")
    return app


async def test_initialize_declares_what_is_registered(autojump_clock: Any) -> None:
    async with raw_client(full_app(), initialize=False) as (peer, _):
        reply = await peer.initialize()
    assert reply["result"] == {
        "protocolVersion": "2025-11-25",
        "capabilities": {
            "tools": {"listChanged": True},
            "resources": {"subscribe": True, "listChanged": True},
            "prompts": {"listChanged": True},
            "completions": {},
            "logging": {},
        },
        "serverInfo": {
            "name": "full",
            "version": "2.0.0",
            "title": "Full server",
            "description": "Has everything",
            "icons": [{"src": "https://example.com/icon.png"}],
            "websiteUrl": "https://example.com",
        },
        "instructions": "Use the tools.",
    }


async def test_an_empty_server_declares_only_logging(autojump_clock: Any) -> None:
    async with raw_client(Server("empty"), initialize=False) as (peer, _):
        reply = await peer.initialize("2025-03-26")
        assert reply["result"]["capabilities"] == {"logging": {}}
        assert reply["result"]["protocolVersion"] == "2025-03-26"
        # Not declared, so the protocol core refuses it before the server sees it.
        assert (await peer.request(1, "tools/list"))["error"]["code"] == METHOD_NOT_FOUND


async def test_unknown_methods_are_32601(autojump_clock: Any) -> None:
    async with raw_client(full_app()) as (peer, _):
        reply = await peer.request(1, "tools/frobnicate")
        assert reply["error"]["code"] == METHOD_NOT_FOUND
        reply = await peer.request(2, "tasks/list")
        assert reply["error"]["code"] == METHOD_NOT_FOUND


@pytest.mark.parametrize(
    ("method", "field"),
    [
        ("tools/list", "tools"),
        ("prompts/list", "prompts"),
        ("resources/list", "resources"),
        ("resources/templates/list", "resourceTemplates"),
    ],
)
async def test_every_list_pages(autojump_clock: Any, method: str, field: str) -> None:
    async with connect(full_app(page_size=2)) as (client, _):
        pages: list[list[Any]] = []
        cursor: str | None = None
        while True:
            result = wire(await client.send_request(method, {"cursor": cursor} if cursor else {}))
            pages.append(result[field])
            cursor = result.get("nextCursor")
            if cursor is None:
                break
        with pytest.raises(McpError) as info:
            await client.send_request(method, {"cursor": "not-a-cursor"})
    assert [len(page) for page in pages] == [2, 2, 1]
    assert info.value.code == INVALID_PARAMS


async def test_one_page_without_page_size(autojump_clock: Any) -> None:
    async with connect(full_app()) as (client, _):
        result = wire(await client.send_request("tools/list"))
    assert len(result["tools"]) == 5
    assert "nextCursor" not in result


async def test_list_changed_reaches_initialized_sessions_only(autojump_clock: Any) -> None:
    app = full_app()
    done, second = ScriptedClient(), ScriptedClient()
    async with connect(app, done) as (_, _), connect(app, second) as (_, _):
        # A third session that has not finished its handshake hears nothing.
        peer_end, server_end = memory_transport_pair()
        async with trio.open_nursery() as nursery:
            await nursery.start(functools.partial(app.serve_session, server_end))
            raw = RawPeer(peer_end)
            await raw.request(
                0,
                "initialize",
                {
                    "protocolVersion": "2025-11-25",
                    "capabilities": {},
                    "clientInfo": {"name": "raw", "version": "0"},
                },
            )
            app.add_tool(lambda: "new", name="new_tool")
            app.prompts.entry("prompt0").disable()  # type: ignore[union-attr]
            await trio.testing.wait_all_tasks_blocked()
            assert raw.receive_nowait_all() == []
            await peer_end.aclose()
        for recorder in (done, second):
            assert recorder.methods() == [
                "notifications/tools/list_changed",
                "notifications/prompts/list_changed",
            ]


async def test_a_kind_not_declared_at_initialize_is_not_announced(autojump_clock: Any) -> None:
    app = Server("late")
    recorder = ScriptedClient()
    async with connect(app, recorder):
        app.add_tool(lambda: "x", name="late")
        await trio.testing.wait_all_tasks_blocked()
    assert recorder.notifications == []  # the session has no tools capability to announce


async def test_closed_sessions_are_forgotten(autojump_clock: Any) -> None:
    app = full_app()
    async with connect(app) as (_, server):
        assert [s for s, _ in app._sessions.live()] == [server]
    assert app._sessions.live() == []
    app.add_tool(lambda: "x", name="after")  # nobody to tell; must not fail


async def test_sessions_opened_by_the_bare_engine_get_list_changed_at_once(
    autojump_clock: Any,
) -> None:
    # tests.support.session_pair runs the server with the bare engine (not serve_session):
    # the engine starts the server's attend_session hook, so delivery needs no request.
    app = full_app()
    recorder = ScriptedClient()
    async with session_pair(app, recorder) as (client, _):
        await trio.testing.wait_all_tasks_blocked()  # let notifications/initialized land
        app.remove_tool("tool0")
        await trio.testing.wait_all_tasks_blocked()
        assert recorder.methods() == ["notifications/tools/list_changed"]
        result = await client.send_request("tools/list")
        assert len(result.tools) == 4


async def test_cancelling_serve_session_closes_the_session(autojump_clock: Any) -> None:
    app = full_app()
    peer_end, server_end = memory_transport_pair()
    peer = RawPeer(peer_end)
    async with trio.open_nursery() as nursery:
        session = await nursery.start(functools.partial(app.serve_session, server_end))
        await peer.initialize()
        nursery.cancel_scope.cancel()
    assert session.closed


def test_run_refuses_an_unknown_transport_in_one_line() -> None:
    with pytest.raises(SystemExit, match="unknown transport 'pigeon': use one of stdio, http"):
        full_app().run("pigeon")  # type: ignore[arg-type]


def test_bad_page_size() -> None:
    with pytest.raises(ValueError, match="page_size must be at least 1"):
        Server("x", page_size=0)
