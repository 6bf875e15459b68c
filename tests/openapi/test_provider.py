"""OpenApiProvider against a REST API served in this Trio run: one tool per operation,
path/query/header/body arguments, API errors as tool errors with the API's message,
credentials from configuration only, bounds on time and bytes."""

from __future__ import annotations

import copy
import json
from collections.abc import AsyncIterator, Hashable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
import trio

import trimcp
from examples.openapi.bookshelf import API_KEY, Bookshelf, serve, spec
from tests.server.test_providers import first_text, request
from trimcp import Server
from trimcp.auth.principal import AuthInfo
from trimcp.server.openapi import OpenApiError, OpenApiProvider, openapi_server
from trimcp.types import CallToolResult

SPEC_TOOLS = [
    "listBooks",
    "createBook",
    "getBook",
    "updateBook",
    "delete_books_bookId",
    "listReviews",
    "addReview",
    "listAuthors",
    "borrowBook",
    "searchCatalog",
    "getLibraryStats",
    "echoHeaders",
]


def with_test_routes(document: dict[str, Any]) -> dict[str, Any]:
    """The document plus operations that misbehave on purpose."""
    document = copy.deepcopy(document)
    ok = {"200": {"description": "OK", "content": {"application/json": {"schema": {}}}}}
    for name in ("slow", "big", "moved", "crash"):
        document["paths"][f"/{name}"] = {"get": {"operationId": name, "responses": ok}}
    document["paths"]["/text"] = {
        "get": {"operationId": "text", "responses": {"200": {"description": "words"}}}
    }
    return document


@asynccontextmanager
async def api(shelf: Bookshelf | None = None) -> AsyncIterator[tuple[Bookshelf, str]]:
    shelf = shelf or Bookshelf()
    async with trio.open_nursery() as nursery:
        url = await nursery.start(serve, shelf)
        yield shelf, url
        nursery.cancel_scope.cancel()


def server_for(url: str, **options: Any) -> Server:
    app = Server("bookshelf")
    app.add_provider(OpenApiProvider(with_test_routes(spec()), base_url=url, **options))
    return app


async def test_one_tool_per_operation_with_its_schemas() -> None:
    async with api() as (_, url), trimcp.connect_memory(server_for(url)) as client:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
        assert list(tools)[: len(SPEC_TOOLS)] == SPEC_TOOLS
        get_book = tools["getBook"]
        assert get_book.description == "Get one book by its id"
        assert get_book.input_schema == {
            "type": "object",
            "properties": {"bookId": {"type": "integer", "description": "the book's id"}},
            "required": ["bookId"],
        }
        output = get_book.output_schema
        assert output is not None
        assert output["properties"]["year"]["type"] == ["integer", "null"]  # 3.0 nullable
        assert get_book.annotations is not None
        assert get_book.annotations.read_only_hint is True
        create = tools["createBook"].input_schema
        # The body's properties are spread; the readOnly id is not asked for.
        assert set(create["properties"]) == {"title", "author", "year", "tags"}
        assert create["required"] == ["title", "author"]
        listed = tools["listBooks"].output_schema
        assert listed is not None
        assert listed["required"] == ["result"]  # an array answer is wrapped


async def test_path_query_header_and_body_arguments_reach_the_api() -> None:
    async with api() as (shelf, url), trimcp.connect_memory(server_for(url)) as client:
        got = await client.call_tool("getBook", {"bookId": 2})
        assert got.structured_content is not None
        assert got.structured_content["title"] == "The Left Hand of Darkness"
        listed = await client.call_tool("listBooks", {"tag": ["classic"], "limit": 5})
        assert listed.structured_content == {"result": [shelf.books[2]]}
        assert shelf.seen[-1][1] == "/books?tag=classic&limit=5"
        created = await client.call_tool(
            "createBook", {"title": "Solaris", "author": "Stanisław Lem", "tags": ["pl"]}
        )
        assert created.structured_content is not None
        assert created.structured_content["id"] == 3
        method, target, headers, body = shelf.seen[-1]
        assert (method, target) == ("POST", "/books")
        assert headers["content-type"] == "application/json"
        assert json.loads(body) == {"title": "Solaris", "author": "Stanisław Lem", "tags": ["pl"]}
        await client.call_tool("addReview", {"bookId": 3, "stars": 5, "text": "cold"})
        reviews = await client.call_tool("listReviews", {"bookId": 3, "X-Locale": "pl"})
        assert reviews.structured_content == {
            "result": [{"locale": "pl", "stars": 5, "text": "cold"}]
        }
        deleted = await client.call_tool("delete_books_bookId", {"bookId": 1})
        assert first_text(deleted) == "HTTP 204 No Content"
        assert 1 not in shelf.books


async def test_api_errors_are_tool_errors_with_the_apis_message() -> None:
    async with api() as (_, url), trimcp.connect_memory(server_for(url)) as client:
        missing = await client.call_tool("getBook", {"bookId": 999})
        assert missing.is_error
        assert (
            first_text(missing)
            == "GET /books/{bookId} failed: HTTP 404 Not Found: no book with id 999"
        )
        bad = await client.call_tool("addReview", {"bookId": 1, "stars": 9})
        assert first_text(bad).endswith("HTTP 400 Bad Request: stars must be 1 to 5")
        await client.call_tool("borrowBook", {"bookId": 1, "member": "ann"})
        again = await client.call_tool("borrowBook", {"bookId": 1, "member": "bo"})
        assert first_text(again).endswith("HTTP 409 Conflict: book 1 is already on loan")
        crash = await client.call_tool("crash", {})
        assert first_text(crash).endswith(
            "HTTP 500 Internal Server Error: <html><body>Internal Server Error</body></html>"
        )
        moved = await client.call_tool("moved", {})
        assert "redirected to https://elsewhere.example/ (not followed" in first_text(moved)


async def test_bad_arguments_are_refused_before_any_request() -> None:
    async with api() as (shelf, url), trimcp.connect_memory(server_for(url)) as client:
        before = len(shelf.seen)
        missing = await client.call_tool("getBook", {})
        assert first_text(missing) == "Missing required argument(s): bookId"
        unknown = await client.call_tool("getBook", {"bookId": 1, "bookid": 2})
        assert first_text(unknown).startswith("Unknown argument(s) 'bookid'; getBook takes bookId")
        shaped = await client.call_tool("getBook", {"bookId": {"a": {"b": 1}}})
        assert shaped.is_error
        assert len(shelf.seen) == before


async def test_credentials_come_from_configuration_never_from_the_caller() -> None:
    async with api() as (_, url):
        keyed = server_for(url, headers={"X-Api-Key": API_KEY}, bearer_token="api-token")
        caller = AuthInfo(subject="u", token="the-callers-own-token")
        stats = await request(keyed, "tools/call", {"name": "getLibraryStats"}, caller)
        assert stats.result.structured_content == {"books": 2, "authors": 2}
        echoed = await request(keyed, "tools/call", {"name": "echoHeaders"}, caller)
        seen = echoed.result.structured_content
        assert seen["authorization"] == "Bearer api-token"
        assert "the-callers-own-token" not in json.dumps(seen)
        # An argument cannot replace a configured credential.
        plain = server_for(url)
        refused = await request(plain, "tools/call", {"name": "getLibraryStats"}, caller)
        assert first_text(refused.result).endswith(
            "HTTP 401 Unauthorized: missing or wrong X-Api-Key"
        )


async def test_the_callers_token_is_forwarded_only_when_asked() -> None:
    async with api() as (_, url):
        app = server_for(url, forward_caller_token=True, bearer_token="api-token")
        caller: Hashable = AuthInfo(subject="u", token="the-callers-own-token")
        echoed = await request(app, "tools/call", {"name": "echoHeaders"}, caller)
        assert echoed.result.structured_content["authorization"] == "Bearer the-callers-own-token"


async def test_a_call_is_bounded_in_time(autojump_clock: trio.abc.Clock) -> None:
    async with api() as (shelf, url), trimcp.connect_memory(server_for(url, timeout=5)) as client:
        started = trio.current_time()
        slow = await client.call_tool("slow", {})
        assert trio.current_time() - started == pytest.approx(5)
        assert slow.is_error
        assert first_text(slow) == f"GET /slow: no answer from {url}/slow within 5 s"
        shelf.release_slow.set()


async def test_a_cancelled_call_stops_waiting_for_the_api(autojump_clock: trio.abc.Clock) -> None:
    async with api() as (shelf, url), trimcp.connect_memory(server_for(url)) as client:
        with trio.move_on_after(2):
            await client.call_tool("slow", {})
        assert shelf.seen[-1][1] == "/slow"
        after = await client.call_tool("listAuthors", {})  # the server is not stuck
        assert after.structured_content == {"result": ["Frank Herbert", "Ursula K. Le Guin"]}
        shelf.release_slow.set()


async def test_answers_are_bounded_in_bytes() -> None:
    async with api() as (_, url):
        app = server_for(url, max_response_bytes=1000)
        async with trimcp.connect_memory(app) as client:
            big = await client.call_tool("big", {})
            assert first_text(big) == (
                "GET /big failed: the response body is larger than the 1000-byte limit"
            )


async def test_a_text_answer_without_an_output_schema_is_text() -> None:
    async with api() as (_, url), trimcp.connect_memory(server_for(url)) as client:
        text = await client.call_tool("text", {})
        assert first_text(text) == "plain words"
        assert text.structured_content is None


async def test_connections_are_reused_while_the_server_serves() -> None:
    async with api() as (shelf, url):
        app = server_for(url)
        async with trimcp.connect_memory(app) as client:
            for _ in range(3):
                await client.call_tool("listAuthors", {})
        assert shelf.connections == 1
        # Outside a lifespan a call works too, on a connection of its own.
        outside = await request(app, "tools/call", {"name": "listAuthors"})
        assert isinstance(outside.result, CallToolResult)
        assert not outside.result.is_error
        assert shelf.connections == 2


async def test_a_relative_server_url_resolves_against_the_documents_url() -> None:
    class Documented(Bookshelf):
        """The API, serving its own document (whose server URL is relative)."""

        async def route(
            self, method: str, target: str, headers: dict[str, str], body: bytes
        ) -> tuple[int, Any, dict[str, str]]:
            if target == "/openapi.json":
                return 200, spec(base_url="/"), {}
            return await super().route(method, target, headers, body)

    async with api(Documented()) as (_, url):
        provider = await OpenApiProvider.from_url(f"{url}/openapi.json")
        assert provider.base_url == url
        assert provider.title == "Bookshelf"


async def test_openapi_server_names_itself_after_the_document(tmp_path: Path) -> None:
    path = tmp_path / "bookshelf.json"
    path.write_text(json.dumps(spec(base_url="http://127.0.0.1:9")))
    app = await openapi_server(str(path), tool_search=True, environ={"TRIMCP_OPENAPI_TOKEN": "t0k"})
    assert (app.info.name, app.info.version) == ("Bookshelf", "2.1.0")
    assert app.instructions == "A library's shelf: books, reviews, authors and loans."
    assert [type(t).__name__ for t in app.transforms] == ["ToolSearch"]


def test_a_document_that_cannot_be_served_is_refused_at_once(tmp_path: Path) -> None:
    with pytest.raises(OpenApiError, match="names no server: give the API's URL"):
        OpenApiProvider(spec())
    with pytest.raises(OpenApiError, match="not an absolute http"):
        OpenApiProvider(spec(base_url="/v1"))
    with pytest.raises(OpenApiError, match="cannot read"):
        OpenApiProvider.from_file(tmp_path / "missing.json")
    (tmp_path / "bad.json").write_text("{not json")
    with pytest.raises(OpenApiError, match=r"bad\.json is not valid JSON"):
        OpenApiProvider.from_file(tmp_path / "bad.json")
    with pytest.raises(OpenApiError, match="invalid header name"):
        OpenApiProvider(spec(base_url="http://x"), headers={"bad name": "v"})
    with pytest.raises(OpenApiError, match="one line of text"):
        OpenApiProvider(spec(base_url="http://x"), headers={"X-Key": "a\r\nInjected: 1"})
