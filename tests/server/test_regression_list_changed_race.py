"""Regression: a list change made right after connecting reached no one.

The server marked only sessions whose ``notifications/initialized`` it had already read;
a change between its initialize answer and that notification was dropped for good.
"""

from __future__ import annotations

from typing import Any

import trio
import trio.testing

import trimcp


async def test_change_right_after_connect_is_announced(autojump_clock: Any) -> None:
    app = trimcp.Server("race")

    @app.tool()
    async def first() -> str:
        """First."""
        return "1"

    seen: list[str] = []

    async def on_tools_changed() -> None:
        seen.append("tools")

    async with trimcp.connect_memory(app, on_tools_list_changed=on_tools_changed):
        app.remove_tool("first")  # no request, no ping: straight after the handshake
        await trio.testing.wait_all_tasks_blocked()
        assert seen == ["tools"]
