"""A mistake on the client's command line gets one or two lines: what is wrong and the next
step ("did you mean", "add --auth", "try --url .../mcp"), and the server's stderr only when
the server itself failed (issue 26). Real servers, the CLI as a subprocess."""

from __future__ import annotations

import socket
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import trio

from tests.cli.support import (
    APP,
    APP_ARGV,
    PEER_ARGV,
    ROOT,
    cli,
    cli_json,
    served,
)
from trimcp import Server
from trimcp.auth import AuthInfo, ProtectedResource
from trimcp.cli import describe_error
from trimcp.client.errors import ToolOutputError
from trimcp.transports.http_server import HttpServerConfig, serve_http
from trimcp.types import CallToolResult

EVERYTHING = ["--", sys.executable, str(ROOT / "examples" / "everything_server.py")]


def test_a_misspelled_tool_gets_a_suggestion_and_no_stderr_dump() -> None:
    completed = cli("call", "gret", "name=123", *EVERYTHING)
    assert completed.returncode == 1
    assert completed.stderr == (
        "trimcp: the server has no tool 'gret'\ntrimcp: did you mean 'greet'?\n"
    )
    nothing_close = cli("call", "zzzz", *PEER_ARGV)
    assert nothing_close.stderr.endswith(
        "trimcp: the server has no tool 'zzzz'\ntrimcp: `trimcp list tools` shows the 4 it has\n"
    )


def test_misspelled_prompts_resources_and_templates_get_suggestions() -> None:
    prompt = cli("prompt", "sumarize", "topic=x", *APP_ARGV)
    assert (prompt.returncode, prompt.stderr) == (
        1,
        "trimcp: the server has no prompt 'sumarize'\ntrimcp: did you mean 'summarize'?\n",
    )
    resource = cli("read", "test://static-txt", *EVERYTHING)
    assert resource.returncode == 1
    assert resource.stderr.startswith(
        "trimcp: the server has no resource 'test://static-txt'\n"
        "trimcp: did you mean 'test://static-text'"
    ), resource.stderr
    template = cli("read", "test://templat/1/data", *EVERYTHING)
    assert template.stderr == (
        "trimcp: the server has no resource 'test://templat/1/data'\n"
        "trimcp: did you mean 'test://template/{id}/data'?\n"
    )
    # A URI its template matches is read as before.
    assert cli("read", "memo://monday", *APP_ARGV).stdout == "nothing on monday\n"


def test_a_failing_tool_shows_only_what_the_server_wrote_during_the_call(tmp_path: Path) -> None:
    server = tmp_path / "failing.py"
    server.write_text(
        "import sys\n"
        "from trimcp import Server\n"
        "app = Server('failing')\n"
        "@app.tool()\n"
        "def boom() -> str:\n"
        "    print('database unreachable at db:5432', file=sys.stderr, flush=True)\n"
        "    raise RuntimeError('no db')\n"
        "@app.tool()\n"
        "def quiet(n: int) -> int:\n"
        "    return n\n"
        "if __name__ == '__main__':\n"
        "    print('starting up, all fine', file=sys.stderr, flush=True)\n"
        "    app.run()\n"
    )
    failed = cli("call", "boom", "--", sys.executable, str(server))
    assert failed.returncode == 1
    assert "database unreachable at db:5432" in failed.stderr
    assert "starting up" not in failed.stderr
    refused = cli("call", "quiet", "--args", '{"n": "x"}', "--", sys.executable, str(server))
    assert refused.returncode == 1
    assert refused.stderr.startswith("trimcp: tool 'quiet' failed: "), refused.stderr
    assert "stderr lines" not in refused.stderr


def test_listing_what_a_server_does_not_declare_is_an_empty_listing() -> None:
    empty = cli("list", "prompts", *PEER_ARGV)
    assert (empty.returncode, empty.stdout) == (0, ""), empty.stderr
    assert "not sent" not in empty.stderr
    assert cli_json("list", "resources", "--json", *PEER_ARGV) == {"resources": []}
    assert cli_json("list", "templates", "--json", *PEER_ARGV) == {"resourceTemplates": []}


def test_an_invalid_answer_is_not_reported_as_an_error_the_server_sent() -> None:
    bad = ToolOutputError("t", CallToolResult(content=[]), "", "structuredContent is missing")
    line, code = describe_error(bad)
    assert code == 1
    assert line.startswith("the server's answer is invalid: Tool 't' returned")
    assert "answered error" not in line


@pytest.fixture
def http_url() -> Iterator[str]:
    """``trimcp run APP`` over HTTP; its base URL (no path)."""
    yield from _served("http")


@pytest.fixture
def ws_url() -> Iterator[str]:
    yield from _served("ws")


def _served(transport: str) -> Iterator[str]:
    for url in served(APP, transport=transport):
        yield url.removesuffix("/mcp")


def test_a_url_without_the_mcp_path_gets_a_hint(http_url: str) -> None:
    for url in (http_url, http_url + "/"):
        completed = cli("ping", "--url", url)
        assert completed.returncode == 1
        assert completed.stderr.splitlines()[-1] == (
            f"trimcp: MCP servers usually answer at /mcp: try --url {http_url}/mcp"
        ), completed.stderr


def test_the_wrong_scheme_gets_a_hint(http_url: str, ws_url: str) -> None:
    ws_to_http = cli("ping", "--url", http_url.replace("http://", "ws://") + "/mcp")
    assert ws_to_http.returncode == 1
    assert ws_to_http.stderr.splitlines()[-1] == (
        f"trimcp: an HTTP endpoint answered the WebSocket handshake: try --url {http_url}/mcp"
    ), ws_to_http.stderr
    http_to_ws = cli("ping", "--url", ws_url.replace("ws://", "http://") + "/mcp")
    assert http_to_ws.returncode == 1
    assert http_to_ws.stderr.splitlines()[-1] == (
        f"trimcp: if the server serves WebSocket, try --url {ws_url}/mcp"
    ), http_to_ws.stderr


async def test_a_protected_server_called_without_auth_hints_at_auth() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    url = f"http://127.0.0.1:{port}/mcp"

    async def refuse(token: str) -> AuthInfo | None:
        return None

    protected = ProtectedResource(
        resource=url, authorization_servers=["https://issuer.example"], verifier=refuse
    )
    app = Server("protected")
    with trio.fail_after(60):
        async with trio.open_nursery() as nursery:
            await nursery.start(
                lambda task_status: serve_http(
                    app, port=port, config=HttpServerConfig(auth=protected), task_status=task_status
                )
            )
            completed = await trio.to_thread.run_sync(lambda: cli("ping", "--url", url))
            nursery.cancel_scope.cancel()
    assert completed.returncode == 1
    lines = completed.stderr.splitlines()
    assert len(lines) == 2, completed.stderr
    assert "401" in lines[0]
    assert lines[1] == (
        "trimcp: the server asks for authorization: add --auth (or --header 'Authorization: ...')"
    )


@pytest.mark.parametrize(
    ("audience", "status", "reason", "hint"),
    [
        (
            "https://elsewhere.example",
            401,
            "invalid_token: the token was issued for another audience",
            "trimcp: the server refused the Authorization header's token: check it, or use --auth",
        ),
        (
            None,
            403,
            "insufficient_scope: the token lacks scopes this server requires",
            "trimcp: the server refused the Authorization header's token: check it, or use --auth",
        ),
    ],
    ids=["401", "403"],
)
async def test_a_refused_token_shows_the_reason_the_server_gave(
    audience: str | None, status: int, reason: str, hint: str
) -> None:
    """The ``error`` and ``error_description`` of the refusal's ``WWW-Authenticate`` are
    on the error line (issue 35: they were hidden)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    url = f"http://127.0.0.1:{port}/mcp"

    async def verify(token: str) -> AuthInfo | None:
        return AuthInfo(subject="u", audience=(audience or url,), token=token)

    protected = ProtectedResource(
        resource=url,
        authorization_servers=["https://issuer.example"],
        verifier=verify,
        required_scopes=["mcp:write"],
    )
    header = ("--header", "Authorization: Bearer abc")
    with trio.fail_after(60):
        async with trio.open_nursery() as nursery:
            await nursery.start(
                lambda task_status: serve_http(
                    Server("protected"),
                    port=port,
                    config=HttpServerConfig(auth=protected),
                    task_status=task_status,
                )
            )
            completed = await trio.to_thread.run_sync(lambda: cli("ping", "--url", url, *header))
            nursery.cancel_scope.cancel()
    assert completed.returncode == 1
    lines = completed.stderr.splitlines()
    assert len(lines) == 2, completed.stderr
    assert f"HTTP {status} from {url}" in lines[0]
    assert lines[0].endswith(f"(the server said: {reason})"), lines[0]
    assert lines[1] == hint
