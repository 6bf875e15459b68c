"""`key=value` words follow the tool's input schema, and malformed arguments are refused
before a server is started (issue 26). Real stdio servers, run as subprocesses."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tests.cli.support import ROOT, cli, cli_json
from trimcp.cli.arguments import read_arguments
from trimcp.cli.errors import UsageError

EVERYTHING = ["--", sys.executable, str(ROOT / "examples" / "everything_server.py")]

#: The input schema trimcp gives ``def t(a: int, b: float, c: bool, d: str | None, e:
#: list[int] | None, f: Literal["x", "y"], p: P | None, h: int | str)``.
SCHEMA = {
    "type": "object",
    "properties": {
        "a": {"type": "integer"},
        "b": {"type": "number"},
        "c": {"type": "boolean"},
        "d": {"anyOf": [{"type": "string"}, {"type": "null"}], "default": None},
        "e": {"anyOf": [{"type": "array", "items": {"type": "integer"}}, {"type": "null"}]},
        "f": {"type": "string", "enum": ["x", "y"], "default": "x"},
        "p": {"anyOf": [{"$ref": "#/$defs/P"}, {"type": "null"}]},
        "h": {"anyOf": [{"type": "integer"}, {"type": "string"}]},
        "any": {"description": "no type: inferred"},
    },
    "$defs": {"P": {"type": "object", "properties": {"a": {"type": "integer"}}}},
}


def typed(*words: str) -> dict[str, object]:
    return read_arguments(words, None).typed(SCHEMA, tool="t")


def test_a_string_property_keeps_the_text() -> None:
    completed = cli("call", "greet", "name=123", *EVERYTHING)
    assert (completed.returncode, completed.stdout) == (0, "Hello, 123!\n"), completed.stderr
    assert typed("d=123", "f=true", "h=abc") == {"d": "123", "f": "true", "h": "abc"}


def test_other_properties_are_read_by_their_type() -> None:
    assert typed("a=3", "b=2", "c=True", "e=[1, 2]", 'p={"a": 1}', "h=7") == {
        "a": 3,
        "b": 2,
        "c": True,
        "e": [1, 2],
        "p": {"a": 1},
        "h": 7,
    }
    assert typed("d=null", "e=null") == {"d": None, "e": None}
    # Unknown and untyped keys keep the old inference: JSON when it parses, else text.
    assert typed("any=5", "other=[1]", "other2=plain") == {
        "any": 5,
        "other": [1],
        "other2": "plain",
    }
    # The JSON object stays as given; words go on top.
    assert read_arguments(["a=2"], '{"a": "x", "z": 1}').typed(SCHEMA) == {"a": 2, "z": 1}


@pytest.mark.parametrize(
    ("word", "wanted"),
    [
        ("a=1.5", "takes an integer, got '1.5'"),
        ("a=x", "takes an integer"),
        ("b=fast", "takes a number"),
        ("c=yes", "takes true or false"),
        ("e=1", "takes a JSON array or null"),
        ("p=[1]", "takes a JSON object or null"),
    ],
)
def test_a_value_that_fits_no_type_is_a_usage_error_naming_it(word: str, wanted: str) -> None:
    with pytest.raises(UsageError, match=f"argument '{word[0]}' of tool 't' {wanted}"):
        typed(word)


def test_a_bad_value_is_refused_with_exit_2_and_no_server_stderr() -> None:
    completed = cli("call", "slow_compute", "seconds=soon", *EVERYTHING)
    assert completed.returncode == 2, completed.stderr
    assert completed.stderr == (
        "trimcp: argument 'seconds' of tool 'slow_compute' takes a number, got 'soon'\n"
    )
    # A schema'd number still arrives as a number.
    result = cli_json("call", "slow_compute", "seconds=0", "label=7", "--json", *EVERYTHING)
    assert result["content"][0]["text"] == "Computed 7 after 0s"


def test_args_that_are_not_an_object_are_refused_before_the_server_starts(
    tmp_path: Path,
) -> None:
    marker = tmp_path / "started"
    server = ["--", sys.executable, "-c", f"open({str(marker)!r}, 'w').close()"]
    for words in (["--args", "[1]"], ["oops"], ['{"a": 1']):
        completed = cli("call", "echo", *words, *server)
        assert completed.returncode == 2, completed.stderr
        assert not marker.exists(), words
    prompt = cli("prompt", "p", "--args", '{"n": 1}', *server)
    assert prompt.returncode == 2, prompt.stderr
    assert "prompt arguments are strings" in prompt.stderr
    assert not marker.exists()
