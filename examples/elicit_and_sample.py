"""A tool that asks the user a question, then asks the client's model: elicitation and
sampling in one call, with the client that answers both, in one process.

The server's ``write_story(topic)`` tool first asks the user (``elicitation/create``)
which tone and length they want, then asks the client's LLM (``sampling/createMessage``)
to write the story, and returns it as structured output. The client answers the form as
a scripted "user" would, and the sampling request with a toy "model"; a real application
would show the form and call its LLM there.

    python examples/elicit_and_sample.py           # run the client against the server in memory
    python examples/elicit_and_sample.py --serve   # serve the tool over stdio instead

The first call is accepted; the second is declined, and the tool answers with an error
result that says so, without sampling.
"""

from __future__ import annotations

import sys
from typing import Annotated, Literal

import attrs
import trio

from trimcp import Context, Field, Server, ToolError
from trimcp.client import connect_memory
from trimcp.session import RequestContext
from trimcp.types import (
    CreateMessageRequestParams,
    CreateMessageResult,
    ElicitRequestFormParams,
    ElicitRequestParams,
    ElicitResult,
    LoggingMessageNotificationParams,
    TextContent,
)

app = Server("storyteller", version="1.0.0")


@attrs.frozen
class StoryOptions:
    """How the user wants the story."""

    tone: Annotated[
        Literal["funny", "serious", "poetic"],
        Field(
            title="Tone", option_titles={"funny": "Funny", "serious": "Serious", "poetic": "Poetic"}
        ),
    ]
    sentences: Annotated[int, Field("How many sentences", ge=1, le=5)] = 2


@attrs.frozen
class Story:
    topic: str
    tone: str
    text: str
    model: str


@app.tool()
async def write_story(topic: str, ctx: Context) -> Story:
    """Write a short story about a topic, in the tone the user picks.

    Fails (an isError result the model can read) when the user declines or dismisses the
    question.
    """
    choice = await ctx.elicit(f"How should the story about {topic} sound?", StoryOptions)
    if not choice.accepted or choice.data is None:
        await ctx.info(f"the user chose {choice.action}: no story")
        # The model reads this and can tell the user, instead of guessing a tone.
        raise ToolError(f"The user chose {choice.action!r}: no story was written.")
    options = choice.data
    answer = await ctx.sample(
        f"Write a {options.tone} story about {topic} in {options.sentences} sentences.",
        system_prompt="You are a storyteller.",
        max_tokens=200,
    )
    text = answer.content.text if isinstance(answer.content, TextContent) else ""
    return Story(topic=topic, tone=options.tone, text=text, model=answer.model)


# --- the client: a scripted user and a toy model ---------------------------------------------


class ScriptedUser:
    """Accepts the first form it sees (picking "poetic", 2 sentences), declines the rest."""

    def __init__(self) -> None:
        self.forms = 0

    async def __call__(self, ctx: RequestContext, params: ElicitRequestParams) -> ElicitResult:
        assert isinstance(params, ElicitRequestFormParams)
        self.forms += 1
        tone = params.requested_schema.properties["tone"]
        print(f"user sees: {params.message!r}, tone field: {type(tone).__name__}")
        if self.forms > 1:
            return ElicitResult(action="decline")
        return ElicitResult(action="accept", content={"tone": "poetic", "sentences": 2})


async def toy_model(ctx: RequestContext, params: CreateMessageRequestParams) -> CreateMessageResult:
    prompt = params.messages[-1].content
    asked = prompt.text if isinstance(prompt, TextContent) else "?"
    print(f"model is asked: {asked!r} (max {params.max_tokens} tokens)")
    text = "The tide writes its name on the sand. The sea forgets it, gently, every night."
    return CreateMessageResult(role="assistant", content=TextContent(text=text), model="toy-1")


async def main() -> None:
    # Log callbacks run in the client's notifier task, concurrently with the caller, so
    # they are collected and printed at the end to keep the transcript in a fixed order.
    logs: list[object] = []
    logged = trio.Event()

    def on_log(params: LoggingMessageNotificationParams) -> None:
        logs.append(params.data)
        logged.set()

    async with connect_memory(
        app,
        elicitation_handler=ScriptedUser(),
        sampling_handler=toy_model,
        on_log_message=on_log,
    ) as client:
        accepted = await client.call_tool("write_story", {"topic": "the sea"})
        story = accepted.structured_content or {}
        print(f"story ({story.get('tone')}, by {story.get('model')}): {story.get('text')}")
        declined = await client.call_tool("write_story", {"topic": "taxes"})
        [block] = declined.content
        assert isinstance(block, TextContent)
        print(f"second call: is_error={declined.is_error}, {block.text!r}")
        with trio.fail_after(5):  # the log was sent before the answer; it is on its way
            await logged.wait()
    print(f"server logs: {logs}")


if __name__ == "__main__":
    if "--serve" in sys.argv[1:]:
        app.run()
    else:
        trio.run(main)
