"""Prompts: arguments from parameters, message shapes, errors, runtime changes."""

from __future__ import annotations

import enum
from typing import Annotated, Any, Literal

import pytest
import trio
import trio.testing

from tests.server.helpers import ScriptedClient, connect, wire
from trimcp.errors import INTERNAL_ERROR, INVALID_PARAMS, McpError
from trimcp.server import Context, PromptMessage, Server, assistant_message, user_message
from trimcp.types import EmbeddedResource, GetPromptResult, ImageContent, TextResourceContents


class Tone(enum.Enum):
    FRIENDLY = "friendly"
    FORMAL = "formal"


def build_app() -> Server:
    app = Server("prompts-test")

    @app.prompt(title="Code review", icons=[{"src": "https://example.com/r.png"}])
    def review(code: Annotated[str, "The code to review"], language: str = "python") -> str:
        """Review some code."""
        return f"Review this {language}:\n{code}"

    @app.prompt("conversation")
    def chat(
        topic: str,
        tone: Tone = Tone.FRIENDLY,
        rounds: int = 1,
        strict: bool = False,
        style: Literal["short", "long"] | None = None,
    ) -> list[Any]:
        """A conversation.

        Args:
            topic: What to talk about.
        """
        return [
            f"Let's talk about {topic} ({tone.value}, {rounds}, {strict}, {style})",
            assistant_message("Sure."),
            {"role": "user", "content": {"type": "text", "text": "Go on."}},
            ImageContent(data="AAAA", mime_type="image/png"),
            PromptMessage(
                role="assistant",
                content=EmbeddedResource(
                    resource=TextResourceContents(uri="file:///notes.txt", text="notes")
                ),
            ),
        ]

    @app.prompt()
    async def whole(ctx: Context) -> GetPromptResult:
        assert ctx.client_info is not None
        return GetPromptResult(
            messages=[user_message(f"from {ctx.client_info.name}")], description="custom"
        )

    @app.prompt()
    def broken() -> str:
        raise RuntimeError("internal detail")

    @app.prompt()
    def wrong() -> int:
        return 3

    return app


async def test_listing(autojump_clock: Any) -> None:
    async with connect(build_app()) as (client, _):
        prompts = wire(await client.send_request("prompts/list"))["prompts"]
    assert prompts[0] == {
        "name": "review",
        "title": "Code review",
        "description": "Review some code.",
        "arguments": [
            {"name": "code", "description": "The code to review", "required": True},
            {"name": "language", "required": False},
        ],
        "icons": [{"src": "https://example.com/r.png"}],
    }
    assert prompts[1]["name"] == "conversation"
    assert prompts[1]["arguments"][0] == {
        "name": "topic",
        "description": "What to talk about.",
        "required": True,
    }
    assert [p["name"] for p in prompts] == ["review", "conversation", "whole", "broken", "wrong"]
    assert "arguments" not in prompts[2]


async def test_getting(autojump_clock: Any) -> None:
    async with connect(build_app()) as (client, _):
        result = wire(
            await client.send_request(
                "prompts/get", {"name": "review", "arguments": {"code": "x = 1"}}
            )
        )
        assert result == {
            "description": "Review some code.",
            "messages": [
                {"role": "user", "content": {"type": "text", "text": "Review this python:\nx = 1"}}
            ],
        }
        result = wire(
            await client.send_request(
                "prompts/get",
                {
                    "name": "conversation",
                    "arguments": {
                        "topic": "tea",
                        "tone": "formal",
                        "rounds": "3",
                        "strict": "true",
                        "style": "short",
                    },
                },
            )
        )
        messages = result["messages"]
        assert messages[0]["content"]["text"] == "Let's talk about tea (formal, 3, True, short)"
        assert [m["role"] for m in messages] == ["user", "assistant", "user", "user", "assistant"]
        assert [m["content"]["type"] for m in messages] == [
            "text",
            "text",
            "text",
            "image",
            "resource",
        ]
        result = wire(await client.send_request("prompts/get", {"name": "whole"}))
        assert result == {
            "description": "custom",
            "messages": [{"role": "user", "content": {"type": "text", "text": "from test-client"}}],
        }


@pytest.mark.parametrize(
    ("params", "fragment"),
    [
        ({"name": "missing"}, "Unknown prompt: missing"),
        ({"name": "review"}, "Missing required argument 'code'"),
        (
            {"name": "conversation", "arguments": {"topic": "t", "rounds": "many"}},
            "Invalid argument 'rounds'",
        ),
        (
            {"name": "conversation", "arguments": {"topic": "t", "tone": "rude"}},
            "Invalid argument 'tone'",
        ),
    ],
)
async def test_bad_gets_are_32602(autojump_clock: Any, params: Any, fragment: str) -> None:
    async with connect(build_app()) as (client, _):
        with pytest.raises(McpError) as info:
            await client.send_request("prompts/get", params)
    assert info.value.code == INVALID_PARAMS
    assert fragment in info.value.message


@pytest.mark.parametrize("name", ["broken", "wrong"])
async def test_failing_prompts_are_32603(autojump_clock: Any, name: str) -> None:
    async with connect(build_app()) as (client, _):
        with pytest.raises(McpError) as info:
            await client.send_request("prompts/get", {"name": name})
    assert info.value.code == INTERNAL_ERROR
    assert "detail" not in info.value.message


async def test_prompts_change_at_runtime(autojump_clock: Any) -> None:
    app = build_app()
    recorder = ScriptedClient()
    async with connect(app, recorder) as (client, _):
        handle = app.prompts.entry("review")
        assert handle is not None
        handle.disable()
        await trio.testing.wait_all_tasks_blocked()
        assert recorder.methods() == ["notifications/prompts/list_changed"]
        with pytest.raises(McpError):
            await client.send_request("prompts/get", {"name": "review", "arguments": {"code": ""}})
        app.remove_prompt("whole")
        await trio.testing.wait_all_tasks_blocked()
        names = [p.name for p in (await client.send_request("prompts/list")).prompts]
        assert names == ["conversation", "broken", "wrong"]


def test_prompt_arguments_must_come_from_strings() -> None:
    app = Server("bad")
    with pytest.raises(TypeError, match="Cannot take"):

        @app.prompt()
        def takes_list(items: list[int]) -> str:
            return ""
