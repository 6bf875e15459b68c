"""Newcomer mistakes fail at registration with a message naming the function and the fix
(issue 16): nothing is registered silently, nothing fails only when a client calls it."""

from __future__ import annotations

import re
import socket
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest

from trimcp import Server


def test_bare_resource_decorator_fails_at_once_naming_the_function() -> None:
    app = Server("t")

    def today() -> str:
        return "x"

    with pytest.raises(TypeError, match=r"@app\.resource needs the resource's URI.*'today'"):
        app.resource(today)  # type: ignore[arg-type]  # what a bare @app.resource does
    assert len(list(app.resources)) == 0


def test_non_string_tool_and_prompt_names_are_refused() -> None:
    app = Server("t")
    with pytest.raises(TypeError, match=r"@app\.tool\(\) takes the tool's name as a str"):
        app.tool(123)  # type: ignore[call-overload]
    with pytest.raises(TypeError, match=r"@app\.prompt\(\) takes the prompt's name as a str"):
        app.prompt(b"x")  # type: ignore[call-overload]


def test_bare_tool_and_prompt_decorators_work() -> None:
    app = Server("t")

    @app.tool
    def add(a: int, b: int) -> int:
        return a + b

    @app.prompt
    def ask(topic: str) -> str:
        return topic

    assert app.get_tool("add") is not None
    assert [p.name for p in app.prompts] == ["ask"]


def test_a_class_is_refused_as_a_tool() -> None:
    app = Server("t")

    class Adder:
        def __init__(self, a: int) -> None:
            self.a = a

    with pytest.raises(TypeError, match=r"Tool '.*Adder' is a class; register a function"):
        app.add_tool(Adder)


@pytest.mark.parametrize("kind", ["async", "sync"])
def test_a_generator_function_is_refused_as_a_tool(kind: str) -> None:
    app = Server("t")

    async def agen(n: int) -> AsyncIterator[int]:
        yield n

    def gen(n: int) -> Iterator[int]:
        yield n

    fn: Any = agen if kind == "async" else gen
    with pytest.raises(TypeError, match=r"Tool '.*gen' is a generator function.*return it"):
        app.add_tool(fn)


def test_unsupported_parameter_type_names_the_tool_and_parameter() -> None:
    app = Server("t")

    def connect(sock: socket.socket) -> str:
        return ""

    with pytest.raises(TypeError, match=r"Tool 'connect', parameter 'sock': .*use str, int"):
        app.add_tool(connect)


def test_unsupported_return_type_names_the_tool() -> None:
    app = Server("t")

    def opener() -> socket.socket:
        raise AssertionError

    with pytest.raises(TypeError, match=r"Tool 'opener', return type: "):
        app.add_tool(opener)


def test_unresolvable_annotation_names_the_tool_and_parameter() -> None:
    app = Server("t")

    def lookup(key: Nope) -> str:  # type: ignore[name-defined]  # noqa: F821
        return ""

    with pytest.raises(TypeError, match=r"Tool '.*lookup', parameter 'key': .*'Nope'"):
        app.add_tool(lookup)


def test_prompt_argument_type_errors_name_the_prompt_and_parameter() -> None:
    app = Server("t")

    def summarize(depth: socket.socket) -> str:
        return ""

    with pytest.raises(TypeError, match=r"Prompt 'summarize', parameter 'depth': "):
        app.add_prompt(summarize)


def test_prompt_list_argument_is_refused_at_registration() -> None:
    # A prompt argument arrives as one string; list[str] used to accept it as a
    # one-element list, contrary to the docs (issue 16).
    app = Server("t")

    def tagged(tags: list[str]) -> str:
        return ",".join(tags)

    with pytest.raises(TypeError, match=r"Prompt 'tagged', parameter 'tags': .*single string"):
        app.add_prompt(tagged)


def test_template_variable_type_errors_name_the_template_and_variable() -> None:
    app = Server("t")

    def read(sock: socket.socket) -> str:
        return ""

    with pytest.raises(TypeError, match=r"Resource template 'x://\{sock\}', parameter 'sock'"):
        app.add_resource(read, "x://{sock}")


def test_exploded_template_variable_still_takes_a_list() -> None:
    app = Server("t")

    @app.resource("files://{/path*}")
    def read(path: list[str]) -> str:
        return "/".join(path)

    assert app.templates.entry("files://{/path*}") is not None


@pytest.mark.parametrize(
    ("uri", "fix"),
    [
        ("Notes://plan", "'notes://plan'"),
        ("notes://%70lan", "'notes://plan'"),
        ("notes://a b", "'notes://a%20b'"),
        ("notes://a/%2fb", "'notes://a/%2Fb'"),
        ("NOTES://{name}", "'notes://'"),
    ],
)
def test_resource_uris_not_in_canonical_form_are_refused_with_the_form_to_write(
    uri: str, fix: str
) -> None:
    # Reads are looked up in canonical form: any other form could never be read.
    app = Server("t")
    with pytest.raises(ValueError, match=f"not in canonical form: .* as {re.escape(fix)}"):
        app.add_resource(lambda **_: "x", uri)
    with pytest.raises(ValueError, match=r"'\.\.' path segment"):
        app.add_resource(lambda: "x", "notes://a/../b")
    assert len(app.resources) == len(app.templates) == 0
