"""Interop: trimcp's client drives the official SDK's server (PyPI ``mcp``) over stdio.

These run a real subprocess, so they use the real clock: every wait is bounded, and the
peer's log file is polled with short sleeps for at most ``LOG_WAIT`` seconds.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
import trio

from trimcp.client import connect_stdio
from trimcp.errors import SessionClosed
from trimcp.types import TextContent, TextResourceContents

PEERS = Path(__file__).resolve().parent.parent / "peers"
SERVER = [sys.executable, str(PEERS / "sdk_stdio_server.py")]
#: Bound of the whole conversation, generous for a loaded CI box.
TEST_BOUND = 60.0
#: Bound of the wait for one line in the peer's log.
LOG_WAIT = 10.0


def read_lines(log: Path) -> list[str]:
    # A few short lines in a local file: reading it synchronously does not block for long.
    return log.read_text().splitlines() if log.exists() else []


async def wait_for_log_lines(log: Path, count: int) -> list[str]:
    """The log's lines once there are at least ``count`` (a poll bounded by LOG_WAIT)."""
    # Polling is the point here: the writer is another process, no Event can reach us.
    deadline = trio.current_time() + LOG_WAIT
    lines = read_lines(log)
    while len(lines) < count and trio.current_time() < deadline:
        await trio.sleep(0.01)
        lines = read_lines(log)
    return lines


async def test_trimcp_client_drives_the_sdk_server(tmp_path: Path) -> None:
    log = tmp_path / "peer.log"
    env = {**os.environ, "TRIMCP_PEER_LOG": str(log)}
    stderr: list[str] = []
    with trio.fail_after(TEST_BOUND):
        # The session era (this SDK also speaks 2026-07-28: see test_client_vs_sdk_2026.py).
        async with connect_stdio(SERVER, env=env, on_stderr=stderr.append, mode="legacy") as client:
            assert client.server_info.name == "sdk-stdio-peer"
            assert client.protocol_version == "2025-11-25"
            assert client.server_capabilities.tools is not None
            await client.ping()

            assert [tool.name async for tool in client.iter_tools()] == [
                "echo",
                "add",
                "slow",
                "progress",
            ]
            echo = await client.call_tool("echo", {"text": "hello from trimcp"})
            assert echo.content == [TextContent(text="hello from trimcp")]
            assert not echo.is_error

            # ``add`` declares an outputSchema; the listing above makes the client check it.
            assert client.known_tool("add") is not None
            added = await client.call_tool("add", {"a": 2, "b": 3})
            assert added.structured_content == {"result": 5}
            assert added.content == [TextContent(text="5")]

            updates: list[tuple[float, float | None, str | None]] = []
            progress = await client.call_tool(
                "progress", {"steps": 3}, on_progress=lambda *update: updates.append(update)
            )
            assert updates == [(1, 3, "step 1/3"), (2, 3, "step 2/3"), (3, 3, "step 3/3")]
            assert progress.structured_content == {"steps": 3, "progress_token_seen": True}

            resource = await client.read_resource("peer://greeting")
            assert resource.contents == [
                TextResourceContents(
                    uri="peer://greeting", text="hello from the SDK peer", mime_type="text/plain"
                )
            ]
            resources = [r.uri async for r in client.iter_resources()]
            assert resources == ["peer://greeting"]

            prompt = await client.get_prompt("greet", {"name": "Ada"})
            assert prompt.messages[0].content == TextContent(text="Please greet Ada.")
            assert [p.name async for p in client.iter_prompts()] == ["greet"]

            # Cancel a call once the server says it started (its first progress update).
            with trio.move_on_after(TEST_BOUND / 2) as scope:
                await client.call_tool(
                    "slow", {"seconds": 60}, timeout=None, on_progress=lambda *_: scope.cancel()
                )
            assert scope.cancelled_caught
            lines = await wait_for_log_lines(log, 2)
            assert len(lines) == 2, (lines, stderr)
            started, cancelled = lines
            assert started.startswith("started ")
            assert cancelled == "cancelled " + started.removeprefix("started ")

            # The session goes on after the cancel.
            again = await client.call_tool("echo", {"text": "still alive"})
            assert again.content == [TextContent(text="still alive")]


async def test_an_error_in_the_body_is_not_wrapped_in_a_group() -> None:
    async def body() -> None:
        with trio.fail_after(TEST_BOUND):
            async with connect_stdio(SERVER, mode="legacy") as client:
                await client.ping()
                raise KeyError("mine")

    with pytest.raises(KeyError, match="mine"):
        await body()


async def test_a_child_that_exits_at_once_fails_the_handshake_clearly() -> None:
    async def connect() -> None:
        with trio.fail_after(TEST_BOUND):
            async with connect_stdio([sys.executable, "-c", "pass"]):
                raise AssertionError("not reached")

    with pytest.raises(SessionClosed):
        await connect()


async def test_a_missing_program_raises_os_error() -> None:
    with pytest.raises(FileNotFoundError):
        async with connect_stdio([str(Path(__file__).parent / "no-such-program")]):
            raise AssertionError("not reached")
