"""The CLI at 2026-07-28, end to end against examples/everything_server.py over stdio and
Streamable HTTP (issue 23): it speaks 2026, asks for the server's log lines unless
``--quiet``, keeps the tool name with ``--json``, and says which side an error comes from.
Real subprocesses, every run bounded."""

from __future__ import annotations

import socket
import sys
from collections.abc import Iterator

import pytest

from tests.cli.support import ROOT, cli, cli_json, served_over_http

EVERYTHING = str(ROOT / "examples" / "everything_server.py")


@pytest.fixture(scope="module")
def http_url() -> Iterator[str]:
    yield from served_over_http(EVERYTHING)


@pytest.fixture(params=["stdio", "http"])
def server(request: pytest.FixtureRequest) -> list[str]:
    """The words that name the everything server on a ``trimcp`` command line."""
    if request.param == "stdio":
        return ["--", sys.executable, EVERYTHING]
    return ["--url", request.getfixturevalue("http_url")]


def test_the_cli_speaks_2026(server: list[str]) -> None:
    answer = cli_json("ping", "--json", *server)
    assert answer["protocolVersion"] == "2026-07-28"
    assert answer["server"]["name"] == "trimcp-everything-server"


def test_json_before_the_tool_name_calls_that_tool(server: list[str]) -> None:
    result = cli_json("call", "--json", "greet", "name=Ada", *server)
    assert result["content"][0]["text"] == "Hello, Ada!"
    assert result["resultType"] == "complete"  # the wire form, not the readable text


def test_the_servers_log_lines_show_unless_quiet(server: list[str]) -> None:
    completed = cli("call", "test_tool_with_logging", *server)
    assert completed.returncode == 0, completed.stderr
    assert "[server info] Tool execution started" in completed.stderr
    quiet = cli("call", "--quiet", "test_tool_with_logging", *server)
    assert quiet.returncode == 0, quiet.stderr
    assert "[server" not in quiet.stderr


def test_an_error_the_server_sent_is_named_as_the_servers(server: list[str]) -> None:
    completed = cli("call", "test_missing_capability", *server)
    assert completed.returncode == 1
    assert completed.stderr.startswith(
        "trimcp: the server answered error -32021: Missing required client capability"
    ), completed.stderr


def test_an_http_status_without_an_answer_is_named_as_the_clients(http_url: str) -> None:
    # The client made this error up from an HTTP 404: it was printed with no side named.
    completed = cli("ping", "--url", http_url.removesuffix("/mcp") + "/nope")
    assert completed.returncode == 1
    first = completed.stderr.splitlines()[0]
    assert first.startswith("trimcp: on the client side: HTTP 404 from "), completed.stderr
    assert "server answered" not in completed.stderr


def test_a_connection_refused_is_named_as_the_clients() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    completed = cli("ping", "--url", f"http://127.0.0.1:{port}/mcp")
    assert completed.returncode == 1
    assert completed.stderr.startswith(
        f"trimcp: on the client side: cannot connect to http://127.0.0.1:{port}/mcp: "
    ), completed.stderr
