"""Transforms between providers and the wire: namespace, rename, hide/show, per-caller
visibility and tool search, each through a real server (lists, calls, unknown names)."""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any

import pytest
import trio
import trio.testing

import trimcp
from tests.server.helpers import ScriptedClient, call_tool, connect, text_of
from tests.server.test_providers import Inventory, first_text, request
from trimcp import Server
from trimcp.auth.principal import AuthInfo
from trimcp.errors import INVALID_PARAMS, RESOURCE_NOT_FOUND, McpError
from trimcp.server.transforms import Hide, Namespace, Rename, Show, ToolSearch, Visibility


def catalog() -> Server:
    app = Server("catalog")

    @app.tool(tags={"public"})
    def hello(name: str) -> str:
        """Say hello to someone."""
        return f"hello {name}"

    @app.tool(tags={"admin"})
    def drop_tables(confirm: bool) -> str:
        """Delete every table in the database."""
        return "dropped" if confirm else "kept"

    @app.tool()
    def weather(city: str) -> str:
        """Tomorrow's weather forecast for a city."""
        return f"sunny in {city}"

    @app.prompt()
    def greet() -> str:
        return "greetings"

    @app.resource("memo://today", tags={"admin"})
    def today() -> str:
        return "milk"

    return app


async def tool_names(client: trimcp.Client) -> list[str]:
    return [tool.name for tool in (await client.list_tools()).tools]


async def unknown_tool(client: trimcp.Client, name: str) -> McpError:
    with pytest.raises(McpError) as caught:
        await client.call_tool(name, {})
    assert caught.value.code == INVALID_PARAMS
    assert f"Unknown tool: {name}" in caught.value.message
    return caught.value


# --- namespace and rename ---------------------------------------------------------------


async def test_namespace_prefixes_tools_and_prompts_and_forgets_the_old_names(
    autojump_clock: Any,
) -> None:
    app = catalog()
    app.add_transform(Namespace("cat"))
    async with trimcp.connect_memory(app, mode="legacy") as client:
        assert await tool_names(client) == ["cat_hello", "cat_drop_tables", "cat_weather"]
        result = await client.call_tool("cat_hello", {"name": "ann"})
        assert first_text(result) == "hello ann"
        await unknown_tool(client, "hello")
        prompts = await client.list_prompts()
        assert [p.name for p in prompts.prompts] == ["cat_greet"]
        prompt = await client.get_prompt("cat_greet")
        assert getattr(prompt.messages[0].content, "text", None) == "greetings"
        read = await client.read_resource("memo://today")  # resources keep their URIs
        assert getattr(read.contents[0], "text", None) == "milk"


def test_namespace_refuses_a_bad_prefix() -> None:
    with pytest.raises(ValueError, match="Invalid namespace prefix"):
        Namespace("has space")
    with pytest.raises(ValueError, match="applies to tools and prompts"):
        Namespace("x", kinds=("resources",))


async def test_rename_serves_the_new_name_only(autojump_clock: Any) -> None:
    app = catalog()
    app.add_transform(Rename(tools={"hello": "greet_someone"}))
    async with trimcp.connect_memory(app, mode="legacy") as client:
        assert await tool_names(client) == ["greet_someone", "drop_tables", "weather"]
        result = await client.call_tool("greet_someone", {"name": "bo"})
        assert first_text(result) == "hello bo"
        await unknown_tool(client, "hello")


def test_rename_refuses_bad_or_clashing_names() -> None:
    with pytest.raises(ValueError, match="Invalid tool name"):
        Rename(tools={"a": "not a name"})
    with pytest.raises(ValueError, match="the same name"):
        Rename(tools={"a": "c", "b": "c"})


async def test_transforms_compose_in_the_order_added(autojump_clock: Any) -> None:
    app = catalog()
    app.add_transform(Namespace("cat"))
    app.add_transform(Rename(tools={"cat_weather": "forecast"}))
    async with trimcp.connect_memory(app, mode="legacy") as client:
        assert await tool_names(client) == ["cat_hello", "cat_drop_tables", "forecast"]
        assert first_text(await client.call_tool("forecast", {"city": "Oslo"})) == ("sunny in Oslo")


async def test_a_providers_own_transforms_shape_that_provider_only(autojump_clock: Any) -> None:
    app = catalog()
    app.add_provider(Inventory({"pears": 2}), transforms=[Namespace("inv")])
    async with trimcp.connect_memory(app, mode="legacy") as client:
        names = await tool_names(client)
        assert names == ["hello", "drop_tables", "weather", "inv_count_pears"]
        result = await client.call_tool("inv_count_pears", {})
        assert result.structured_content == {"item": "pears", "count": 2}


# --- hide and show ----------------------------------------------------------------------


async def test_hide_by_name_and_by_tag(autojump_clock: Any) -> None:
    app = catalog()
    app.add_provider(Inventory({"pears": 2}))
    app.add_transform(Hide("weather", tags={"admin", "stock"}))
    async with trimcp.connect_memory(app, mode="legacy") as client:
        assert await tool_names(client) == ["hello"]
        await unknown_tool(client, "drop_tables")
        await unknown_tool(client, "count_pears")  # tagged by its provider
        await unknown_tool(client, "weather")
        with pytest.raises(McpError) as caught:  # the resource tagged admin
            await client.read_resource("memo://today")
        assert caught.value.code == RESOURCE_NOT_FOUND
        prompts = [p.name for p in (await client.list_prompts()).prompts]
        assert prompts == ["greet", "inventory_summary"]


async def test_show_keeps_only_what_it_names_among_its_kinds(autojump_clock: Any) -> None:
    app = catalog()
    app.add_transform(Show(tags={"public"}, kinds=("tools",)))
    async with trimcp.connect_memory(app, mode="legacy") as client:
        assert await tool_names(client) == ["hello"]
        await unknown_tool(client, "weather")
        assert [p.name for p in (await client.list_prompts()).prompts] == ["greet"]


def test_tags_must_be_a_collection_of_strings() -> None:
    app = Server("x")
    with pytest.raises(TypeError, match="tags must be a collection of str"):
        app.add_tool(lambda: "x", name="x", tags="admin")
    assert app.get_tool("x") is None  # refused before registering


# --- per-caller visibility --------------------------------------------------------------


def admin_rules(method: str, name: str) -> frozenset[str]:
    return frozenset({"admin"}) if name in ("drop_tables", "memo://today") else frozenset()


def caller(*scopes: str) -> AuthInfo:
    return AuthInfo(subject="u", scopes=frozenset(scopes), rules=admin_rules)


async def test_visibility_shows_each_caller_what_its_scopes_reach() -> None:
    app = catalog()
    app.add_transform(Visibility())
    user = (await request(app, "tools/list", {}, caller())).result
    assert [tool.name for tool in user.tools] == ["hello", "weather"]
    admin = (await request(app, "tools/list", {}, caller("admin"))).result
    assert [tool.name for tool in admin.tools] == ["hello", "drop_tables", "weather"]
    call = {"name": "drop_tables", "arguments": {"confirm": True}}
    refused = await request(app, "tools/call", call, caller())
    assert refused.error is not None
    assert "Unknown tool" in refused.error.message
    allowed = await request(app, "tools/call", call, caller("admin"))
    assert first_text(allowed.result) == "dropped"
    resources = (await request(app, "resources/list", {}, caller())).result
    assert resources.resources == []
    read = await request(app, "resources/read", {"uri": "memo://today"}, caller())
    assert read.error is not None


async def test_visibility_takes_a_rule_of_its_own() -> None:
    def rule(principal: Hashable | None, kind: str, item: Any) -> bool:
        return kind != "tools" or item.name != "weather" or principal == "meteorologist"

    app = catalog()
    app.add_transform(Visibility(rule))
    anyone = (await request(app, "tools/list", {}, "someone")).result
    assert [tool.name for tool in anyone.tools] == ["hello", "drop_tables"]
    expert = (await request(app, "tools/list", {}, "meteorologist")).result
    assert "weather" in [tool.name for tool in expert.tools]


# --- tool search ------------------------------------------------------------------------


async def test_tool_search_lists_two_tools_and_finds_the_rest_by_words(
    autojump_clock: Any,
) -> None:
    app = catalog()
    app.add_provider(Inventory({"pears": 2, "apples": 3}))
    app.add_transform(ToolSearch(max_results=2))
    async with trimcp.connect_memory(app, mode="legacy") as client:
        assert await tool_names(client) == ["search_tools", "call_tool"]
        found = await client.call_tool("search_tools", {"query": "forecast for Paris"})
        assert [tool["name"] for tool in found.structured_content["tools"]] == ["weather"]
        assert found.structured_content["tools"][0]["inputSchema"]["required"] == ["city"]
        found = await client.call_tool("search_tools", {"query": "how many pears in stock"})
        assert found.structured_content["tools"][0]["name"] == "count_pears"
        called = await client.call_tool(
            "call_tool", {"name": "weather", "arguments": {"city": "Rome"}}
        )
        assert first_text(called) == "sunny in Rome"
        # Not listed, still callable by its own name.
        direct = await client.call_tool("hello", {"name": "cy"})
        assert first_text(direct) == "hello cy"


async def test_tool_search_explains_what_it_cannot_do(autojump_clock: Any) -> None:
    app = catalog()
    app.add_transform(ToolSearch())
    async with trimcp.connect_memory(app, mode="legacy") as client:
        empty = await client.call_tool("search_tools", {"query": "  "})
        assert empty.is_error
        assert "query" in first_text(empty)
        unknown = await client.call_tool("call_tool", {"name": "nope"})
        assert unknown.is_error
        assert "call search_tools to find tools" in first_text(unknown)
        itself = await client.call_tool("call_tool", {"name": "call_tool"})
        assert itself.is_error
        bad = await client.call_tool("call_tool", {"name": "hello", "arguments": [1]})
        assert bad.is_error
        assert "arguments" in first_text(bad)


async def test_tool_search_keeps_named_tools_listed(autojump_clock: Any) -> None:
    app = catalog()
    app.add_transform(ToolSearch(keep={"hello"}, search_tool="find", call_tool="run"))
    async with trimcp.connect_memory(app, mode="legacy") as client:
        assert await tool_names(client) == ["find", "run", "hello"]


async def test_tool_search_respects_the_callers_scopes() -> None:
    app = catalog()
    app.add_transform(ToolSearch())
    query = {"name": "search_tools", "arguments": {"query": "delete every table"}}
    user = (await request(app, "tools/call", query, caller())).result
    assert [t["name"] for t in user.structured_content["tools"]] == []
    admin = (await request(app, "tools/call", query, caller("admin"))).result
    assert [t["name"] for t in admin.structured_content["tools"]] == ["drop_tables"]
    through = {"name": "call_tool", "arguments": {"name": "drop_tables", "arguments": {}}}
    refused = (await request(app, "tools/call", through, caller())).result
    assert refused.is_error
    assert "needs scope admin" in first_text(refused)


async def test_tool_search_keeps_list_changed_and_cache_hints_right(autojump_clock: Any) -> None:
    app = catalog()
    inventory = app.add_provider(Inventory({"pears": 2}))
    app.add_transform(ToolSearch())
    scripted = ScriptedClient()
    async with connect(app, scripted) as (client, _):
        inventory.restock("figs", 1)
        await trio.testing.wait_all_tasks_blocked()
        assert "notifications/tools/list_changed" in scripted.methods()
        found = await call_tool(client, "search_tools", {"query": "figs"})
        assert '"count_figs"' in text_of(found)
    listed = (await request(app, "tools/list", {})).result
    assert [tool.name for tool in listed.tools] == ["search_tools", "call_tool"]
    assert (listed.ttl_ms, listed.cache_scope) == (0, "public")
