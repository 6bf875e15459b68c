"""MCP Apps (io.modelcontextprotocol/ui): tools with app pages, the pages as ui:// resources,
read by trimcp's client, in memory (2025-11-25) and over HTTP (2026-07-28)."""

from __future__ import annotations

import logging
import re
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
import trio

import trimcp
from tests.server.helpers import call_tool, connect
from trimcp import serde
from trimcp.client.apps import RESTRICTIVE_CSP, UiResourceError, page_from, tool_ui
from trimcp.protocol import apps_ext
from trimcp.protocol.apps_ext import Csp, ToolUi, UiResourceMeta
from trimcp.server.apps import app_page, client_renders_apps
from trimcp.server.context import Context
from trimcp.transports.http_server import serve_http
from trimcp.types import (
    ClientCapabilities,
    ReadResourceResult,
    TextResourceContents,
)

PAGE = "ui://dashboard/main"


def dashboard() -> trimcp.Server:
    app = trimcp.Server("dashboard", "1.0")

    @app.ui_resource(
        PAGE,
        title="Dashboard",
        csp={"connect_domains": ["https://api.example.com"]},
        permissions=["clipboard_write"],
        prefers_border=True,
    )
    def page() -> str:
        return app_page(title="Dashboard", body='<p id="count">?</p>')

    @app.tool(ui=PAGE)
    def visitors() -> int:
        """Today's visitor count."""
        return 42

    @app.tool(ui=ToolUi(PAGE, visibility=["app"]))
    def refresh() -> str:
        return "refreshed"

    @app.tool()
    def plain() -> str:
        return "no page"

    return app


@asynccontextmanager
async def over_http(app: trimcp.Server) -> AsyncIterator[trimcp.Client]:
    async with trio.open_nursery() as nursery:
        port = await nursery.start(
            lambda task_status: serve_http(app, port=0, task_status=task_status)
        )
        async with trimcp.connect_http(f"http://127.0.0.1:{port}/mcp") as client:
            yield client
        nursery.cancel_scope.cancel()


def in_memory(app: trimcp.Server) -> AbstractAsyncContextManager[trimcp.Client]:
    return trimcp.connect_memory(app, mode="legacy")


ERAS: list[Any] = [
    pytest.param(in_memory, "2025-11-25", id="memory-2025"),
    pytest.param(over_http, "2026-07-28", id="http-2026"),
]


@pytest.mark.parametrize(("opener", "version"), ERAS)
async def test_a_host_finds_and_reads_the_page_in_both_eras(
    opener: Callable[[trimcp.Server], AbstractAsyncContextManager[trimcp.Client]], version: str
) -> None:
    with trio.fail_after(30):
        async with opener(dashboard()) as client:
            assert client.protocol_version == version
            # Declared where each era declares capabilities (initialize / server/discover).
            extensions = client.server_capabilities.extensions or {}
            assert extensions[apps_ext.EXTENSION_ID] == {}

            tools = {tool.name: tool for tool in (await client.list_tools()).tools}
            assert tool_ui(tools["visitors"]) == ToolUi(PAGE)
            assert tool_ui(tools["refresh"]) == ToolUi(PAGE, visibility=["app"])
            refresh = tool_ui(tools["refresh"])
            assert refresh is not None
            assert refresh.app_callable
            assert not refresh.model_visible
            assert tool_ui(tools["plain"]) is None

            [listed] = (await client.list_resources()).resources
            assert (listed.uri, listed.mime_type) == (PAGE, apps_ext.MIME_TYPE)
            wire_ui = {
                "csp": {"connectDomains": ["https://api.example.com"]},
                "permissions": {"clipboardWrite": {}},
                "prefersBorder": True,
            }
            assert listed.meta == {"ui": wire_ui}

            page = await client.ui_resource("visitors")
            assert page.uri == PAGE
            assert page.tool == ToolUi(PAGE)
            assert page.html.startswith("<!DOCTYPE html>")
            assert '<p id="count">?</p>' in page.html
            assert page.meta.csp == Csp(connect_domains=["https://api.example.com"])
            assert page.meta.permissions == {"clipboard_write"}
            assert page.meta.prefers_border is True
            assert "connect-src 'self' https://api.example.com" in page.csp_header
            assert page.allow_attribute == "clipboard-write"

            # The contents carry _meta.ui too (hosts read it there).
            read = await client.read_resource(PAGE)
            [contents] = read.contents
            assert contents.mime_type == apps_ext.MIME_TYPE
            assert contents.meta == {"ui": wire_ui}

            # The tool still answers with content a host without apps can show.
            result = await client.call_tool("visitors")
            assert result.structured_content == {"result": 42}


async def test_a_server_without_pages_declares_no_extension() -> None:
    app = trimcp.Server("plain")
    app.add_tool(lambda: "x", name="x")
    assert app.capabilities().extensions is None


async def test_a_tool_naming_a_page_declares_the_extension_on_its_own() -> None:
    app = trimcp.Server("split")
    app.add_tool(lambda: "x", name="x", ui="ui://elsewhere/page")
    assert app.capabilities().extensions == {apps_ext.EXTENSION_ID: {}}


async def test_a_page_from_a_file_is_read_at_each_read(tmp_path: Path) -> None:
    path = tmp_path / "page.html"
    path.write_text("<!DOCTYPE html><p>one</p>", encoding="utf-8")
    app = trimcp.Server("files")
    app.add_ui_resource("ui://files/page", path)
    async with trimcp.connect_memory(app) as client:
        assert "one" in (await client.ui_resource("ui://files/page")).html
        path.write_text("<!DOCTYPE html><p>two</p>", encoding="utf-8")
        page = await client.ui_resource("ui://files/page")
        assert "two" in page.html
        # No csp declared: the host's restrictive default applies.
        assert page.meta == UiResourceMeta()
        assert page.csp_header == RESTRICTIVE_CSP


async def test_the_server_sees_whether_its_client_renders_pages() -> None:
    app = trimcp.Server("ask")

    @app.tool()
    def ask(ctx: Context) -> bool:
        return client_renders_apps(ctx)

    host = ClientCapabilities(extensions={apps_ext.EXTENSION_ID: apps_ext.client_settings()})
    other = ClientCapabilities(extensions={apps_ext.EXTENSION_ID: {"mimeTypes": ["text/x"]}})
    for capabilities, expected in ((host, True), (other, False), (None, False)):
        async with connect(app, capabilities=capabilities) as (client, _):
            result = await call_tool(client, "ask")
            assert result.structured_content == {"result": expected}


def test_registration_mistakes_name_the_fix() -> None:
    app = trimcp.Server("bad")
    with pytest.raises(ValueError, match="starts with 'ui://'"):
        app.add_ui_resource("https://x/page", "<p>")
    with pytest.raises(ValueError, match="served as 'text/html;profile=mcp-app'"):
        app.add_ui_resource("ui://x/page", "<p>", mime_type="text/html")
    unknown: Any = ["webcam"]
    with pytest.raises(ValueError, match="Unknown app permission"):
        app.add_ui_resource("ui://x/page", "<p>", permissions=unknown)
    with pytest.raises(ValueError, match="starts with 'ui://'"):
        app.add_tool(lambda: "x", name="x", ui="https://x/page")
    with pytest.raises(ValueError, match="not both"):
        app.add_tool(lambda: "x", name="y", ui="ui://x/page", meta={"ui": {}})
    with pytest.raises(ValueError, match="visibility"):
        ToolUi("ui://x/page", visibility=["agent"])
    # A CSP source that is not an origin is refused at registration, naming it.
    hostile = "https://a.example; report-uri https://evil.example/r"
    with pytest.raises(ValueError, match=re.escape(f"connect_domains: {hostile!r} is not an")):
        app.add_ui_resource("ui://x/page", "<p>", csp={"connect_domains": [hostile]})
    with pytest.raises(ValueError, match="resource_domains: \"'unsafe-eval'\" is not an"):
        app.add_ui_resource("ui://x/page", "<p>", csp=Csp(resource_domains=["'unsafe-eval'"]))
    assert not list(app.resources)


def test_the_host_reads_metadata_tolerantly() -> None:
    # The deprecated flat key still names the page; junk is ignored, not fatal.
    assert ToolUi.from_meta({"ui/resourceUri": "ui://a/b"}) == ToolUi("ui://a/b")
    assert ToolUi.from_meta({"ui": {"resourceUri": "https://a/b"}}) is None
    assert ToolUi.from_meta({"ui": {"resourceUri": "ui://a/b", "visibility": ["x"]}}) == ToolUi(
        "ui://a/b"
    )
    meta = UiResourceMeta.from_meta(
        {"ui": {"csp": {"connectDomains": "https://one", "frameDomains": [3]}, "domain": 7}}
    )
    assert meta == UiResourceMeta(csp=Csp(connect_domains=["https://one"]))


async def test_a_host_drops_declared_sources_that_are_not_origins_naming_them(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # A server that writes its own _meta.ui (not through ui_resource, which refuses it).
    app = trimcp.Server("hostile\r\nserver", "1.0")
    csp = {
        "connectDomains": [
            "https://api.example.com",
            "https://a.example; report-uri https://evil.example/r",
        ],
        "resourceDomains": ["'unsafe-eval'"],
        "frameDomains": ["https://f.example\r\nX-Injected: 1"],
    }

    @app.resource("ui://hostile/page", mime_type=apps_ext.MIME_TYPE)
    def page() -> TextResourceContents:
        return TextResourceContents(
            uri="ui://hostile/page",
            text="<!DOCTYPE html><p>hi</p>",
            mime_type=apps_ext.MIME_TYPE,
            meta={"ui": {"csp": csp}},
        )

    with caplog.at_level(logging.WARNING, logger="trimcp.client"):
        async with trimcp.connect_memory(app) as client:
            rendered = await client.ui_resource("ui://hostile/page")
    # The page still renders, under the policy of its origins only.
    assert rendered.csp_header == Csp(connect_domains=["https://api.example.com"]).header()
    assert "\n" not in rendered.csp_header
    assert rendered.meta.csp is not None
    assert len(rendered.meta.csp.refused) == 3
    [record] = [r for r in caplog.records if "not origins" in r.getMessage()]
    logged = record.getMessage()
    assert "\n" not in logged
    assert "'hostile\\r\\nserver'" in logged  # the server, escaped
    assert "ui://hostile/page" in logged
    assert "connectDomains 'https://a.example; report-uri https://evil.example/r'" in logged
    assert "resourceDomains \"'unsafe-eval'\"" in logged
    assert "frameDomains 'https://f.example\\r\\nX-Injected: 1'" in logged


def test_a_page_served_wrongly_is_reported_with_its_uri() -> None:
    def read(**contents: Any) -> ReadResourceResult:
        return ReadResourceResult(contents=[TextResourceContents(uri=PAGE, text="<p>", **contents)])

    with pytest.raises(UiResourceError, match="MIME type is 'text/html'") as caught:
        page_from(PAGE, read(mime_type="text/html"))
    assert caught.value.uri == PAGE
    with pytest.raises(UiResourceError, match="no contents for this URI"):
        page_from("ui://other/page", read(mime_type=apps_ext.MIME_TYPE))
    blob = serde.structure(
        {"contents": [{"uri": PAGE, "blob": "!!", "mimeType": apps_ext.MIME_TYPE}]},
        ReadResourceResult,
    )
    with pytest.raises(UiResourceError, match="not base64"):
        page_from(PAGE, blob)


async def test_a_tool_without_a_page_is_a_lookup_error() -> None:
    async with trimcp.connect_memory(dashboard()) as client:
        with pytest.raises(LookupError, match="Tool 'plain' has no app page"):
            await client.ui_resource("plain")
        with pytest.raises(LookupError, match="no tool 'missing'"):
            await client.ui_resource("missing")


def test_app_page_escapes_the_title_and_embeds_the_bridge() -> None:
    page = app_page(title="A <b> & C", body="<main></main>", script="go()", style="p{}")
    assert "<title>A &lt;b&gt; &amp; C</title>" in page
    assert page.index("<main></main>") < page.index("window.mcpApp") < page.index("go()")
    assert '"name": "A <b> & C"' in page
    assert "window.mcpApp" not in app_page(title="x", bridge=False)
    # A name holding "</script>" cannot close the bridge's script early.
    assert "</script>x" not in app_page(title="t", app_name="</script>x")
