"""Context: sampling, elicitation and roots round trips against a client-side handler, and the
friendly errors when the client lacks a capability."""

from __future__ import annotations

import dataclasses
import enum
from typing import Annotated, Any, Literal, TypedDict

import attrs
import pytest
import trio.testing

from tests.server.helpers import ScriptedClient, call_tool, connect, text_of, wire
from trimcp import serde
from trimcp.errors import INVALID_PARAMS, McpError
from trimcp.server import Context, ElicitationOutcome, Field, Server
from trimcp.server.elicitation import build_form
from trimcp.session import RequestContext
from trimcp.types import (
    ClientCapabilities,
    CreateMessageResult,
    ElicitationCapability,
    ElicitResult,
    ListRootsResult,
    Root,
    RootsCapability,
    SamplingCapability,
    TextContent,
)

EVERYTHING = ClientCapabilities(
    sampling=SamplingCapability(tools={}, context={}),
    elicitation=ElicitationCapability(form={}, url={}),
    roots=RootsCapability(list_changed=True),
)


class Size(enum.Enum):
    SMALL = "s"
    LARGE = "l"


@attrs.frozen
class Order:
    """An order.

    Attributes:
        name: Who orders.
    """

    name: str
    quantity: Annotated[int, Field(title="How many", ge=1, le=10)] = 1
    size: Annotated[Size, Field(option_titles={"s": "Small", "l": "Large"})] = Size.SMALL
    gift: bool = False
    email: Annotated[str | None, Field(format="email")] = None
    extras: list[Literal["milk", "sugar"]] = attrs.Factory(list)


class Contact(TypedDict):
    phone: str


@dataclasses.dataclass
class Nested:
    inner: Contact


async def answer_sampling(ctx: RequestContext) -> CreateMessageResult:
    text = ctx.params.messages[-1].content.text
    return CreateMessageResult(
        role="assistant", content=TextContent(text=f"echo: {text}"), model="test-model"
    )


async def answer_roots(ctx: RequestContext) -> ListRootsResult:
    return ListRootsResult(roots=[Root(uri="file:///work", name="work")])


def elicitation_answer(action: str, content: dict[str, Any] | None = None) -> Any:
    async def answer(ctx: RequestContext) -> ElicitResult:
        return ElicitResult(action=action, content=content)  # type: ignore[arg-type]

    return answer


def build_app() -> tuple[Server, list[Any]]:
    app = Server("context-test")
    outcomes: list[Any] = []

    @app.tool()
    async def ask_llm(ctx: Context, tools: bool = False, context: bool = False) -> str:
        result = await ctx.sample(
            ["first", "second"],
            max_tokens=50,
            system_prompt="Be brief.",
            temperature=0.2,
            stop_sequences=["END"],
            model_preferences=["claude", "gpt"],
            include_context="thisServer" if context else None,
            tools=["order"] if tools else None,
            tool_choice="auto" if tools else None,
        )
        assert isinstance(result.content, TextContent)
        return result.content.text

    @app.tool()
    async def order(ctx: Context) -> str:
        outcome: ElicitationOutcome[Order] = await ctx.elicit("Your order?", Order)
        outcomes.append(outcome)
        return outcome.action

    @app.tool()
    async def raw_form(ctx: Context) -> str:
        schema = {"type": "object", "properties": {"ok": {"type": "boolean"}}}
        outcome = await ctx.elicit("OK?", schema)
        outcomes.append(outcome)
        return outcome.action

    @app.tool()
    async def visit(ctx: Context) -> str:
        outcome = await ctx.elicit_url("Log in", "https://example.com/login", "e-1")
        await ctx.notify_elicitation_complete("e-1")
        return outcome.action

    @app.tool()
    async def roots(ctx: Context) -> list[str]:
        return [root.uri for root in await ctx.list_roots()]

    @app.tool()
    async def read_own(ctx: Context) -> str:
        (contents,) = await ctx.read_resource("mem://note")
        return contents.text  # type: ignore[union-attr]

    @app.resource("mem://note")
    def note() -> str:
        return "a note"

    return app, outcomes


def full_client(**overrides: Any) -> ScriptedClient:
    answers = {
        "sampling__createMessage": answer_sampling,
        "roots__list": answer_roots,
        "elicitation__create": elicitation_answer(
            "accept", {"name": "Ann", "quantity": 3, "size": "l", "extras": ["milk"]}
        ),
    }
    answers.update(overrides)
    return ScriptedClient(**answers)


async def test_sampling_round_trip(autojump_clock: Any) -> None:
    app, _ = build_app()
    client_handler = full_client()
    async with connect(app, client_handler, capabilities=EVERYTHING) as (client, _):
        result = await call_tool(client, "ask_llm", {"tools": True, "context": True})
    assert text_of(result) == "echo: second"
    ((method, params),) = client_handler.requests
    assert method == "sampling/createMessage"
    sent = wire(params)
    assert sent["messages"] == [
        {"role": "user", "content": {"type": "text", "text": "first"}},
        {"role": "user", "content": {"type": "text", "text": "second"}},
    ]
    assert sent["maxTokens"] == 50
    assert sent["systemPrompt"] == "Be brief."
    assert sent["temperature"] == 0.2
    assert sent["stopSequences"] == ["END"]
    assert sent["modelPreferences"] == {"hints": [{"name": "claude"}, {"name": "gpt"}]}
    assert sent["includeContext"] == "thisServer"
    assert sent["toolChoice"] == {"mode": "auto"}
    assert [tool["name"] for tool in sent["tools"]] == ["order"]


@pytest.mark.parametrize(
    ("capabilities", "arguments", "fragment"),
    [
        (ClientCapabilities(), {}, "does not support sampling"),
        (
            ClientCapabilities(sampling=SamplingCapability()),
            {"tools": True},
            "'sampling.tools' capability",
        ),
        (
            ClientCapabilities(sampling=SamplingCapability()),
            {"context": True},
            "'sampling.context' capability",
        ),
    ],
)
async def test_sampling_needs_the_capability(
    autojump_clock: Any, capabilities: ClientCapabilities, arguments: Any, fragment: str
) -> None:
    app, _ = build_app()
    client_handler = full_client()
    async with connect(app, client_handler, capabilities=capabilities) as (client, _):
        result = await call_tool(client, "ask_llm", arguments)
    assert result.is_error is True
    assert fragment in text_of(result)
    assert "test-client" in text_of(result)
    assert client_handler.requests == []


async def test_elicitation_accept_decline_cancel(autojump_clock: Any) -> None:
    app, outcomes = build_app()
    client_handler = full_client()
    async with connect(app, client_handler, capabilities=EVERYTHING) as (client, _):
        assert text_of(await call_tool(client, "order")) == "accept"
        client_handler.answers["elicitation/create"] = elicitation_answer("decline")
        assert text_of(await call_tool(client, "order")) == "decline"
        client_handler.answers["elicitation/create"] = elicitation_answer("cancel")
        assert text_of(await call_tool(client, "order")) == "cancel"
    accepted, declined, cancelled = outcomes
    assert (accepted.accepted, declined.declined, cancelled.cancelled) == (True, True, True)
    assert accepted.data == Order(name="Ann", quantity=3, size=Size.LARGE, extras=["milk"])
    assert accepted.content == {"name": "Ann", "quantity": 3, "size": "l", "extras": ["milk"]}
    assert (declined.data, cancelled.data) == (None, None)
    method, params = client_handler.requests[0]
    assert method == "elicitation/create"
    assert wire(params) == {
        "mode": "form",
        "message": "Your order?",
        "requestedSchema": {
            "type": "object",
            "properties": {
                "name": {"type": "string", "description": "Who orders."},
                "quantity": {
                    "type": "integer",
                    "title": "How many",
                    "minimum": 1,
                    "maximum": 10,
                    "default": 1,
                },
                "size": {
                    "type": "string",
                    "oneOf": [{"const": "s", "title": "Small"}, {"const": "l", "title": "Large"}],
                    "default": "s",
                },
                "gift": {"type": "boolean", "default": False},
                "email": {"type": "string", "format": "email"},
                "extras": {"type": "array", "items": {"type": "string", "enum": ["milk", "sugar"]}},
            },
            "required": ["name"],
        },
    }


async def test_elicitation_on_2025_06_18_uses_the_older_form(autojump_clock: Any) -> None:
    app = Server("old")

    @attrs.frozen
    class Pick:
        size: Annotated[Size, Field(option_titles={"s": "Small", "l": "Large"})]

    @app.tool()
    async def pick(ctx: Context) -> str:
        outcome = await ctx.elicit("Size?", Pick)
        return outcome.data.size.value if outcome.data else "none"

    client_handler = full_client(elicitation__create=elicitation_answer("accept", {"size": "s"}))
    caps = ClientCapabilities(elicitation=ElicitationCapability())
    async with connect(app, client_handler, version="2025-06-18", capabilities=caps) as (c, _):
        assert text_of(await call_tool(c, "pick")) == "s"
    params = wire(client_handler.requests[0][1])
    assert "mode" not in params
    assert params["requestedSchema"]["properties"]["size"] == {
        "type": "string",
        "enum": ["s", "l"],
        "enumNames": ["Small", "Large"],
    }


async def test_elicitation_with_a_dict_schema_and_a_bad_answer(autojump_clock: Any) -> None:
    app, outcomes = build_app()
    client_handler = full_client(elicitation__create=elicitation_answer("accept", {"ok": True}))
    async with connect(app, client_handler, capabilities=EVERYTHING) as (client, _):
        assert text_of(await call_tool(client, "raw_form")) == "accept"
        assert outcomes[-1].data == {"ok": True}
        client_handler.answers["elicitation/create"] = elicitation_answer(
            "accept", {"name": "Ann", "quantity": 99}
        )
        with pytest.raises(McpError) as info:
            await call_tool(client, "order")
    assert info.value.code == INVALID_PARAMS
    assert info.value.data == {"path": "quantity", "reason": "must be at most 10"}


@pytest.mark.parametrize(
    ("version", "capabilities", "fragment"),
    [
        ("2025-03-26", EVERYTHING, "needs protocol version 2025-06-18"),
        ("2025-11-25", ClientCapabilities(), "does not support elicitation"),
        (
            "2025-11-25",
            ClientCapabilities(elicitation=ElicitationCapability(url={})),
            "only URL-mode",
        ),
    ],
)
async def test_elicitation_needs_support(
    autojump_clock: Any, version: str, capabilities: ClientCapabilities, fragment: str
) -> None:
    app, _ = build_app()
    async with connect(app, full_client(), version=version, capabilities=capabilities) as (c, _):
        result = await call_tool(c, "order")
    assert result.is_error is True
    assert fragment in text_of(result)


async def test_url_elicitation_and_its_completion(autojump_clock: Any) -> None:
    app, _ = build_app()
    client_handler = full_client(elicitation__create=elicitation_answer("accept"))
    async with connect(app, client_handler, capabilities=EVERYTHING) as (client, _):
        assert text_of(await call_tool(client, "visit")) == "accept"
        await trio.testing.wait_all_tasks_blocked()
    assert wire(client_handler.requests[0][1]) == {
        "mode": "url",
        "message": "Log in",
        "url": "https://example.com/login",
        "elicitationId": "e-1",
    }
    assert [(m, wire(p)) for m, p in client_handler.notifications] == [
        ("notifications/elicitation/complete", {"elicitationId": "e-1"})
    ]
    form_only = ClientCapabilities(elicitation=ElicitationCapability(form={}))
    async with connect(app, full_client(), capabilities=form_only) as (client, _):
        result = await call_tool(client, "visit")
    assert "'elicitation.url' capability" in text_of(result)


async def test_roots_round_trip_and_refusal(autojump_clock: Any) -> None:
    app, _ = build_app()
    async with connect(app, full_client(), capabilities=EVERYTHING) as (client, _):
        assert (await call_tool(client, "roots")).structured_content == {"result": ["file:///work"]}
    async with connect(app, full_client()) as (client, _):
        result = await call_tool(client, "roots")
    assert result.is_error is True
    assert "does not support roots" in text_of(result)


async def test_reading_own_resources_and_request_facts(autojump_clock: Any) -> None:
    app, _ = build_app()
    facts: list[Any] = []

    @app.tool()
    async def facts_tool(ctx: Context) -> str:
        assert ctx.session is not None
        facts.append(
            (
                ctx.server is app,
                ctx.session.negotiated is not None,
                ctx.client_capabilities,
                ctx.cancel_requested,
                ctx.request_context.method,
            )
        )
        return "ok"

    async with connect(app, capabilities=EVERYTHING) as (client, _):
        assert text_of(await call_tool(client, "read_own")) == "a note"
        await call_tool(client, "facts_tool")
    assert facts == [(True, True, EVERYTHING, False, "tools/call")]


def test_form_building_refuses_what_forms_cannot_hold() -> None:
    with pytest.raises(TypeError, match="Form field 'inner'"):
        build_form(Nested, "2025-11-25")
    with pytest.raises(TypeError, match="attrs class, dataclass"):
        build_form(int, "2025-11-25")
    with pytest.raises(ValueError, match="multiple-choice"):
        build_form(Order, "2025-06-18")
    with pytest.raises(ValueError, match="Not a valid elicitation schema"):
        build_form({"type": "object", "properties": {"x": {"type": "object"}}}, None)
    form = build_form(Contact, None)
    assert serde.unstructure(form.schema) == {
        "type": "object",
        "properties": {"phone": {"type": "string"}},
        "required": ["phone"],
    }
    assert form.read({"phone": "123"}) == {"phone": "123"}
