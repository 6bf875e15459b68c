"""Resources: static and templated reads, -32002, subscriptions and updates, list changes."""

from __future__ import annotations

import base64
import enum
import functools
from typing import Any

import pytest
import trio
import trio.testing

from tests.server.helpers import ScriptedClient, connect, wire
from tests.support import RawPeer
from trimcp.errors import INTERNAL_ERROR, INVALID_PARAMS, RESOURCE_NOT_FOUND, McpError
from trimcp.server import Context, Server
from trimcp.session import SessionOptions
from trimcp.transports.memory import memory_transport_pair
from trimcp.types import Annotations, TextResourceContents


class Shape(enum.Enum):
    ROUND = "round"
    SQUARE = "square"


def build_app() -> Server:
    app = Server("resources-test")

    @app.resource(
        "config://app",
        title="App config",
        description="The configuration.",
        mime_type="application/toml",
        size=12,
        annotations=Annotations(audience=["user"], priority=0.5),
    )
    def config() -> str:
        return "debug = true"

    @app.resource("data://logo")
    async def logo() -> bytes:
        return b"\x89PNG"

    @app.resource("data://both")
    def both() -> list[Any]:
        return ["text", b"\x00", TextResourceContents(uri="data://other", text="x")]

    @app.resource("users://{user_id}/profile", mime_type="application/json")
    def profile(user_id: int, ctx: Context) -> dict[str, Any]:
        """A user's profile."""
        return {"id": user_id, "client": ctx.client_info.name if ctx.client_info else None}

    @app.resource("files://{+path}")
    def file(path: str) -> str:
        return f"contents of {path}"

    @app.resource("shapes://{shape}{?size}")
    def shape(shape: Shape, size: int = 1) -> str:
        return f"{shape.value}x{size}"

    @app.resource("broken://thing")
    def broken() -> str:
        raise RuntimeError("disk on fire at /secret/path")

    return app


async def read(client: Any, uri: str) -> Any:
    return wire(await client.send_request("resources/read", {"uri": uri}))


async def test_listing(autojump_clock: Any) -> None:
    async with connect(build_app()) as (client, _):
        resources = wire(await client.send_request("resources/list"))["resources"]
        templates = wire(await client.send_request("resources/templates/list"))
    assert resources[0] == {
        "uri": "config://app",
        "name": "config",
        "title": "App config",
        "description": "The configuration.",
        "mimeType": "application/toml",
        "size": 12,
        "annotations": {"audience": ["user"], "priority": 0.5},
    }
    assert [r["uri"] for r in resources] == [
        "config://app",
        "data://logo",
        "data://both",
        "broken://thing",
    ]
    assert templates["resourceTemplates"][0] == {
        "uriTemplate": "users://{user_id}/profile",
        "name": "profile",
        "description": "A user's profile.",
        "mimeType": "application/json",
    }


async def test_reading(autojump_clock: Any) -> None:
    async with connect(build_app()) as (client, _):
        assert await read(client, "config://app") == {
            "contents": [
                {"uri": "config://app", "text": "debug = true", "mimeType": "application/toml"}
            ]
        }
        assert await read(client, "data://logo") == {
            "contents": [
                {
                    "uri": "data://logo",
                    "blob": base64.b64encode(b"\x89PNG").decode(),
                    "mimeType": "application/octet-stream",
                }
            ]
        }
        both = await read(client, "data://both")
        assert [c.get("text", c.get("blob")) for c in both["contents"]] == ["text", "AA==", "x"]
        assert await read(client, "users://42/profile") == {
            "contents": [
                {
                    "uri": "users://42/profile",
                    "text": '{"id": 42, "client": "test-client"}',
                    "mimeType": "application/json",
                }
            ]
        }
        assert (await read(client, "files://a/b/c.txt"))["contents"][0][
            "text"
        ] == "contents of a/b/c.txt"
        assert (await read(client, "shapes://round?size=3"))["contents"][0]["text"] == "roundx3"
        assert (await read(client, "shapes://square"))["contents"][0]["text"] == "squarex1"


@pytest.mark.parametrize(
    "uri",
    [
        "config://other",
        "users://abc/profile",
        "shapes://triangle",
        "shapes://round?size=x",
        "nothing",
    ],
)
async def test_unknown_uri_is_32002(autojump_clock: Any, uri: str) -> None:
    async with connect(build_app()) as (client, _):
        with pytest.raises(McpError) as info:
            await read(client, uri)
    assert info.value.code == RESOURCE_NOT_FOUND
    assert info.value.data == {"uri": uri}


async def test_a_failing_resource_is_32603_without_details(autojump_clock: Any) -> None:
    async with connect(build_app()) as (client, _):
        with pytest.raises(McpError) as info:
            await read(client, "broken://thing")
    assert info.value.code == INTERNAL_ERROR
    assert "secret" not in info.value.message


async def test_updates_reach_exactly_the_subscribed_sessions(autojump_clock: Any) -> None:
    app = build_app()
    one, two, three = ScriptedClient(), ScriptedClient(), ScriptedClient()
    async with (
        connect(app, one) as (client_one, _),
        connect(app, two) as (client_two, _),
        connect(app, three) as (_, _),
    ):
        await client_one.send_request("resources/subscribe", {"uri": "config://app"})
        await client_two.send_request("resources/subscribe", {"uri": "users://7/profile"})
        await client_two.send_request("resources/subscribe", {"uri": "config://app"})
        await client_two.send_request("resources/unsubscribe", {"uri": "config://app"})
        await client_two.send_request("resources/unsubscribe", {"uri": "never://subscribed"})
        await app.notify_resource_updated("config://app")
        await app.notify_resource_updated("users://7/profile")
        await app.notify_resource_updated("users://8/profile")
        await trio.testing.wait_all_tasks_blocked()
        assert [(m, wire(p)) for m, p in one.notifications] == [
            ("notifications/resources/updated", {"uri": "config://app"})
        ]
        assert [(m, wire(p)) for m, p in two.notifications] == [
            ("notifications/resources/updated", {"uri": "users://7/profile"})
        ]
        assert three.notifications == []
        with pytest.raises(McpError) as info:
            await client_one.send_request("resources/subscribe", {"uri": "config://nope"})
        assert info.value.code == RESOURCE_NOT_FOUND


async def test_an_update_for_a_closed_session_is_skipped(autojump_clock: Any) -> None:
    app = build_app()
    alive = ScriptedClient()
    async with connect(app, alive) as (client, _):
        await client.send_request("resources/subscribe", {"uri": "config://app"})
        async with connect(app) as (gone, _):
            await gone.send_request("resources/subscribe", {"uri": "config://app"})
        await app.notify_resource_updated("config://app")
        await trio.testing.wait_all_tasks_blocked()
        assert alive.methods() == ["notifications/resources/updated"]


async def test_a_slow_session_does_not_hold_up_the_others(autojump_clock: Any) -> None:
    app = Server("slow", notify_timeout=1.0)

    @app.resource("a://x")
    def x() -> str:
        return "x"

    fast = ScriptedClient()
    # The stuck client: a raw peer that stops reading, with the smallest buffers.
    peer_end, server_end = memory_transport_pair(max_buffered=1)
    options = SessionOptions(outbox_size=1)
    async with trio.open_nursery() as nursery, connect(app, fast) as (client, _):
        await nursery.start(functools.partial(app.serve_session, server_end, options=options))
        stuck = RawPeer(peer_end)
        await stuck.initialize()
        await stuck.request(1, "resources/subscribe", {"uri": "a://x"})
        await client.send_request("resources/subscribe", {"uri": "a://x"})
        start = trio.current_time()
        # The peer's buffer holds one, the writer one in hand, the outbox one; the fourth
        # must wait, and gives up after notify_timeout.
        for _ in range(4):
            await app.notify_resource_updated("a://x")
        assert trio.current_time() - start == 1.0  # virtual time: one notify_timeout
        await trio.testing.wait_all_tasks_blocked()
        assert fast.methods() == ["notifications/resources/updated"] * 4
        await peer_end.aclose()


async def test_too_many_subscriptions(autojump_clock: Any) -> None:
    app = Server("limits", max_subscriptions=2)

    @app.resource("n://{n}")
    def n(n: int) -> str:
        return str(n)

    async with connect(app) as (client, _):
        for uri in ("n://1", "n://2", "n://2"):
            await client.send_request("resources/subscribe", {"uri": uri})
        with pytest.raises(McpError) as info:
            await client.send_request("resources/subscribe", {"uri": "n://3"})
    assert info.value.code == INVALID_PARAMS


async def test_resources_change_at_runtime(autojump_clock: Any) -> None:
    app = build_app()
    recorder = ScriptedClient()
    async with connect(app, recorder) as (client, _):

        def later() -> str:
            return "later"

        def later_x(x: str) -> str:
            return x

        handle = app.add_resource(later, "later://one")
        app.add_resource(later_x, "later://{x}")
        await trio.testing.wait_all_tasks_blocked()
        assert recorder.methods() == ["notifications/resources/list_changed"]
        assert (await read(client, "later://one"))["contents"][0]["text"] == "later"
        handle.remove()
        app.remove_resource("later://{x}")
        await trio.testing.wait_all_tasks_blocked()
        with pytest.raises(McpError):
            await read(client, "later://one")
        assert recorder.methods() == ["notifications/resources/list_changed"] * 2


def test_registration_errors() -> None:
    app = Server("bad")
    with pytest.raises(TypeError, match="no parameter for id"):
        app.resource("x://{id}")(lambda: "x")
    with pytest.raises(TypeError, match="are not template variables"):

        @app.resource("x://{id}")
        def extra(id: str, other: str) -> str:
            return id

    with pytest.raises(TypeError, match="template"):

        @app.resource("x://static")
        def takes(id: str) -> str:
            return id

    with pytest.raises(ValueError, match="no scheme"):
        app.resource("relative/path")(lambda: "x")
    with pytest.raises(ValueError, match="unclosed '\\{'"):
        app.resource("x://{unclosed")(lambda unclosed: "x")
    with pytest.raises(TypeError, match="Cannot take"):

        @app.resource("x://{when}")
        def date(when: dict[str, int]) -> str:
            return ""
