"""completion/complete: per-argument and per-reference completers, caps, choices, errors."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, Literal

import pytest

from tests.server.helpers import connect, wire
from trimcp.errors import INTERNAL_ERROR, INVALID_PARAMS, McpError
from trimcp.server import Context, Server
from trimcp.types import Completion, PromptReference, ResourceTemplateReference

LANGUAGES = ["python", "perl", "php", "rust", "ruby"]


def build_app() -> Server:
    app = Server("completion-test")

    @app.prompt()
    def review(language: str, style: Literal["terse", "thorough"] = "terse") -> str:
        return language

    @app.resource("repo://{owner}/{name}")
    def repo(owner: str, name: str) -> str:
        return f"{owner}/{name}"

    @app.complete_argument(prompt="review", argument="language")
    def languages(value: str) -> list[str]:
        return [lang for lang in LANGUAGES if lang.startswith(value)]

    @app.completion(ResourceTemplateReference(uri="repo://{owner}/{name}"))
    async def repo_parts(
        argument: str, value: str, arguments: Mapping[str, str], ctx: Context
    ) -> list[str]:
        if argument == "owner":
            return [f"{value}-org", f"{value}-user"]
        assert ctx.client_info is not None
        return [f"{arguments.get('owner', '?')}/{value}", ctx.client_info.name]

    @app.prompt()
    def many(n: str) -> str:
        return n

    @app.complete_argument(prompt="many", argument="n")
    def lots(value: str) -> range | Iterator[str] | Completion:
        if value == "list":
            return [str(i) for i in range(250)]  # type: ignore[return-value]
        if value == "gen":
            return (str(i) for i in range(10**9))
        if value == "completion":
            return Completion(values=["a"] * 150, total=1000)
        raise RuntimeError("boom")

    return app


async def complete(
    client: Any, ref: dict[str, Any], name: str, value: str, arguments: dict[str, str] | None = None
) -> Any:
    params: dict[str, Any] = {"ref": ref, "argument": {"name": name, "value": value}}
    if arguments is not None:
        params["context"] = {"arguments": arguments}
    return wire(await client.send_request("completion/complete", params))["completion"]


async def test_argument_completer(autojump_clock: Any) -> None:
    async with connect(build_app()) as (client, _):
        ref = {"type": "ref/prompt", "name": "review"}
        assert await complete(client, ref, "language", "p") == {
            "values": ["python", "perl", "php"],
            "total": 3,
            "hasMore": False,
        }
        # No completer, but a Literal: its choices by prefix.
        assert (await complete(client, ref, "style", "TH"))["values"] == ["thorough"]
        # No completer and nothing to go on: empty.
        assert (await complete(client, {"type": "ref/prompt", "name": "many"}, "x", ""))[
            "values"
        ] == []


async def test_reference_completer_with_context(autojump_clock: Any) -> None:
    async with connect(build_app()) as (client, _):
        ref = {"type": "ref/resource", "uri": "repo://{owner}/{name}"}
        assert (await complete(client, ref, "owner", "acme"))["values"] == ["acme-org", "acme-user"]
        assert (await complete(client, ref, "name", "tri", {"owner": "acme"}))["values"] == [
            "acme/tri",
            "test-client",
        ]


async def test_results_are_capped_at_100(autojump_clock: Any) -> None:
    async with connect(build_app()) as (client, _):
        ref = {"type": "ref/prompt", "name": "many"}
        listed = await complete(client, ref, "n", "list")
        assert (len(listed["values"]), listed["total"], listed["hasMore"]) == (100, 250, True)
        generated = await complete(client, ref, "n", "gen")
        assert len(generated["values"]) == 100
        assert generated["hasMore"] is True
        assert "total" not in generated
        given = await complete(client, ref, "n", "completion")
        assert (len(given["values"]), given["total"], given["hasMore"]) == (100, 1000, True)
        with pytest.raises(McpError) as info:
            await complete(client, ref, "n", "other")
        assert info.value.code == INTERNAL_ERROR


@pytest.mark.parametrize(
    "ref", [{"type": "ref/prompt", "name": "nope"}, {"type": "ref/resource", "uri": "x://{y}"}]
)
async def test_unknown_reference_is_32602(autojump_clock: Any, ref: dict[str, Any]) -> None:
    async with connect(build_app()) as (client, _):
        with pytest.raises(McpError) as info:
            await complete(client, ref, "a", "")
    assert info.value.code == INVALID_PARAMS


def test_registration_errors() -> None:
    app = Server("bad")
    with pytest.raises(TypeError, match="exactly one"):
        app.complete_argument(argument="a")
    with pytest.raises(TypeError, match="completer takes"):

        @app.complete_argument(prompt="p", argument="a")
        def too_many(a: str, b: str, c: str) -> list[str]:
            return []

    app.completion(PromptReference(name="p"))(lambda argument, value: [])
    with pytest.raises(ValueError, match="exists"):
        app.completion(PromptReference(name="p"))(lambda argument, value: [])
