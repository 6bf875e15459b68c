"""trimcp.protocol.apps_ext outside the CSP: what a client declares, what a ui:// URI
is, and a tool's ``_meta.ui`` read back, each as loosely written as a peer may send it."""

from __future__ import annotations

from typing import Any

import pytest

from trimcp.protocol.apps_ext import (
    EXTENSION_ID,
    MIME_TYPE,
    ToolUi,
    is_ui_uri,
    renders_pages,
    tool_meta,
)


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


@pytest.mark.parametrize(
    ("visibility", "model", "app"),
    [
        (None, True, True),
        ("model", True, False),
        ("app", False, True),
        (["app", "model"], True, True),
    ],
)
def test_who_sees_and_calls_a_tool(visibility: Any, model: bool, app: bool) -> None:
    ui = ToolUi("ui://dash", visibility=visibility)
    assert (ui.model_visible, ui.app_callable) == (model, app)


def test_a_tools_visibility_names_model_or_app_only() -> None:
    with pytest.raises(ValueError, match="Unknown tool visibility 'agent'"):
        ToolUi("ui://dash", visibility=["model", "agent"])
    with pytest.raises(ValueError, match="needs 'model', 'app' or both"):
        ToolUi("ui://dash", visibility=[])
    not_ui: Any = 7
    with pytest.raises(TypeError, match=r"ui= takes a 'ui://\.\.\.' URI or a ToolUi"):
        tool_meta(not_ui, None)


@pytest.mark.parametrize(
    "meta", [{"ui": {"resourceUri": 7}}, {"ui/resourceUri": None}, {"ui": {}}, {"ui": "x"}, None]
)
def test_a_tool_without_a_usable_app_uri_has_no_app(meta: Any) -> None:
    assert ToolUi.from_meta(meta) is None
