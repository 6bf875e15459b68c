"""Issue 16: a client in auto mode probing a session-era server leaves no warning behind."""

from __future__ import annotations

import logging

import pytest

from trimcp import Server, connect_memory


async def test_the_discover_probe_of_auto_mode_is_not_a_warning(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # Was: every connect_memory (auto mode against a session-era server) logged
    # "rejected a message from the peer: ... server/discover before initialization".
    app = Server("quiet")

    @app.tool()
    def hi() -> str:
        return "hi"

    with caplog.at_level(logging.DEBUG, logger="trimcp"):
        async with connect_memory(app) as client:
            assert client.protocol_version == "2025-11-25"
            result = await client.call_tool("hi")
    assert result.content[0].text == "hi"  # type: ignore[union-attr]
    assert [r for r in caplog.records if r.levelno >= logging.WARNING] == []
    # Still visible when someone looks for it.
    assert any("server/discover" in r.getMessage() for r in caplog.records)
