"""Providers: a provider written here, in this file only, served end to end beside the
decorated components; merging, pagination, list changes, lifespans, cache hints (2026)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Hashable, Mapping, Sequence
from contextlib import asynccontextmanager
from typing import Any, cast

import pytest
import trio
import trio.testing

import trimcp
from tests.server.helpers import ScriptedClient, call_tool, connect, text_of
from trimcp import CacheHint, Server, StatelessOptions
from trimcp.auth.principal import AuthInfo
from trimcp.protocol import modern
from trimcp.protocol.jsonrpc import Request
from trimcp.protocol.stateless import prepare
from trimcp.server.context import Context
from trimcp.server.prompts import RegisteredPrompt
from trimcp.server.providers import Kind, Provider
from trimcp.server.resources import RegisteredResource, RegisteredTemplate
from trimcp.server.tools import SchemaTool, ToolError
from trimcp.server.transforms import Namespace, Visibility
from trimcp.session.stateless import Answer, run_request
from trimcp.types import Tool


def first_text(result: Any) -> str:
    """The text of the first content block of a tool result."""
    return str(getattr(result.content[0], "text", None))


class Inventory(Provider):
    """A provider of this test file's own: one tool per item of a dict it holds, a prompt,
    a resource and a template; ``restock`` changes its tools and says so."""

    def __init__(self, items: Mapping[str, int]) -> None:
        self.items = dict(items)
        self.opened: list[str] = []
        self._tools = self._make_tools()
        self._prompts = [RegisteredPrompt(self.summary, name="inventory_summary")]
        self._resources = [RegisteredResource("stock://all", self.everything, name="all")]
        self._templates = [RegisteredTemplate("stock://item/{name}", self.one)]

    def _make_tools(self) -> list[SchemaTool]:
        tools = []
        for item in self.items:

            async def count(arguments: dict[str, Any], ctx: Context, item: str = item) -> Any:
                if arguments.get("fail"):
                    raise ToolError(f"{item} cannot be counted today")
                return {"item": item, "count": self.items[item]}

            definition = Tool(
                name=f"count_{item}",
                description=f"How many {item} are in stock",
                input_schema={"type": "object", "properties": {"fail": {"type": "boolean"}}},
                output_schema={"type": "object", "properties": {"count": {"type": "integer"}}},
            )
            tools.append(SchemaTool(definition, count, tags={"stock"}))
        return tools

    def summary(self) -> str:
        return f"{len(self.items)} kinds of item"

    def everything(self) -> str:
        return ", ".join(f"{k}={v}" for k, v in self.items.items())

    def one(self, name: str) -> str:
        return str(self.items[name])

    def components(self, kind: Kind) -> Sequence[Any]:
        lists: dict[str, Sequence[Any]] = {
            "tools": self._tools,
            "prompts": self._prompts,
            "resources": self._resources,
            "templates": self._templates,
        }
        return lists[kind]

    def restock(self, item: str, count: int) -> None:
        self.items[item] = count
        self._tools = self._make_tools()
        self.changed("tools")

    @asynccontextmanager
    async def open_warehouse(self) -> AsyncIterator[None]:
        self.opened.append("open")
        try:
            yield
        finally:
            self.opened.append("closed")

    def lifespan(self) -> Any:
        return self.open_warehouse()


def shop() -> Server:
    app = Server("shop")

    @app.tool()
    def hello() -> str:
        return "hi"

    return app


async def test_a_provider_written_anywhere_is_served_end_to_end(autojump_clock: Any) -> None:
    app = shop()
    inventory = app.add_provider(Inventory({"apples": 3, "pears": 5}))
    async with trimcp.connect_memory(app, mode="legacy") as client:
        tools = [tool.name for tool in (await client.list_tools()).tools]
        assert tools == ["hello", "count_apples", "count_pears"]
        result = await client.call_tool("count_pears", {})
        assert result.structured_content == {"item": "pears", "count": 5}
        failed = await client.call_tool("count_apples", {"fail": True})
        assert failed.is_error
        assert first_text(failed) == "apples cannot be counted today"
        prompt = await client.get_prompt("inventory_summary")
        assert getattr(prompt.messages[0].content, "text", None) == "2 kinds of item"
        read = await client.read_resource("stock://all")
        assert getattr(read.contents[0], "text", None) == "apples=3, pears=5"
        read = await client.read_resource("stock://item/pears")
        assert getattr(read.contents[0], "text", None) == "5"
        templates = await client.list_resource_templates()
        assert [t.uri_template for t in templates.resource_templates] == ["stock://item/{name}"]
        assert client.server_capabilities.prompts is not None
    assert inventory.opened == ["open", "closed"]  # entered with the server's lifespan


async def test_a_providers_change_reaches_2025_sessions(autojump_clock: Any) -> None:
    app = shop()
    inventory = app.add_provider(Inventory({"apples": 3}))
    scripted = ScriptedClient()
    async with connect(app, scripted) as (client, _):
        inventory.restock("plums", 7)
        await trio.testing.wait_all_tasks_blocked()
        assert "notifications/tools/list_changed" in scripted.methods()
        counted = await call_tool(client, "count_plums", {})
        assert text_of(counted) == '{"item": "plums", "count": 7}'


async def test_the_first_provider_to_serve_a_name_wins(autojump_clock: Any) -> None:
    app = Server("shop")

    @app.tool()
    def count_apples() -> str:
        return "decorated"

    app.add_provider(Inventory({"apples": 1, "pears": 2}))
    app.add_provider(Inventory({"pears": 99}))
    async with trimcp.connect_memory(app, mode="legacy") as client:
        names = [tool.name for tool in (await client.list_tools()).tools]
        assert names == ["count_apples", "count_pears"]
        assert first_text(await client.call_tool("count_apples")) == "decorated"
        result = await client.call_tool("count_pears", {})
        assert result.structured_content == {"item": "pears", "count": 2}


async def test_pages_run_across_providers(autojump_clock: Any) -> None:
    app = Server("shop", page_size=2)

    @app.tool()
    def hello() -> str:
        return "hi"

    app.add_provider(Inventory({"a": 1, "b": 2, "c": 3, "d": 4}))
    async with trimcp.connect_memory(app, mode="legacy") as client:
        seen: list[str] = []
        cursor = None
        while True:
            page = await client.list_tools(cursor)
            assert len(page.tools) <= 2
            seen += [tool.name for tool in page.tools]
            cursor = page.next_cursor
            if cursor is None:
                break
    assert seen == ["hello", "count_a", "count_b", "count_c", "count_d"]


def test_adding_a_provider_checks_what_it_is_given() -> None:
    app = shop()
    with pytest.raises(TypeError, match="takes a Provider"):
        app.add_provider(cast(Any, object()))
    inventory = app.add_provider(Inventory({}))
    with pytest.raises(ValueError, match="already a provider"):
        app.add_provider(inventory)
    with pytest.raises(TypeError, match="must be a Transform"):
        app.add_provider(Inventory({}), transforms=[cast(Any, lambda x: x)])
    with pytest.raises(TypeError, match="must be a Transform"):
        app.add_transform(cast(Any, "ToolSearch"))


def test_the_decorated_components_are_the_first_provider() -> None:
    app = shop()
    [local] = app.providers
    assert local.components("tools") == [app.get_tool("hello")]
    assert local.component("tools", "hello") is app.get_tool("hello")
    hello = app.get_tool("hello")
    assert hello is not None
    hello.disable()
    assert local.components("tools") == []
    assert app.transforms == ()


# --- 2026-07-28: cache hints ------------------------------------------------------------


def test_a_bad_cache_hint_is_refused_before_anything_is_registered() -> None:
    # Failed before: the tool was registered, then the TypeError raised, leaving it served.
    app = Server("hints")
    with pytest.raises(TypeError, match="cache must be a CacheHint"):
        app.add_tool(lambda: "x", name="x", cache=60)
    assert app.get_tool("x") is None
    with pytest.raises(TypeError, match="cache must be a CacheHint"):
        app.add_resource(lambda: "r", "memo://r", cache=cast(Any, "public"))
    assert not app.resource_exists("memo://r")


class Outlet:
    async def send_notification(self, method: str, params: Any = None, **_: Any) -> None:
        pass

    async def keepalive(self) -> None:
        pass


async def request(
    app: Server, method: str, params: dict[str, Any], principal: Hashable | None = None
) -> Answer:
    meta = {modern.META_PROTOCOL_VERSION: "2026-07-28", modern.META_CLIENT_CAPABILITIES: {}}
    prepared = prepare(app, Request(id=1, method=method, params={"_meta": meta, **params}))
    return await run_request(app, prepared, Outlet(), principal=principal)


def hinted() -> Server:
    app = Server("hints", stateless=StatelessOptions(list_cache=CacheHint(60_000, "public")))

    @app.tool(cache=CacheHint(5_000, "public"))
    def quick() -> str:
        return "q"

    @app.tool()
    def slow() -> str:
        return "s"

    @app.resource("memo://{day}", cache=CacheHint(1_000, "private"))
    def memo(day: str) -> str:
        return day

    return app


async def test_cache_hints_of_registrations_reach_2026_results() -> None:
    app = hinted()
    listed = (await request(app, "tools/list", {})).result
    assert (listed.ttl_ms, listed.cache_scope) == (5_000, "public")
    templates = (await request(app, "resources/templates/list", {})).result
    assert (templates.ttl_ms, templates.cache_scope) == (1_000, "private")
    read = (await request(app, "resources/read", {"uri": "memo://monday"})).result
    assert (read.ttl_ms, read.cache_scope) == (1_000, "private")


async def test_cache_hints_follow_a_renamed_tool() -> None:
    app = hinted()
    app.add_transform(Namespace("x"))
    listed = (await request(app, "tools/list", {})).result
    assert [tool.name for tool in listed.tools] == ["x_quick", "x_slow"]
    assert (listed.ttl_ms, listed.cache_scope) == (5_000, "public")


async def test_lists_that_depend_on_the_caller_are_cached_private() -> None:
    app = hinted()
    app.add_transform(Visibility(lambda principal, kind, item: item.name != "slow"))
    listed = (await request(app, "tools/list", {})).result
    assert [tool.name for tool in listed.tools] == ["quick"]
    assert listed.cache_scope == "private"


async def test_lists_hidden_by_scope_are_cached_private() -> None:
    # Failed before: a ProtectedResource(hide_unauthorized=True) list was cached "public",
    # so a shared cache could hand one user's list to another.
    app = hinted()

    def rules(method: str, name: str) -> frozenset[str]:
        return frozenset({"admin"}) if name == "slow" else frozenset()

    caller = AuthInfo(subject="u", scopes=frozenset(), rules=rules, hide_unauthorized=True)
    listed = (await request(app, "tools/list", {}, caller)).result
    assert [tool.name for tool in listed.tools] == ["quick"]
    assert listed.cache_scope == "private"
