"""A misspelled argument name is refused before the call, naming the one meant (issue 35):
the tool's input schema, the prompt's arguments and a URI template's variables say which
names exist. ``--allow-unknown`` sends a tool's or prompt's argument as given. The CLI as
a subprocess, against real servers."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from tests.cli.support import APP_ARGV, cli
from trimcp.cli.arguments import read_arguments
from trimcp.cli.errors import EXIT_USAGE, UsageError
from trimcp.cli.mistakes import check_argument_names


def test_a_misspelled_tool_argument_is_refused_naming_the_one_meant() -> None:
    completed = cli("call", "greet", "nmae=Bob", *APP_ARGV)
    assert (completed.returncode, completed.stdout) == (EXIT_USAGE, "")
    assert completed.stderr == (
        "trimcp: tool 'greet' has no argument 'nmae'\n"
        "trimcp: did you mean 'name'? (--allow-unknown sends it as given)\n"
    )
    # The same for a name in the JSON object, and for two at once.
    json_args = cli("call", "greet", "--args", '{"name": "Bob", "exited": true}', *APP_ARGV)
    assert json_args.returncode == EXIT_USAGE
    assert "tool 'greet' has no argument 'exited'" in json_args.stderr
    assert "did you mean 'excited'?" in json_args.stderr
    both = cli("call", "greet", "nmae=Bob", "exited=true", *APP_ARGV)
    assert both.stderr.startswith("trimcp: tool 'greet' has no arguments 'nmae', 'exited'\n")
    assert "did you mean 'name' (for 'nmae'), 'excited' (for 'exited')?" in both.stderr


def test_allow_unknown_sends_the_argument_as_given() -> None:
    completed = cli("call", "greet", "name=Bob", "nmae=x", "--allow-unknown", "-v", *APP_ARGV)
    assert (completed.returncode, completed.stdout) == (0, "Hello, Bob.\n"), completed.stderr
    assert '"arguments":{"name":"Bob","nmae":"x"}' in completed.stderr


def test_a_misspelled_prompt_argument_is_refused_too() -> None:
    completed = cli("prompt", "summarize", "topc=rain", *APP_ARGV)
    assert completed.returncode == EXIT_USAGE
    assert completed.stderr == (
        "trimcp: prompt 'summarize' has no argument 'topc'\n"
        "trimcp: did you mean 'topic'? (--allow-unknown sends it as given)\n"
    )
    fine = cli("prompt", "summarize", "topic=rain", "style=long", *APP_ARGV)
    assert fine.returncode == 0, fine.stderr
    assert fine.stdout.endswith("user: Summarize rain in a long way.\n")


def test_a_uri_template_is_filled_from_its_variables_and_a_misspelled_one_refused() -> None:
    filled = cli("read", "memo://{day}", "day=monday", *APP_ARGV)
    assert (filled.returncode, filled.stdout) == (0, "nothing on monday\n"), filled.stderr
    wrong = cli("read", "memo://{day}", "dya=monday", *APP_ARGV)
    assert (wrong.returncode, wrong.stderr) == (
        EXIT_USAGE,
        "trimcp: URI template 'memo://{day}' has no variable 'dya'\ntrimcp: did you mean 'day'?\n",
    )
    not_a_template = cli("read", "memo://today", "day=monday", *APP_ARGV)
    assert not_a_template.returncode == EXIT_USAGE
    assert "'memo://today' is not a URI template" in not_a_template.stderr


def _check(schema: Mapping[str, Any], *words: str) -> None:
    check_argument_names(read_arguments(words, None).names(), schema, owner="tool 't'")


def test_names_far_from_any_are_answered_with_the_names_there_are() -> None:
    schema = {"type": "object", "properties": {"city": {}, "days": {}}}
    with pytest.raises(UsageError, match="tool 't' has no argument 'zzz'") as caught:
        _check(schema, "zzz=1")
    assert caught.value.hint == "it takes 'city', 'days' (--allow-unknown sends it as given)"
    with pytest.raises(UsageError, match="tool 't' has no argument 'x'") as caught:
        _check({"type": "object"}, "x=1")
    assert caught.value.hint == "it takes no arguments (--allow-unknown sends it as given)"


def test_a_schema_open_to_other_names_checks_none() -> None:
    _check({"type": "object", "properties": {"a": {}}, "additionalProperties": True}, "b=1")
    _check({"type": "object", "properties": {"a": {}}, "additionalProperties": {}}, "b=1")
    _check({"type": "object", "patternProperties": {"^x": {}}}, "x1=1")
    _check({"type": "object", "properties": {"a": {}}}, "a=1")


def test_allow_unknown_is_in_the_help() -> None:
    for command in ("call", "prompt"):
        completed = cli(command, "--help")
        assert "--allow-unknown" in completed.stdout, completed.stdout
