"""examples/elicit_and_sample.py: the tool elicits a typed choice, then samples; the
in-file client answers both. Checked as a transcript, and in memory with other answers."""

from __future__ import annotations

from typing import Any

import pytest
import trio

from tests.examples.helpers import load_example, run_example
from trimcp import McpError
from trimcp.client import connect_memory
from trimcp.errors import INVALID_PARAMS
from trimcp.session import RequestContext
from trimcp.types import (
    CreateMessageRequestParams,
    CreateMessageResult,
    ElicitRequestParams,
    ElicitResult,
    TextContent,
)

example = load_example("elicit_and_sample")


def test_transcript() -> None:
    assert run_example("elicit_and_sample") == [
        "user sees: 'How should the story about the sea sound?', "
        "tone field: TitledSingleSelectEnumSchema",
        "model is asked: 'Write a poetic story about the sea in 2 sentences.' (max 200 tokens)",
        "story (poetic, by toy-1): The tide writes its name on the sand. "
        "The sea forgets it, gently, every night.",
        "user sees: 'How should the story about taxes sound?', "
        "tone field: TitledSingleSelectEnumSchema",
        "second call: is_error=True, \"The user chose 'decline': no story was written.\"",
        "server logs: ['the user chose decline: no story']",
    ]


async def model(ctx: RequestContext, params: CreateMessageRequestParams) -> CreateMessageResult:
    prompt = params.messages[-1].content
    assert isinstance(prompt, TextContent)
    return CreateMessageResult(
        role="assistant", content=TextContent(text=prompt.text.upper()), model="upper"
    )


async def test_the_users_choice_reaches_the_model(autojump_clock: trio.abc.Clock) -> None:
    forms: list[Any] = []

    async def user(ctx: RequestContext, params: ElicitRequestParams) -> ElicitResult:
        forms.append(params)
        return ElicitResult(action="accept", content={"tone": "serious", "sentences": 4})

    async with connect_memory(
        example.app, elicitation_handler=user, sampling_handler=model
    ) as client:
        result = await client.call_tool("write_story", {"topic": "rain"})
    assert result.structured_content == {
        "topic": "rain",
        "tone": "serious",
        "model": "upper",
        "text": "WRITE A SERIOUS STORY ABOUT RAIN IN 4 SENTENCES.",
    }
    [form] = forms
    schema = form.requested_schema
    assert schema.required == ["tone"]
    assert [option.const for option in schema.properties["tone"].one_of] == [
        "funny",
        "serious",
        "poetic",
    ]
    assert schema.properties["sentences"].default == 2


async def test_a_cancelled_form_writes_no_story(autojump_clock: trio.abc.Clock) -> None:
    sampled: list[object] = []

    async def user(ctx: RequestContext, params: ElicitRequestParams) -> ElicitResult:
        return ElicitResult(action="cancel")

    async def spy(ctx: RequestContext, params: CreateMessageRequestParams) -> CreateMessageResult:
        sampled.append(params)
        return await model(ctx, params)

    async with connect_memory(
        example.app, elicitation_handler=user, sampling_handler=spy
    ) as client:
        result = await client.call_tool("write_story", {"topic": "rain"})
    assert result.is_error
    [block] = result.content
    assert isinstance(block, TextContent)
    assert block.text == "The user chose 'cancel': no story was written."
    assert sampled == []


async def test_an_answer_outside_the_form_is_the_clients_error(
    autojump_clock: trio.abc.Clock,
) -> None:
    # sentences=6 breaks the form's le=5: the server answers the call with -32602 naming
    # the field, and never samples.
    async def user(ctx: RequestContext, params: ElicitRequestParams) -> ElicitResult:
        return ElicitResult(action="accept", content={"tone": "funny", "sentences": 6})

    async with connect_memory(
        example.app, elicitation_handler=user, sampling_handler=model
    ) as client:
        with pytest.raises(McpError) as caught:
            await client.call_tool("write_story", {"topic": "rain"})
    assert caught.value.code == INVALID_PARAMS
    assert caught.value.data == {"path": "sentences", "reason": "must be at most 5"}


async def test_a_client_that_cannot_elicit_gets_a_tool_error(
    autojump_clock: trio.abc.Clock,
) -> None:
    async with connect_memory(example.app, sampling_handler=model) as client:
        result = await client.call_tool("write_story", {"topic": "rain"})
    assert result.is_error
