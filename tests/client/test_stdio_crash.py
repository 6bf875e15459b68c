"""connect_stdio tells why a child server went away: its exit code and last stderr lines
(issue 16: a SyntaxError in the server used to surface as "peer closed the connection")."""

from __future__ import annotations

import logging
import sys
from pathlib import Path

import pytest
import trio

from trimcp.client import connect_stdio
from trimcp.errors import SessionClosed
from trimcp.transports.stdio import STDERR_TAIL_LINES
from trimcp.types import TextContent

PEER = Path(__file__).resolve().parents[1] / "peers" / "trimcp_stdio_server.py"
#: Real subprocesses: real time, bounded.
BOUND = 30


async def test_a_server_with_a_syntax_error_is_explained(tmp_path: Path) -> None:
    server = tmp_path / "broken_server.py"
    server.write_text("from trimcp import Server\napp = Server('x'\n")
    with trio.fail_after(BOUND), pytest.raises(SessionClosed) as caught:
        async with connect_stdio([sys.executable, str(server)], on_stderr=lambda line: None):
            raise AssertionError("the handshake cannot succeed")
    error = caught.value
    assert "the server process exited with code 1" in error.message
    assert "SyntaxError" in error.message
    assert error.data["returncode"] == 1
    assert any("SyntaxError" in line for line in error.data["stderr"])


async def test_a_crash_mid_session_is_explained_and_the_tail_is_bounded() -> None:
    script = (
        "import sys\n"
        "sys.stdin.readline()\n"
        f"for i in range({STDERR_TAIL_LINES * 3}):\n"
        "    print(f'line {i}', file=sys.stderr)\n"
        "sys.exit(3)\n"
    )
    seen: list[str] = []
    with trio.fail_after(BOUND), pytest.raises(SessionClosed) as caught:
        async with connect_stdio([sys.executable, "-c", script], on_stderr=seen.append):
            raise AssertionError("the handshake cannot succeed")
    error = caught.value
    assert error.data["returncode"] == 3
    assert len(error.data["stderr"]) == STDERR_TAIL_LINES
    assert error.data["stderr"][-1] == f"line {STDERR_TAIL_LINES * 3 - 1}"
    assert "exited with code 3" in error.message
    assert len(seen) == STDERR_TAIL_LINES * 3  # the callback still sees every line


async def test_a_normal_close_raises_nothing() -> None:
    peer = PEER
    with trio.fail_after(BOUND):
        async with connect_stdio([sys.executable, str(peer)], on_stderr=lambda line: None) as c:
            await c.ping()


async def test_a_line_printed_to_stdout_is_shown_and_skipped(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # Fails before: only "rejected a message from the peer: Parse error: Expecting value:
    # line 1 column 1 (char 0)", not the line, and a Parse error sent to the server.
    server = tmp_path / "noisy_server.py"
    server.write_text(
        "print('hello from import')\n"
        "print()\n"
        "from trimcp import Server\n"
        "app = Server('noisy')\n"
        "@app.tool()\n"
        "def ping_tool() -> str:\n"
        "    return 'pong'\n"
        "app.run()\n"
    )
    with trio.fail_after(BOUND), caplog.at_level(logging.WARNING, logger="trimcp"):
        async with connect_stdio([sys.executable, str(server)], on_stderr=lambda line: None) as c:
            result = await c.call_tool("ping_tool")
    assert [block.text for block in result.content if isinstance(block, TextContent)] == ["pong"]
    warnings = [r.getMessage() for r in caplog.records]
    assert warnings == [
        "the server wrote a line that is not JSON-RPC to stdout (skipped): 'hello from "
        "import'; stdout is reserved for the protocol: print to stderr "
        "(print(..., file=sys.stderr)) or use logging"
    ]
