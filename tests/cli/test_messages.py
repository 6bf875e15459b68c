"""What the CLI prints when something goes wrong: one line naming the thing at fault and
the next step (issue 16, newcomer papercuts). Real subprocesses, every run bounded."""

from __future__ import annotations

import re
import signal
import socket
import sys
from pathlib import Path

import pytest

from tests.cli.support import APP, cli, read_line, spawn, stop
from trimcp.cli import describe_error
from trimcp.errors import (
    CONNECTION_CLOSED,
    MADE_HERE,
    LocalProtocolError,
    McpError,
    SessionClosed,
)
from trimcp.testing import ScriptedServer


@pytest.mark.parametrize("port", ["99999", "65536", "-1", "eighty"])
def test_an_invalid_port_is_a_usage_error_naming_the_flag(port: str) -> None:
    # 99999 and 65536 used to serve on a random port; -1 printed a resolver error.
    completed = cli("run", APP, "--transport", "http", f"--port={port}")
    assert completed.returncode == 2, completed.stderr
    assert completed.stderr.startswith("trimcp: argument --port: ")
    assert "0-65535" in completed.stderr
    assert "serving" not in completed.stderr


def test_a_port_in_use_names_the_address() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        for transport in ("http", "ws"):
            completed = cli("run", APP, "--transport", transport, "--port", str(port))
            assert completed.returncode == 1, completed.stderr
            assert f"trimcp: cannot listen on 127.0.0.1:{port}: " in completed.stderr
            assert "pick another port" in completed.stderr


def test_ping_of_a_server_without_a_version_prints_one_space(tmp_path: Path) -> None:
    server = tmp_path / "versionless.py"
    server.write_text(
        "from trimcp import Server\n"
        "app = Server('bare', version='')\n"
        "if __name__ == '__main__':\n"
        "    app.run()\n"
    )
    completed = cli("ping", "--", sys.executable, str(server))
    assert completed.returncode == 0, completed.stderr
    assert completed.stdout.startswith("pong from bare in ")


def test_a_local_refusal_is_not_reported_as_a_server_answer() -> None:
    # APP declares resources; the peer server below does not: the client refuses locally.
    line, code = describe_error(
        LocalProtocolError("Cannot send resources/read: the server did not declare it")
    )
    assert code == 1
    assert line == "not sent: Cannot send resources/read: the server did not declare it"
    assert "-32" not in line


async def test_errors_the_client_makes_up_are_named_as_the_clients() -> None:
    # A missing handler and too many input rounds were printed as "the server answered
    # error -32601/-32603": the client gave up, the server sent no such error.
    server = ScriptedServer(protocol_version="2026-07-28", ordered=False)
    sampling = {"method": "sampling/createMessage", "params": {"messages": [], "maxTokens": 1}}
    server.expect("tools/call").reply(
        {"resultType": "input_required", "inputRequests": {"llm": sampling}}
    )
    for _ in range(2):
        server.expect("resources/read").reply(
            {"resultType": "input_required", "requestState": "again"}
        )
    async with server.open_client(max_input_rounds=1) as client:
        with pytest.raises(McpError) as missing:
            await client.call_tool("t")
        with pytest.raises(McpError) as rounds:
            await client.read_resource("file:///x")
    lines = [describe_error(caught.value) for caught in (missing, rounds)]
    assert lines == [
        (f"on the client side: {missing.value.message}", 1),
        (f"on the client side: {rounds.value.message}", 1),
    ]
    assert "no sampling handler registered" in missing.value.message
    assert "still asked for input after 1 rounds" in rounds.value.message


def test_errors_the_server_sent_are_named_as_the_servers() -> None:
    # A -32000 the server sent was printed bare, as if this side had lost the connection.
    closing = McpError(CONNECTION_CLOSED, "Session is closing")
    # A proxy relays what its own client made up: another process's mark is not ours.
    relayed = McpError(
        CONNECTION_CLOSED,
        "cannot connect to http://backend.example/mcp",
        {MADE_HERE: "0123456789abcdef"},
    )
    for error in (closing, relayed):
        assert describe_error(error) == (f"the server answered error -32000: {error.message}", 1)


def test_a_tool_failure_shows_the_servers_last_stderr_lines(tmp_path: Path) -> None:
    server = tmp_path / "failing.py"
    server.write_text(
        "import sys\n"
        "from trimcp import Server\n"
        "app = Server('failing')\n"
        "@app.tool()\n"
        "def boom() -> str:\n"
        "    print('database unreachable at db:5432', file=sys.stderr, flush=True)\n"
        "    raise RuntimeError('no db')\n"
        "if __name__ == '__main__':\n"
        "    app.run()\n"
    )
    completed = cli("call", "boom", "--", sys.executable, str(server))
    assert completed.returncode == 1
    assert "trimcp: tool 'boom' failed" in completed.stderr
    assert "the server's last stderr lines:" in completed.stderr
    assert "database unreachable at db:5432" in completed.stderr


def test_a_crashed_server_is_not_asked_whether_it_speaks_mcp(tmp_path: Path) -> None:
    broken = tmp_path / "broken.py"
    broken.write_text("def f(:\n")
    completed = cli("list", "tools", "--", sys.executable, str(broken))
    assert completed.returncode == 1
    assert "SyntaxError" in completed.stderr
    assert "the server process exited with code 1 before it answered" in completed.stderr
    assert "is it an MCP server" not in completed.stderr
    assert "-32601" not in completed.stderr


def test_a_server_that_exits_silently_is_asked_about() -> None:
    closed = SessionClosed("closed", {"returncode": 0, "stderr": []})
    line, _ = describe_error(closed)
    assert "is it an MCP server over stdio?" in line


def test_an_import_error_under_run_names_the_file_and_line(tmp_path: Path) -> None:
    broken = tmp_path / "needs_missing.py"
    broken.write_text("from trimcp import Server\n\nimport no_such_module_trimcp\n")
    completed = cli("run", str(broken))
    assert completed.returncode == 1
    first = completed.stderr.splitlines()[0]
    assert first.startswith(f"trimcp: cannot import {broken}: ModuleNotFoundError: ")
    assert f"({broken}, line 3)" in first
    assert "add -v to see the whole traceback" in completed.stderr
    verbose = cli("run", str(broken), "-v")
    assert "Traceback (most recent call last)" in verbose.stderr


def test_a_syntax_error_under_run_names_the_file_and_line(tmp_path: Path) -> None:
    broken = tmp_path / "bad_syntax.py"
    broken.write_text("x = 1\ndef f(:\n")
    completed = cli("run", str(broken))
    assert completed.returncode == 1
    assert f"SyntaxError: invalid syntax ({broken}, line 2)" in completed.stderr


def test_a_websocket_rejection_is_one_readable_line() -> None:
    server = spawn("run", APP, "--transport", "ws", "--port", "0")
    try:
        line = read_line(server.stderr)
        found = re.search(r"at (ws://127\.0\.0\.1:\d+)/mcp ", line)
        assert found, line
        completed = cli("ping", "--url", found.group(1) + "/elsewhere")
        server.send_signal(signal.SIGTERM)
        assert stop(server) == 0
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()
        for stream in (server.stdout, server.stderr):
            if stream is not None:
                stream.close()
    assert completed.returncode == 1
    assert completed.stderr.startswith(
        "trimcp: the server refused the WebSocket connection: HTTP 404"
    ), completed.stderr
    assert "(b'" not in completed.stderr  # no raw tuple of header bytes


def test_a_usage_error_does_not_dump_the_servers_stderr(tmp_path: Path) -> None:
    server = tmp_path / "chatty.py"
    server.write_text(
        "import sys\n"
        "from trimcp import Server\n"
        "app = Server('chatty')\n"
        "@app.tool()\n"
        "def echo(text: str) -> str:\n"
        "    return text\n"
        "if __name__ == '__main__':\n"
        "    print('starting up, all fine', file=sys.stderr, flush=True)\n"
        "    app.run()\n"
    )
    completed = cli("call", "echo", "--args", "[1]", "--", sys.executable, str(server))
    assert completed.returncode == 2, completed.stderr
    assert "needs a JSON object" in completed.stderr
    assert "the server's last stderr lines" not in completed.stderr
    assert "starting up" not in completed.stderr
