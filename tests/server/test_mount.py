"""app.mount(other, prefix=...): names and URIs prefixed, calls reach the mounted server
with its own context and lifespan (entered once), list changes propagate, completions."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any, Literal

import pytest
import trio
import trio.testing

import trimcp
from tests.server.helpers import ScriptedClient, call_tool, connect, text_of
from trimcp.server import Context, Server
from trimcp.types import PromptReference, ResourceTemplateReference


def make_child(entered: list[str]) -> Server:
    @asynccontextmanager
    async def lifespan(app: Server) -> AsyncIterator[str]:
        entered.append(app.info.name)
        yield f"{app.info.name} pool"

    child = Server("weather", lifespan=lifespan)

    @child.tool()
    def forecast(city: str, ctx: Context) -> str:
        """Tomorrow's weather."""
        return f"sunny in {city} ({ctx.lifespan}, served by {ctx.server.info.name})"

    @child.resource("memo://today")
    def today() -> str:
        return "milk"

    @child.resource("weather://{city}/now")
    def now(city: str) -> str:
        return f"now in {city}"

    @child.prompt()
    def plan(style: Literal["short", "long"]) -> str:
        return f"a {style} plan"

    @child.complete_argument(template="weather://{city}/now", argument="city")
    def cities(value: str) -> list[str]:
        return [c for c in ("paris", "porto") if c.startswith(value)]

    return child


async def test_mounted_items_are_namespaced_and_work(autojump_clock: Any) -> None:
    entered: list[str] = []
    parent = Server("main")

    @parent.tool()
    def ping() -> str:
        return "pong"

    parent.mount(make_child(entered), prefix="wx")
    assert [s.info.name for s in parent.mounted_servers()] == ["weather"]
    async with trimcp.connect_memory(parent) as client:
        assert entered == ["weather"]  # the mounted lifespan, entered with the parent's
        tools = [t.name for t in (await client.list_tools()).tools]
        assert tools == ["ping", "wx_forecast"]
        result = await client.call_tool("wx_forecast", {"city": "Oslo"})
        assert text_of(result) == "sunny in Oslo (weather pool, served by weather)"
        resources = [r.uri for r in (await client.list_resources()).resources]
        assert resources == ["memo://wx/today"]
        read = await client.read_resource("memo://wx/today")
        assert (read.contents[0].uri, read.contents[0].text) == (  # type: ignore[union-attr]
            "memo://wx/today",
            "milk",
        )
        templates = await client.list_resource_templates()
        assert [t.uri_template for t in templates.resource_templates] == ["weather://wx/{city}/now"]
        now = await client.read_resource("weather://wx/lima/now")
        assert now.contents[0].text == "now in lima"  # type: ignore[union-attr]
        assert now.contents[0].uri == "weather://wx/lima/now"
        prompt = await client.get_prompt("wx_plan", {"style": "short"})
        assert prompt.messages[0].content.text == "a short plan"  # type: ignore[union-attr]
        done = await client.complete(PromptReference(name="wx_plan"), "style", "l")
        assert done.completion.values == ["long"]
        done = await client.complete(
            ResourceTemplateReference(uri="weather://wx/{city}/now"), "city", "po"
        )
        assert done.completion.values == ["porto"]
    assert entered == ["weather"]


async def test_lifespans_entered_once_across_sessions(autojump_clock: Any) -> None:
    entered: list[str] = []
    parent = Server("main")
    parent.mount(make_child(entered), prefix="wx")
    async with parent.open_lifespan(), connect(parent) as (a, _), connect(parent) as (b, _):
        assert "weather pool" in text_of(await call_tool(a, "wx_forecast", {"city": "x"}))
        assert "weather pool" in text_of(await call_tool(b, "wx_forecast", {"city": "y"}))
    assert entered == ["weather"]


async def test_changes_on_the_mounted_server_reach_the_parents_clients(
    autojump_clock: Any,
) -> None:
    child = make_child([])
    parent = Server("main")
    parent.mount(child, prefix="wx")
    scripted = ScriptedClient()
    async with connect(parent, scripted) as (client, _):

        @child.tool()
        def wind() -> str:
            return "calm"

        await trio.testing.wait_all_tasks_blocked()
        assert "notifications/tools/list_changed" in scripted.methods()
        assert text_of(await call_tool(client, "wx_wind")) == "calm"
        child.get_tool("forecast").disable()  # type: ignore[union-attr]
        result = await client.send_request("tools/list", {})
        assert [t.name for t in result.tools] == ["wx_wind"]
        child.remove_tool("wind")
        result = await client.send_request("tools/list", {})
        assert result.tools == []


async def test_completers_added_after_mount_are_carried_over(autojump_clock: Any) -> None:
    # Also through two levels of mounting: main <- mid <- weather.
    child = make_child([])
    mid = Server("mid")
    mid.mount(child, prefix="wx")
    parent = Server("main")
    parent.mount(mid, prefix="eu")

    @child.prompt()
    def outfit(weather: str) -> str:
        return f"dress for {weather}"

    @child.complete_argument(prompt="outfit", argument="weather")
    def kinds(value: str) -> list[str]:
        return [k for k in ("rain", "sun") if k.startswith(value)]

    async with trimcp.connect_memory(parent) as client:
        done = await client.complete(PromptReference(name="eu_wx_outfit"), "weather", "r")
        assert done.completion.values == ["rain"]
        done = await client.complete(
            ResourceTemplateReference(uri="weather://eu/wx/{city}/now"), "city", "pa"
        )
        assert done.completion.values == ["paris"]


def test_bad_mounts() -> None:
    parent, child = Server("p"), Server("c")
    with pytest.raises(ValueError, match="prefix"):
        parent.mount(child, prefix="no spaces")
    with pytest.raises(ValueError, match="cycle"):
        parent.mount(parent, prefix="self")
    parent.mount(child, prefix="c")
    with pytest.raises(ValueError, match="cycle"):
        child.mount(parent, prefix="p")


def test_trimcp_run_picks_the_server_that_mounts_the_others() -> None:
    import types

    from trimcp.cli.errors import CliError
    from trimcp.cli.loader import find_server, parse_target

    module = types.ModuleType("composed")
    module.child = Server("child")  # type: ignore[attr-defined]
    module.app = Server("app")  # type: ignore[attr-defined]
    module.app.mount(module.child, prefix="c")
    assert find_server(module, parse_target("composed.py")) is module.app
    module.other = Server("other")  # type: ignore[attr-defined]
    with pytest.raises(CliError, match=r"defines 3 servers \(child, app, other\)"):
        find_server(module, parse_target("composed.py"))


async def test_resource_updates_of_the_mounted_server_reach_subscribers(
    autojump_clock: Any,
) -> None:
    child = make_child([])
    parent = Server("main")
    parent.mount(child, prefix="wx")
    scripted = ScriptedClient()
    async with connect(parent, scripted) as (client, _):
        await client.send_request("resources/subscribe", {"uri": "memo://wx/today"})
        await child.notify_resource_updated("memo://today")
        await trio.testing.wait_all_tasks_blocked()
    updates = [p for m, p in scripted.notifications if m == "notifications/resources/updated"]
    assert [u.uri if hasattr(u, "uri") else u["uri"] for u in updates] == ["memo://wx/today"]


def test_a_mounted_server_is_a_provider_after_the_parents_own() -> None:
    from trimcp.server.mount import Mount

    parent, child = Server("main"), make_child([])
    parent.mount(child, prefix="wx")
    _, mounted = parent.providers
    assert isinstance(mounted, Mount)
    assert [tool.name for tool in mounted.components("tools")] == ["wx_forecast"]
    assert parent.get_tool("wx_forecast") is None  # not one of the parent's registrations


def test_a_name_served_already_is_refused_at_mount_and_the_first_wins_later() -> None:
    parent, child = Server("main"), Server("weather")

    @child.tool()
    def now() -> str:
        return "child"

    @parent.tool("wx_now")
    def taken() -> str:
        return "parent"

    with pytest.raises(ValueError, match="already serves tools named wx_now"):
        parent.mount(child, prefix="wx")
    parent.remove_tool("wx_now")
    parent.mount(child, prefix="wx")
    assert parent.mounted_servers() == [child]


async def test_a_collision_after_mounting_is_served_by_the_parents_own(
    autojump_clock: Any,
) -> None:
    parent, child = Server("main"), Server("weather")

    @child.tool()
    def now() -> str:
        return "child"

    parent.mount(child, prefix="wx")
    parent.add_tool(lambda: "parent", name="wx_now")
    async with trimcp.connect_memory(parent) as client:
        assert [t.name for t in (await client.list_tools()).tools] == ["wx_now"]
        assert text_of(await client.call_tool("wx_now", {})) == "parent"


def test_a_mounted_servers_app_page_declares_mcp_apps_on_the_parent() -> None:
    from trimcp.protocol import apps_ext

    parent, child = Server("main"), Server("weather")
    child.add_ui_resource("ui://weather/map", "<p>map</p>")
    parent.mount(child, prefix="wx")
    assert apps_ext.EXTENSION_ID in (parent.capabilities().extensions or {})
