"""`trimcp list|call|read|prompt|ping` against real stdio servers, run as subprocesses."""

from __future__ import annotations

import json
import sys

from tests.cli.support import APP_ARGV, PEER_ARGV, cli, cli_json


def test_list_tools_is_readable() -> None:
    completed = cli("list", "tools", *PEER_ARGV)
    assert completed.returncode == 0, completed.stderr
    lines = completed.stdout.splitlines()
    assert lines[0].split() == ["echo(text)", "Echo", "the", "text", "back."]
    assert lines[2].startswith("slow([seconds])")


def test_list_json_is_the_wire_form() -> None:
    listed = cli_json("list", "tools", "--json", *PEER_ARGV)
    assert [tool["name"] for tool in listed["tools"]] == ["echo", "add", "slow", "progress"]
    assert listed["tools"][1]["outputSchema"]["required"] == ["sum"]


def test_list_every_kind_of_a_trimcp_server_app() -> None:
    resources = cli_json("list", "resources", "--json", *APP_ARGV)["resources"]
    assert [r["uri"] for r in resources] == ["memo://today"]
    templates = cli_json("list", "templates", "--json", *APP_ARGV)["resourceTemplates"]
    assert [t["uriTemplate"] for t in templates] == ["memo://{day}"]
    prompts = cli("list", "prompts", *APP_ARGV)
    assert prompts.stdout.startswith("summarize(topic, [style])"), prompts.stderr


def test_call_parses_values_as_json_when_they_parse() -> None:
    result = cli_json("call", "add", "a=2", "b=0.5", "--json", *PEER_ARGV)
    assert result["structuredContent"] == {"sum": 2.5}
    # A value that is not JSON stays a string.
    echoed = cli("call", "echo", "text=hello world", *PEER_ARGV)
    assert echoed.stdout == "hello world\n"


def test_call_takes_the_arguments_as_one_json_object() -> None:
    for words in (['{"a": 1, "b": 2}'], ["--args", '{"a": 1, "b": 2}']):
        completed = cli("call", "add", *words, *PEER_ARGV)
        assert (completed.returncode, completed.stdout) == (0, "3\n"), completed.stderr
    # --json before key=value words still means JSON output.
    result = cli_json("call", "total", "--json", "numbers=[1, 2, 3.5]", *APP_ARGV)
    assert result["structuredContent"] == {"result": 6.5}


def test_json_before_the_tool_name_prints_the_wire_json_of_that_tool() -> None:
    # `call --json TOOL` used to take TOOL as the value of --json.
    result = cli_json("call", "--json", "add", "a=2", "b=3", *PEER_ARGV)
    assert result["structuredContent"] == {"sum": 5}
    result = cli_json("call", "add", "--json", '{"a": 1, "b": 2}', *PEER_ARGV)
    assert result["structuredContent"] == {"sum": 3}


def test_progress_goes_to_stderr_while_the_result_goes_to_stdout() -> None:
    completed = cli("call", "progress", "steps=3", *PEER_ARGV)
    assert completed.returncode == 0, completed.stderr
    assert completed.stdout == "3 steps\n"
    assert "progress 1/3 (33%) step 1" in completed.stderr
    assert "progress 3/3 (100%) step 3" in completed.stderr
    quiet = cli("call", "progress", "steps=3", "--quiet", *PEER_ARGV)
    assert "progress" not in quiet.stderr


def test_read_and_prompt() -> None:
    read = cli("read", "memo://monday", *APP_ARGV)
    assert (read.returncode, read.stdout) == (0, "nothing on monday\n"), read.stderr
    contents = cli_json("read", "memo://today", "--json", *APP_ARGV)["contents"]
    assert contents == [{"uri": "memo://today", "mimeType": "text/plain", "text": "buy milk"}]
    prompt = cli("prompt", "summarize", "topic=trio", "style=long", *APP_ARGV)
    assert prompt.returncode == 0, prompt.stderr
    assert prompt.stdout.endswith("user: Summarize trio in a long way.\n")
    # Prompt arguments are strings on the wire: a number-looking value stays a string.
    got = cli_json("prompt", "summarize", "topic=42", "--json", *APP_ARGV)
    assert got["messages"][0]["content"]["text"] == "Summarize 42 in a short way."


def test_ping() -> None:
    completed = cli("ping", *PEER_ARGV)
    assert completed.returncode == 0, completed.stderr
    assert completed.stdout.startswith("pong from trimcp-peer 1.0.0 in ")
    answer = cli_json("ping", "--json", *PEER_ARGV)
    assert answer["ok"] is True
    assert answer["server"]["name"] == "trimcp-peer"


def test_verbose_shows_the_wire_on_stderr() -> None:
    completed = cli("ping", "--verbose", *PEER_ARGV)
    assert completed.returncode == 0, completed.stderr
    sent = [
        json.loads(line[3:]) for line in completed.stderr.splitlines() if line.startswith("-> ")
    ]
    received = [line for line in completed.stderr.splitlines() if line.startswith("<- ")]
    # Auto mode probes with server/discover; a 2025 server refuses it and the client
    # falls back to initialize, a 2026 one answers it (and ping is discover there).
    methods = [m.get("method") for m in sent]
    assert methods in (
        ["server/discover", "initialize", "notifications/initialized", "ping"],
        ["server/discover", "server/discover"],
    )
    assert len(received) == (3 if "ping" in methods else 2)


def test_an_unknown_tool_is_one_line_with_a_hint_and_exit_1() -> None:
    completed = cli("call", "nosuch", *PEER_ARGV)
    assert completed.returncode == 1
    assert completed.stdout == ""
    # The error is the last lines (a 2025 peer may have logged refusing the 2026 probe).
    assert completed.stderr.endswith(
        "trimcp: the server has no tool 'nosuch'\ntrimcp: `trimcp list tools` shows the 4 it has\n"
    )


def test_a_tool_error_result_exits_1() -> None:
    completed = cli("call", "greet", *APP_ARGV)  # missing the required name
    assert completed.returncode == 1
    assert completed.stderr.startswith("trimcp: tool 'greet' failed: ")
    assert "name" in completed.stderr


def test_usage_errors_exit_2() -> None:
    for args in (
        ["list", "tools"],  # no server
        ["call", "echo", "oops", *PEER_ARGV],  # not key=value
        ["call", "echo", "--args", "[1]", *PEER_ARGV],  # not an object
        ["list", "gadgets", *PEER_ARGV],
        ["ping", "--url", "ftp://example.com"],
        ["ping", "--url", "http://127.0.0.1:1/mcp", *PEER_ARGV],  # both
        ["frobnicate"],
        [],
    ):
        completed = cli(*args)
        assert completed.returncode == 2, (args, completed.stderr)
        assert completed.stderr.startswith("trimcp: "), (args, completed.stderr)
        assert "Traceback" not in completed.stderr


def test_a_missing_command_and_a_dead_server_exit_1() -> None:
    missing = cli("ping", "--", "no-such-program-trimcp")
    assert missing.returncode == 1
    assert missing.stderr == "trimcp: cannot start 'no-such-program-trimcp': command not found\n"
    dead = cli("ping", "--", sys.executable, "-c", "import sys; sys.exit('I am not MCP')")
    assert dead.returncode == 1
    assert "I am not MCP" in dead.stderr  # the server's last stderr lines are shown
    assert "the server process exited with code 1 before it answered" in dead.stderr
    assert "is it an MCP server" not in dead.stderr  # it crashed: the question misleads
    refused = cli("ping", "--url", "http://127.0.0.1:1/mcp")
    assert refused.returncode == 1
    assert refused.stderr.startswith(
        "trimcp: on the client side: cannot connect to http://127.0.0.1:1/mcp"
    )
