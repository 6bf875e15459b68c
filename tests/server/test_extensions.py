"""The extension seam: a user-defined extension declared by a server and a client, its
typed method served and called, and each side asking whether the peer supports it, in
both eras (a memory pair in 2025-11-25, Streamable HTTP over loopback in 2026-07-28) and
through mount."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any, Final

import attrs
import pytest
import trio

import trimcp
from trimcp.client import Client
from trimcp.errors import INVALID_PARAMS, McpError
from trimcp.protocol.extensions import check_identifier, extension_method
from trimcp.protocol.methods import Method
from trimcp.server.context import Context
from trimcp.server.extensions import Extension
from trimcp.transports.http_server import serve_http

NOTES_ID = "com.example/notes"


@attrs.frozen
class NoteQuery:
    text: str
    limit: int = 10


@attrs.frozen
class NoteHits:
    hits: list[str]
    client_declared: bool


SEARCH: Final[Method[NoteQuery, NoteHits]] = extension_method(
    "notes/search", params=NoteQuery, result=NoteHits
)
NOTES = ["buy milk", "call mum", "milk the cow"]


def notes_extension() -> Extension:
    notes = Extension(NOTES_ID, {"maxResults": 20})

    @notes.method(SEARCH)
    async def search(ctx: Context, params: NoteQuery) -> NoteHits:
        hits = [note for note in NOTES if params.text in note][: params.limit]
        return NoteHits(hits=hits, client_declared=ctx.extension(NOTES_ID) is not None)

    return notes


def notes_server() -> trimcp.Server:
    app = trimcp.Server("notes")
    app.add_extension(notes_extension())
    return app


@asynccontextmanager
async def over_http(app: trimcp.Server, **client: Any) -> AsyncIterator[Client]:
    async with trio.open_nursery() as nursery:
        port = await nursery.start(
            lambda task_status: serve_http(app, port=0, task_status=task_status)
        )
        async with trimcp.connect_http(
            f"http://127.0.0.1:{port}/mcp", mode="2026-07-28", **client
        ) as connected:
            yield connected
        nursery.cancel_scope.cancel()


@asynccontextmanager
async def connected(era: str, app: trimcp.Server, **client: Any) -> AsyncIterator[Client]:
    if era == "2025":
        async with trimcp.connect_memory(app, mode="legacy", **client) as connection:
            assert connection.protocol_version == "2025-11-25"
            yield connection
    else:
        async with over_http(app, **client) as connection:
            assert connection.protocol_version == "2026-07-28"
            yield connection


ERAS = ["2025", "2026"]


@pytest.mark.parametrize("era", ERAS)
async def test_a_declared_extension_is_negotiated_and_its_method_typed(era: str) -> None:
    with trio.fail_after(30):
        async with connected(era, notes_server(), extensions={NOTES_ID: {}}) as client:
            assert client.extension(NOTES_ID) == {"maxResults": 20}
            assert client.extension("com.example/other") is None
            found = await client.request(SEARCH, NoteQuery(text="milk", limit=5))
            assert found == NoteHits(hits=["buy milk", "milk the cow"], client_declared=True)


@pytest.mark.parametrize("era", ERAS)
async def test_the_server_sees_a_client_that_did_not_declare_it(era: str) -> None:
    with trio.fail_after(30):
        async with connected(era, notes_server()) as client:
            found = await client.request(SEARCH, {"text": "call"})
            assert found == NoteHits(hits=["call mum"], client_declared=False)


@pytest.mark.parametrize("era", ERAS)
async def test_params_that_do_not_fit_the_row_are_refused_with_their_path(era: str) -> None:
    with trio.fail_after(30):
        async with connected(era, notes_server()) as client:
            with pytest.raises(McpError) as info:
                await client.request(SEARCH, {"text": "x", "limit": "many"})
            assert info.value.code == INVALID_PARAMS
            assert "notes/search" in info.value.message


@pytest.mark.parametrize("era", ERAS)
async def test_a_server_without_the_extension_declares_nothing(era: str) -> None:
    with trio.fail_after(30):
        async with connected(era, trimcp.Server("plain")) as client:
            assert client.extension(NOTES_ID) is None
            assert client.server_capabilities.extensions is None


@pytest.mark.parametrize("era", ERAS)
async def test_a_mounted_servers_extension_is_declared_and_served_by_the_parent(
    era: str,
) -> None:
    parent = trimcp.Server("parent")
    parent.mount(notes_server(), "n")
    with trio.fail_after(30):
        async with connected(era, parent, extensions={NOTES_ID: {}}) as client:
            assert client.extension(NOTES_ID) == {"maxResults": 20}
            found = await client.request(SEARCH, NoteQuery(text="mum"))
            assert found.hits == ["call mum"]


def test_an_extension_added_after_mounting_reaches_the_parent() -> None:
    parent, child = trimcp.Server("parent"), trimcp.Server("child")
    parent.mount(child, "c")
    child.add_extension(notes_extension())
    assert parent.capabilities().extensions == {NOTES_ID: {"maxResults": 20}}
    assert "notes/search" in parent.methods


def test_conflicts_are_refused_at_registration() -> None:
    app = notes_server()
    with pytest.raises(ValueError, match=r"already declares the extension 'com\.example/notes'"):
        app.add_extension(Extension(NOTES_ID))
    other = Extension("com.example/other")
    other.add_named("notes/search", lambda ctx: _never())
    with pytest.raises(ValueError, match="already answers notes/search"):
        app.add_extension(other)
    with pytest.raises(ValueError, match="core MCP method"):
        extension_method("tools/call")
    with pytest.raises(ValueError, match="vendor-prefix"):
        check_identifier("notes")
    with pytest.raises(ValueError, match="vendor-prefix"):
        Client(extensions={"no-slash": {}})


async def _never() -> None:
    raise AssertionError("not called")


@pytest.mark.parametrize("identifier", [7, None, b"com.example/notes", "notes", ""])
def test_an_identifier_that_is_not_vendor_slash_name_is_refused(identifier: object) -> None:
    with pytest.raises(ValueError, match="An extension identifier is '\\{vendor-prefix\\}"):
        check_identifier(identifier)
    assert check_identifier("com.example/notes") == "com.example/notes"


@pytest.mark.parametrize("name", ["", "tools/call", "initialize"])
def test_an_extension_method_is_never_a_core_one_or_nameless(name: str) -> None:
    with pytest.raises(ValueError, match="is a core MCP method \\(or empty\\)"):
        extension_method(name)


def test_an_extension_answers_no_core_method_and_each_of_its_own_once() -> None:
    from trimcp.protocol.methods import lookup

    extension = Extension("com.example/x")
    core = lookup("tools/call")
    assert core is not None
    with pytest.raises(ValueError, match="'tools/call' is a core method"):
        extension.add_method(core, lambda ctx, params: _never())
    with pytest.raises(ValueError, match="'tools/list' is a core method"):
        extension.add_named("tools/list", lambda ctx: _never())
    extension.add_named("x/go", lambda ctx: _never())
    with pytest.raises(ValueError, match=r"'com\.example/x' already answers 'x/go'"):
        extension.add_named("x/go", lambda ctx: _never())
    assert list(extension.handlers) == ["x/go"]
