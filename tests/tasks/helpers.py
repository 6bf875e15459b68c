"""A server with task tools, served in memory inside its own task runner."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import trio

import trimcp
from trimcp.client import Client
from trimcp.server.tasks import TaskOptions
from trimcp.testing import open_test_client
from trimcp.types import CreateMessageResult, ElicitResult, TextContent

#: Set by tools that saw their cancellation (name -> count).
cancelled: dict[str, int] = {}


def make_app(options: TaskOptions | None = None, **kwargs: Any) -> trimcp.Server:
    app = trimcp.Server("tasks-test", task_options=options, **kwargs)

    @app.tool(task_support="optional")
    async def sleep(seconds: int, ctx: trimcp.Context) -> str:
        """Sleep, then say so."""
        try:
            await trio.sleep(seconds)
        except trio.Cancelled:
            cancelled["sleep"] = cancelled.get("sleep", 0) + 1
            raise
        return f"slept {seconds}"

    @app.tool(task_support="required")
    async def ask_name(ctx: trimcp.Context) -> str:
        """Ask the user for a name, then greet."""
        outcome = await ctx.elicit(
            "Your name?", {"type": "object", "properties": {"name": {"type": "string"}}}
        )
        if outcome.action != "accept":
            return f"no name ({outcome.action})"
        await trio.sleep(1)
        assert outcome.data is not None
        return f"hello {outcome.data['name']}"

    @app.tool(task_support="optional")
    async def haiku(topic: str, ctx: trimcp.Context) -> str:
        """Ask the client's LLM for a haiku."""
        result = await ctx.sample(f"A haiku about {topic}", max_tokens=50)
        assert isinstance(result.content, TextContent)
        return result.content.text

    @app.tool(task_support="optional")
    async def fail(ctx: trimcp.Context) -> str:
        """Fail with a tool error."""
        raise trimcp.ToolError("it broke")

    @app.tool()
    async def plain() -> str:
        """Never a task."""
        return "plain"

    return app


async def answer_elicitation(ctx: Any, params: Any) -> ElicitResult:
    return ElicitResult(action="accept", content={"name": "Ada"})


async def answer_sampling(ctx: Any, params: Any) -> CreateMessageResult:
    return CreateMessageResult(
        role="assistant", content=TextContent(text="old pond, frog"), model="test"
    )


@asynccontextmanager
async def serve(app: trimcp.Server, **client_kwargs: Any) -> AsyncIterator[Client]:
    """The app's task runner outlives the client (as under an HTTP server)."""
    client_kwargs.setdefault("elicitation_handler", answer_elicitation)
    client_kwargs.setdefault("sampling_handler", answer_sampling)
    async with app.tasks.open(), open_test_client(app, **client_kwargs) as client:
        yield client
