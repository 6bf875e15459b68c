"""examples/apps_dashboard.py: an MCP App whose page calls an app-only tool through the host."""

from __future__ import annotations

import trio

from tests.examples.helpers import load_example, run_example
from trimcp.client import connect_memory
from trimcp.client.apps import tool_ui
from trimcp.protocol import apps_ext

dashboard = load_example("apps_dashboard")


async def test_the_page_is_served_and_its_button_tool_is_app_only() -> None:
    dashboard.counter.value = 0
    with trio.fail_after(30):
        async with connect_memory(dashboard.app) as client:
            tools = {tool.name: tool for tool in (await client.list_tools()).tools}
            record = tool_ui(tools["record_visit"])
            assert record is not None
            assert record.visibility == ("app",)
            page = await client.ui_resource("visits")
            assert page.uri == dashboard.PAGE
            # The page's code calls the app-only tool through the bridge.
            assert 'mcpApp.callTool("record_visit"' in page.html
            assert "window.mcpApp" in page.html
            assert page.meta.prefers_border is True
            [listed] = (await client.list_resources()).resources
            assert listed.mime_type == apps_ext.MIME_TYPE
            first = await client.call_tool("record_visit")
            second = await client.call_tool("visits")
            assert first.structured_content == second.structured_content == {"visits": 1}


def test_the_demo_runs() -> None:
    lines = run_example("apps_dashboard", "--demo")
    assert lines[0].startswith("tool 'visits' renders ui://dashboard/visits (")
    assert lines[1].startswith("frame policy: default-src 'none';")
    assert lines[-1] == "after the button: {'visits': 1}"
