"""trimcp.protocol.apps_ext outside the CSP: what a client declares, what a ui:// URI
is, and a tool's ``_meta.ui`` read back, each as loosely written as a peer may send it."""

from __future__ import annotations

from typing import Any

import pytest

from trimcp.protocol.apps_ext import EXTENSION_ID, MIME_TYPE, ToolUi, is_ui_uri, renders_pages


@pytest.mark.parametrize(
    ("settings", "renders"),
    [
        ({"mimeTypes": [MIME_TYPE]}, True),
        ({"mimeTypes": ["text/html", MIME_TYPE]}, True),
        ({"mimeTypes": ["text/html"]}, False),
        ({"mimeTypes": MIME_TYPE}, False),  # a string, not a list: not declared
        ({"mimeTypes": None}, False),
        ({}, False),
    ],
)
def test_a_client_renders_pages_only_when_it_lists_the_mime_type(
    settings: dict[str, Any], renders: bool
) -> None:
    assert renders_pages({"extensions": {EXTENSION_ID: settings}}) is renders
    assert renders_pages(None) is False


@pytest.mark.parametrize(
    ("uri", "is_ui"),
    [("ui://dash", True), ("UI://dash", True), ("ui://", False), ("ui:/", False), ("x", False)],
)
def test_a_ui_uri_names_something_after_its_scheme(uri: str, is_ui: bool) -> None:
    assert is_ui_uri(uri) is is_ui


@pytest.mark.parametrize(
    ("visibility", "read"),
    [("app", ("app",)), (["model"], ("model",)), (["app", "nope"], ("app",)), ("nope", None)],
)
def test_a_tools_visibility_is_read_as_written(visibility: Any, read: Any) -> None:
    ui = ToolUi.from_meta({"ui": {"resourceUri": "ui://dash", "visibility": visibility}})
    assert ui is not None
    assert ui.visibility == read
