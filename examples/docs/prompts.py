"""The example of docs/prompts.md: a prompt with typed arguments and several messages.

Run it as a stdio server (``python examples/docs/prompts.py``), or watch a client use it in
memory (``python examples/docs/prompts.py --demo``).
"""

from __future__ import annotations

import sys
from typing import Annotated, Literal

import trio

from trimcp.server import PromptMessage, Server, assistant_message, user_message

app = Server("reviewer")


@app.prompt(title="Code review")
def review(
    code: Annotated[str, "The code to review"],
    focus: Literal["bugs", "style"] = "bugs",
) -> list[PromptMessage]:
    """Ask for a review of some code."""
    return [
        user_message(f"Review this code, looking for {focus}:\n\n{code}"),
        assistant_message("Here is what I found:"),
    ]


async def demo() -> None:
    from trimcp.client import connect_memory

    async with connect_memory(app) as client:
        (prompt,) = (await client.list_prompts()).prompts
        print(prompt.name, [(a.name, a.required) for a in prompt.arguments or []])
        result = await client.get_prompt("review", {"code": "x = 1", "focus": "style"})
        for message in result.messages:
            print(message.role, message.content.text)  # type: ignore[union-attr]


if __name__ == "__main__":
    if "--demo" in sys.argv:
        trio.run(demo)
    else:
        app.run()
