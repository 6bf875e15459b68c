"""The demo (the README's first command): trimcp clients talk to trimcp servers over stdio.

Part 1 launches ``examples/everything_server.py`` (the server the official conformance
suite checks) and drives it: tools, progress, server log messages, sampling and elicitation
answered by this client, resources, a resource template, prompts and completion.
Part 2 launches ``examples/demo_server.py`` and cancels a slow call on a deadline: the
server's handler is cancelled too. Everything is printed as a transcript.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import trio

import trimcp
from trimcp.session import RequestContext
from trimcp.types import (
    CreateMessageRequestParams,
    CreateMessageResult,
    ElicitRequestParams,
    ElicitResult,
    PromptReference,
    TextContent,
)

HERE = Path(__file__).parent


def say(text: str) -> None:
    print(text, flush=True)


def show_progress(progress: float, total: float | None, message: str | None) -> None:
    say(f"    progress {progress:g}/{total:g}: {message}")


async def answer_sampling(ctx: RequestContext, params: CreateMessageRequestParams) -> Any:
    say("    <- the server asks our model (sampling/createMessage); we answer")
    return CreateMessageResult(
        role="assistant", content=TextContent(text="Paris"), model="demo-model"
    )


async def answer_elicitation(ctx: RequestContext, params: ElicitRequestParams) -> Any:
    say(f"    <- the server asks the user: {params.message!r}; we fill in the form")
    return ElicitResult(action="accept", content={"username": "ada", "email": "ada@example.com"})


async def on_log(params: Any) -> None:
    say(f"    [server log {params.level}] {params.data}")


def first_text(result: Any) -> str:
    return next(block.text for block in result.content if isinstance(block, TextContent))


async def everything() -> None:
    argv = [sys.executable, str(HERE / "everything_server.py")]
    async with trimcp.connect_stdio(
        argv,
        sampling_handler=answer_sampling,
        elicitation_handler=answer_elicitation,
        on_log_message=on_log,
        log_level="info",  # 2026-07-28: asked for in every request; 2025: one setLevel
    ) as client:
        info = client.server_info
        say(f"connected to {info.name} {info.version} (protocol {client.protocol_version})")
        tools = [tool async for tool in client.iter_tools()]
        say(f"  {len(tools)} tools, e.g. {', '.join(t.name for t in tools[:4])}, ...")

        say("  call test_simple_text:")
        say(f"    -> {first_text(await client.call_tool('test_simple_text'))!r}")
        say("  call test_tool_with_progress:")
        result = await client.call_tool("test_tool_with_progress", on_progress=show_progress)
        say(f"    -> {first_text(result)!r}")
        say("  call test_tool_with_logging:")
        result = await client.call_tool("test_tool_with_logging")
        say(f"    -> {first_text(result)!r}")
        say("  call test_sampling:")
        result = await client.call_tool("test_sampling", {"prompt": "Capital of France?"})
        say(f"    -> {first_text(result)!r}")
        say("  call test_elicitation:")
        result = await client.call_tool("test_elicitation", {"message": "Who are you?"})
        say(f"    -> {first_text(result)!r}")
        say("  call test_error_handling:")
        result = await client.call_tool("test_error_handling")
        say(f"    -> isError={result.is_error}: {first_text(result)!r}")

        read = await client.read_resource("test://static-text")
        say(f"  read test://static-text -> {read.contents[0].text!r}")
        read = await client.read_resource("test://template/42/data")
        say(f"  read test://template/42/data -> {read.contents[0].text}")
        prompt = await client.get_prompt(
            "test_prompt_with_arguments", {"arg1": "apples", "arg2": "pears"}
        )
        say(f"  prompt test_prompt_with_arguments -> {prompt.messages[0].content.text!r}")
        completion = await client.complete(
            PromptReference(name="test_prompt_with_arguments"), "arg1", "te"
        )
        say(f"  complete arg1='te' -> {completion.completion.values}")


async def cancellation() -> None:
    async with trimcp.connect_stdio([sys.executable, str(HERE / "demo_server.py")]) as client:
        say(f"connected to {client.server_info.name} {client.server_info.version}")
        say("  call count_slowly(to=10), cancelled after 2.5 s:")
        with trio.move_on_after(2.5) as deadline:
            await client.call_tool("count_slowly", {"to": 10}, on_progress=show_progress)
        if deadline.cancelled_caught:
            say("    cancelled: the server was sent notifications/cancelled")
        result = await client.call_tool("add", {"a": 2, "b": 40})
        say(f"  the session goes on: add(2, 40) -> {result.structured_content}")


async def main() -> None:
    say("== part 1: the everything server ==")
    await everything()
    say("== part 2: cancellation ==")
    await cancellation()
    say("closed both sessions; both server processes have exited")


if __name__ == "__main__":
    trio.run(main)
