"""Hosting the app: ASGI lifespan, root_path mounting, other scopes, serve_http arguments."""

from __future__ import annotations

from typing import Any

import pytest
import trio

from tests.http_server.helpers import WAIT, AsgiClient, init_request, make_server, tool_call
from trimcp.transports.http_server import HttpServerConfig, create_asgi_app, serve_http


async def test_lifespan_starts_and_stops_the_session_manager(
    autojump_clock: trio.abc.Clock,
) -> None:
    app = create_asgi_app(make_server())
    to_app_send, to_app = trio.open_memory_channel[dict[str, Any]](4)
    from_app_send, from_app = trio.open_memory_channel[dict[str, Any]](4)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(app, {"type": "lifespan"}, to_app.receive, from_app_send.send)
        client = AsgiClient(app, nursery)
        before = await client.post(init_request(), version=None)
        assert before.status == 503  # not started yet
        await to_app_send.send({"type": "lifespan.startup"})
        assert (await from_app.receive())["type"] == "lifespan.startup.complete"
        session_id = await client.initialize()
        get = client.start(
            "GET", headers=[("accept", "text/event-stream"), ("mcp-session-id", session_id)]
        )
        await get.wait_started()
        await to_app_send.send({"type": "lifespan.shutdown"})
        assert (await from_app.receive())["type"] == "lifespan.shutdown.complete"
        await get.wait_finished()  # the session closed, which ended its stream
        assert app.manager.alive == 0
        after = await client.post(tool_call(1, "echo"), session_id=session_id)
        assert after.status in (404, 503)


async def test_lifespan_leaves_an_externally_run_manager_alone(
    autojump_clock: trio.abc.Clock,
) -> None:
    app = create_asgi_app(make_server())
    to_app_send, to_app = trio.open_memory_channel[dict[str, Any]](4)
    from_app_send, from_app = trio.open_memory_channel[dict[str, Any]](4)
    async with trio.open_nursery() as nursery:
        await nursery.start(app.run)
        nursery.start_soon(app, {"type": "lifespan"}, to_app.receive, from_app_send.send)
        await to_app_send.send({"type": "lifespan.startup"})
        assert (await from_app.receive())["type"] == "lifespan.startup.complete"
        await to_app_send.send({"type": "lifespan.shutdown"})
        assert (await from_app.receive())["type"] == "lifespan.shutdown.complete"
        assert app.manager.running  # its owner stops it
        client = AsgiClient(app, nursery)
        assert (await client.post(init_request(), version=None)).status == 200
        await app.shutdown()


async def test_mounted_under_a_root_path(autojump_clock: trio.abc.Clock) -> None:
    app = create_asgi_app(make_server())
    async with trio.open_nursery() as nursery:
        await nursery.start(app.run)
        client = AsgiClient(app, nursery)
        exchange = client.start(
            "POST",
            "/api/mcp",
            headers=[
                ("content-type", "application/json"),
                ("accept", "application/json, text/event-stream"),
            ],
            body=init_request(),
        )
        exchange.scope["root_path"] = "/api"
        await exchange.wait_finished()
        assert exchange.status == 200
        await app.shutdown()


async def test_websocket_scopes_are_closed(autojump_clock: trio.abc.Clock) -> None:
    app = create_asgi_app(make_server())
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return {"type": "websocket.connect"}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    await app({"type": "websocket", "path": "/mcp", "headers": []}, receive, send)
    assert sent == [{"type": "websocket.close", "code": 1008}]


async def test_serve_http_refuses_a_public_bind_without_a_host_allowlist() -> None:
    # Bounded: were the refusal gone, serve_http would serve on every interface until the
    # bound (TooSlowError, not the ValueError), not until the whole suite's time runs out.
    with trio.fail_after(WAIT), pytest.raises(ValueError, match="allowed_hosts"):
        await serve_http(make_server(), host="0.0.0.0", port=0)


def test_config_validation() -> None:
    with pytest.raises(ValueError, match="path"):
        HttpServerConfig(path="mcp")
    with pytest.raises(ValueError, match="max_sessions"):
        HttpServerConfig(max_sessions=0)
    with pytest.raises(TypeError):
        HttpServerConfig(allowed_hosts="localhost")  # a string, not a list of names
