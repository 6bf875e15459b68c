"""The CLI's pieces in process: argument parsing, targets, output, the wire tap."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
import trio

from trimcp.cli import main
from trimcp.cli.arguments import merge_arguments, parse_pairs, parse_value
from trimcp.cli.errors import CliError, UsageError
from trimcp.cli.loader import find_server, import_target, parse_target
from trimcp.cli.output import format_progress, format_tools
from trimcp.cli.parser import parse
from trimcp.cli.wiretap import WireTap, describe
from trimcp.session.transport import Outgoing
from trimcp.transports.memory import memory_transport_pair
from trimcp.types import Tool


def test_values_are_json_when_they_parse() -> None:
    assert parse_value("3") == 3
    assert parse_value("true") is True
    assert parse_value("[1, 2]") == [1, 2]
    assert parse_value('"7"') == "7"
    assert parse_value("Paris") == "Paris"
    assert parse_value("") == ""
    assert parse_pairs(["a=1", "b=x=y", "a=2"]) == {"a": 2, "b": "x=y"}
    assert parse_pairs(["n=5"], raw=True) == {"n": "5"}


def test_json_object_and_pairs_merge_pairs_last() -> None:
    assert merge_arguments(["b=2"], '{"a": 1, "b": 0}') == {"a": 1, "b": 2}
    assert merge_arguments(['{"a": [1]}', "c=x"], None) == {"a": [1], "c": "x"}
    with pytest.raises(UsageError, match="needs a JSON object"):
        merge_arguments([], "[1]")
    with pytest.raises(UsageError, match="expected key=value"):
        merge_arguments(["=1"], None)
    with pytest.raises(UsageError, match="prompt arguments are strings"):
        merge_arguments([], '{"n": 1}', raw=True)


def test_the_server_command_is_everything_after_the_first_double_dash() -> None:
    args = parse(["call", "t", "x=1", "--", "srv", "--", "--flag"])
    assert (args.tool, args.arguments) == ("t", ["x=1"])
    assert args.server_command == ["srv", "--", "--flag"]
    args = parse(["call", "t", "--json", "x=1", "y=2", "--", "srv"])
    assert (args.json, args.arguments, args.json_args) == (True, ["x=1", "y=2"], None)
    args = parse(["call", "t", "--json", '{"x": 1}', "--", "srv"])
    assert (args.json, args.arguments, args.json_args) == (True, ['{"x": 1}'], None)
    with pytest.raises(UsageError, match="takes no server command"):
        parse(["config", "claude", "s.py", "--", "srv"])


def test_json_before_the_tool_name_keeps_the_tool_name() -> None:
    # `--json` took the next word as its value: the tool name went into the arguments.
    args = parse(["call", "--json", "add", "a=1", "--", "srv"])
    assert (args.tool, args.arguments, args.json) == ("add", ["a=1"], True)
    args = parse(["call", "--json", "add", '{"a": 1}', "b=2", "--", "srv"])
    assert (args.tool, args.arguments, args.json) == ("add", ['{"a": 1}', "b=2"], True)
    with pytest.raises(UsageError, match="the tool name comes first"):
        parse(["call", '{"a": 1}', "add"])


def test_a_json_object_word_may_come_anywhere_but_only_once() -> None:
    assert merge_arguments(["b=2", '{"a": 1}'], None) == {"a": 1, "b": 2}
    with pytest.raises(UsageError, match="one JSON object"):
        merge_arguments(['{"a": 1}'], '{"b": 2}')
    with pytest.raises(UsageError, match="one JSON object"):
        merge_arguments(['{"a": 1}', '{"b": 2}'], None)


def test_targets() -> None:
    assert parse_target("pkg.mod:app").module == "pkg.mod"
    assert parse_target("pkg.mod:app").attr == "app"
    file_target = parse_target("dir/server.py:make")
    assert file_target.file == Path("dir/server.py").resolve()
    assert file_target.attr == "make"
    assert parse_target("server.py").attr is None
    with pytest.raises(CliError):
        parse_target("not a module")


def test_a_factory_function_is_called_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "path", list(sys.path))
    monkeypatch.setattr(sys, "modules", dict(sys.modules))
    source = tmp_path / "factory_app.py"
    source.write_text(
        "from trimcp import Server\n"
        "calls = []\n"
        "def make():\n"
        "    calls.append(1)\n"
        "    return Server('made')\n"
    )
    target = parse_target(f"{source}:make")
    module = import_target(target)
    server = find_server(module, target)
    assert server.info.name == "made"
    assert module.calls == [1]


def test_output_formats() -> None:
    tools = [
        Tool(
            name="a",
            input_schema={"properties": {"x": {}, "y": {}}, "required": ["x"]},
            description="First line.\nSecond line.",
        ),
    ]
    assert format_tools(tools) == "a(x, [y])  First line."
    assert format_progress(1, 4, "copying") == "progress 1/4 (25%) copying"
    assert format_progress(7, None, None) == "progress 7"
    assert describe(b'{"a": 1}\n') == '{"a": 1}'
    assert describe(b"x" * 10, limit=4) == "xxxx... (10 bytes)"


async def test_the_wire_tap_shows_both_directions_and_moves_the_bytes() -> None:
    shown: list[str] = []
    left, right = memory_transport_pair()
    tap = WireTap(left, shown.append)
    await tap.send([Outgoing(b'{"ping": 1}')])
    assert await right.receive() == b'{"ping": 1}'
    right.send_raw_nowait(b'{"pong": 1}')
    assert await tap.receive() == b'{"pong": 1}'
    await tap.aclose()
    with pytest.raises(trio.EndOfChannel):
        await right.receive()
    assert shown == ['-> {"ping": 1}', '<- {"pong": 1}']


def test_main_returns_codes_instead_of_exiting(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--version"]) == 0
    assert capsys.readouterr().out.startswith("trimcp ")
    assert main([]) == 2
    assert capsys.readouterr().err == "trimcp: no command given\ntrimcp: see: trimcp --help\n"
    assert main(["config", "claude", "tests/cli/app_server.py", "--name", "x"]) == 0
    assert json.loads(capsys.readouterr().out)["mcpServers"]["x"]["args"][:3] == [
        "-m",
        "trimcp",
        "run",
    ]
