"""Listings: one page at a time, the iterators over every page, and servers whose cursors loop."""

from __future__ import annotations

import argparse
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from tests.client.helpers import RecordingServer
from trimcp.client import Client, PageIterator, PaginationError, connect_memory
from trimcp.session import RequestContext
from trimcp.types import (
    ListPromptsResult,
    ListResourcesResult,
    ListResourceTemplatesResult,
    ListToolsResult,
    Prompt,
    Resource,
    ResourceTemplate,
    Tool,
)


def _tool(name: str) -> Tool:
    return Tool(name=name, input_schema={"type": "object"})


def _resource(name: str) -> Resource:
    return Resource(uri=f"file:///{name}", name=name)


def _template(name: str) -> ResourceTemplate:
    return ResourceTemplate(uri_template=f"file:///{name}/{{x}}", name=name)


def _prompt(name: str) -> Prompt:
    return Prompt(name=name)


# method, result builder, item builder, the client's iterator
LISTINGS: list[tuple[str, Callable[..., Any], Callable[[str], Any], Callable[..., Any]]] = [
    (
        "tools/list",
        lambda items, cursor: ListToolsResult(tools=items, next_cursor=cursor),
        _tool,
        Client.iter_tools,
    ),
    (
        "resources/list",
        lambda items, cursor: ListResourcesResult(resources=items, next_cursor=cursor),
        _resource,
        Client.iter_resources,
    ),
    (
        "resources/templates/list",
        lambda items, cursor: ListResourceTemplatesResult(
            resource_templates=items, next_cursor=cursor
        ),
        _template,
        Client.iter_resource_templates,
    ),
    (
        "prompts/list",
        lambda items, cursor: ListPromptsResult(prompts=items, next_cursor=cursor),
        _prompt,
        Client.iter_prompts,
    ),
]
IDS = [listing[0] for listing in LISTINGS]


async def collect(items: AsyncIterator[Any], names: list[str]) -> None:
    async for item in items:
        names.append(item.name)


def paged_server(
    method: str, build: Callable[..., Any], item: Callable[[str], Any], pages: int
) -> RecordingServer:
    """Pages "p0".."p{pages-1}", two items each; the cursor is the next page's name."""
    server = RecordingServer()

    @server.request_handler(method)
    async def listing(ctx: RequestContext) -> Any:
        index = int(ctx.params.cursor[1:]) if ctx.params.cursor else 0
        cursor = f"p{index + 1}" if index + 1 < pages else None
        return build([item(f"i{index}a"), item(f"i{index}b")], cursor)

    return server


@pytest.mark.parametrize(("method", "build", "item", "iterate"), LISTINGS, ids=IDS)
async def test_iterators_fetch_every_page(
    method: str, build: Callable[..., Any], item: Callable[[str], Any], iterate: Any
) -> None:
    server = paged_server(method, build, item, pages=3)
    async with connect_memory(server) as client:
        pages = iterate(client)
        names = [x.name async for x in pages]
        assert pages.pages == 3
    assert names == ["i0a", "i0b", "i1a", "i1b", "i2a", "i2b"]
    assert [p.cursor for p in server.params_of(method)] == [None, "p1", "p2"]


async def test_list_methods_return_one_page_and_pass_the_cursor() -> None:
    server = paged_server("tools/list", LISTINGS[0][1], _tool, pages=3)
    async with connect_memory(server) as client:
        first = await client.list_tools()
        second = await client.list_tools(first.next_cursor)
    assert [t.name for t in first.tools] == ["i0a", "i0b"]
    assert first.next_cursor == "p1"
    assert [t.name for t in second.tools] == ["i1a", "i1b"]


@pytest.mark.parametrize(("method", "build", "item", "iterate"), LISTINGS, ids=IDS)
async def test_a_repeated_cursor_stops_the_iterator(
    method: str, build: Callable[..., Any], item: Callable[[str], Any], iterate: Any
) -> None:
    # The server sends "a", then "b", then "a" again: a loop that would never end.
    server = RecordingServer()
    cursors = {None: "a", "a": "b", "b": "a"}

    @server.request_handler(method)
    async def listing(ctx: RequestContext) -> Any:
        cursor = ctx.params.cursor
        return build([item(f"after-{cursor}")], cursors[cursor])

    seen: list[str] = []
    async with connect_memory(server) as client:
        with pytest.raises(PaginationError, match="repeated the cursor 'a'") as info:
            await collect(iterate(client), seen)
    assert seen == ["after-None", "after-a", "after-b"]  # every page received is yielded
    assert info.value.pages == 3
    assert len(server.params_of(method)) == 3


async def test_a_server_that_keeps_repeating_one_cursor_is_stopped_at_once() -> None:
    server = RecordingServer()

    @server.request_handler("tools/list")
    async def listing(ctx: RequestContext) -> ListToolsResult:
        return ListToolsResult(tools=[_tool("t")], next_cursor="same")

    async with connect_memory(server) as client:
        with pytest.raises(PaginationError):
            [t async for t in client.iter_tools()]
    assert len(server.params_of("tools/list")) == 2


@pytest.mark.parametrize("max_pages", [1, 5])
async def test_an_endless_listing_stops_at_max_pages(max_pages: int) -> None:
    server = RecordingServer()

    @server.request_handler("prompts/list")
    async def listing(ctx: RequestContext) -> ListPromptsResult:
        n = len(server.params_of("prompts/list"))
        return ListPromptsResult(prompts=[_prompt(f"p{n}")], next_cursor=f"c{n}")

    async with connect_memory(server, max_pages=max_pages) as client:
        names: list[str] = []
        with pytest.raises(PaginationError, match=f"within {max_pages} pages"):
            await collect(client.iter_prompts(), names)
        assert len(names) == max_pages
        # A per-call limit overrides the client's; zero is refused, not read as "default".
        with pytest.raises(PaginationError):
            [p async for p in client.iter_prompts(max_pages=max_pages + 2)]
        with pytest.raises(ValueError, match="max_pages"):
            client.iter_prompts(max_pages=0)
    assert len(server.params_of("prompts/list")) == max_pages + max_pages + 2


@pytest.mark.parametrize(("method", "build", "item", "iterate"), LISTINGS, ids=IDS)
async def test_trimcp_list_stops_at_the_page_bound_too(
    method: str, build: Callable[..., Any], item: Callable[[str], Any], iterate: Any
) -> None:
    """The audit of every client listing: ``trimcp list KIND`` walks the bounded iterators
    (``trimcp skills list``: tests/server/test_skills.py)."""
    from trimcp.cli.client import cmd_list

    server = RecordingServer()

    @server.request_handler(method)
    async def listing(ctx: RequestContext) -> Any:
        n = len(server.params_of(method))
        return build([item(f"i{n}")], f"c{n}")

    kind = {"tools/list": "tools", "resources/list": "resources", "prompts/list": "prompts"}
    args = argparse.Namespace(kind=kind.get(method, "templates"), json=True)
    async with connect_memory(server, max_pages=7) as client:
        with pytest.raises(PaginationError, match="within 7 pages"):
            await cmd_list(client, args)
    assert len(server.params_of(method)) == 7


async def test_empty_pages_are_skipped() -> None:
    server = RecordingServer()

    @server.request_handler("tools/list")
    async def listing(ctx: RequestContext) -> ListToolsResult:
        if ctx.params.cursor is None:
            return ListToolsResult(tools=[], next_cursor="next")
        return ListToolsResult(tools=[_tool("last")])

    async with connect_memory(server) as client:
        assert [t.name async for t in client.iter_tools()] == ["last"]


def test_page_iterator_refuses_a_zero_limit() -> None:
    async def fetch(cursor: str | None) -> tuple[list[int], str | None]:
        raise AssertionError("not called")

    with pytest.raises(ValueError, match="max_pages"):
        PageIterator("x", fetch, 0)
    with pytest.raises(ValueError, match="max_pages"):
        Client(max_pages=0)
