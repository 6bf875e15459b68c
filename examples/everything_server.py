"""The everything server: one ``trimcp.Server`` with every fixture the official MCP
conformance suite calls (tools, resources, a template, prompts, completion, logging,
progress, sampling, elicitation, SSE polling), in both eras: 2025-11-25 and earlier
(sessions) and 2026-07-28 (stateless: the same handlers, with input_required, listen
streams and the diagnostic tools of the 2026 scenarios).

Run it::

    python examples/everything_server.py                          # stdio
    python examples/everything_server.py --transport http --port 8000 [--host 127.0.0.1]
    python examples/everything_server.py --transport http --store redis://HOST:PORT/DB
    python examples/everything_server.py --transport http --json-response | --stateless
    python examples/everything_server.py --transport http --engine hypercorn

With ``--store redis://...`` replicas behind a load balancer share sessions, events,
tasks and the dynamic tool and prompt (their toggles are kept in the store: see
``SharedToggles``).

Over HTTP it serves Streamable HTTP at ``http://HOST:PORT/mcp`` (``--port 0`` picks a free
port) and prints that URL on stdout once it listens; SIGINT or SIGTERM stops it (every
session is closed, bounded). The texts and shapes follow ``tests/conformance/SCENARIOS.md``.
"""

from __future__ import annotations

import argparse
import base64
import io
import json
import signal
import sys
import wave
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import attrs
import trio

from trimcp import Context, McpError, Server, ToolError, serve_http
from trimcp.errors import INTERNAL_ERROR
from trimcp.server import Audio, Image, PromptMessage, user_message
from trimcp.server.middleware import Call, Next
from trimcp.server.skills import Skills
from trimcp.server.tasks import start_task
from trimcp.stores import Store, store_from_url
from trimcp.transports.http_server import HttpServerConfig, close_request_stream
from trimcp.transports.http_server.serve import Engine
from trimcp.types import (
    CallToolResult,
    ContentBlock,
    EmbeddedResource,
    ImageContent,
    TextContent,
    TextResourceContents,
)

if TYPE_CHECKING:
    from trimcp.stores.redis import RedisStore

#: A 1x1 PNG (one opaque red pixel).
PNG_BYTES = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR4nGP4z8AAAAMBAQDJ/pLvAAAAAElFTkSuQmCC"
)
PNG_BASE64 = base64.b64encode(PNG_BYTES).decode("ascii")


def _silent_wav(frames: int = 800, rate: int = 8000) -> bytes:
    # 0.1 s of 8-bit mono silence: a real, playable WAV file, built rather than pasted.
    buffer = io.BytesIO()
    with wave.open(buffer, "wb") as out:
        out.setnchannels(1)
        out.setsampwidth(1)
        out.setframerate(rate)
        out.writeframes(b"\x80" * frames)
    return buffer.getvalue()


WAV_BYTES = _silent_wav()

WATCHED_URI = "test://watched-resource"
#: The watched resource's current text (update_watched_resource changes it).
_watched = {"text": "Watched resource content"}

#: The elicitation schemas of SEP-1034 (defaults) and SEP-1330 (enum variants).
SEP1034_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "description": "User name", "default": "John Doe"},
        "age": {"type": "integer", "description": "User age", "default": 30},
        "score": {"type": "number", "description": "User score", "default": 95.5},
        "status": {
            "type": "string",
            "description": "User status",
            "enum": ["active", "inactive", "pending"],
            "default": "active",
        },
        "verified": {"type": "boolean", "description": "Verification status", "default": True},
    },
    "required": [],
}


def _options(prefix: str, *titles: str) -> list[dict[str, str]]:
    return [{"const": f"{prefix}{n}", "title": t} for n, t in enumerate(titles, start=1)]


SEP1330_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "untitledSingle": {"type": "string", "enum": ["option1", "option2", "option3"]},
        "titledSingle": {
            "type": "string",
            "oneOf": _options("value", "First Option", "Second Option", "Third Option"),
        },
        "legacyEnum": {
            "type": "string",
            "enum": ["opt1", "opt2", "opt3"],
            "enumNames": ["Option One", "Option Two", "Option Three"],
        },
        "untitledMulti": {
            "type": "array",
            "minItems": 1,
            "maxItems": 3,
            "items": {"type": "string", "enum": ["option1", "option2", "option3"]},
        },
        "titledMulti": {
            "type": "array",
            "items": {"anyOf": _options("value", "First Choice", "Second Choice", "Third Choice")},
        },
    },
    "required": [],
}

CONTACT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "username": {"type": "string", "description": "User's response"},
        "email": {"type": "string", "description": "User's email address"},
    },
    "required": ["username", "email"],
}

#: Advertised verbatim: the generated schema would name the class in ``$defs`` and leave
#: out ``$schema`` and ``additionalProperties``, which the suite checks for.
JSON_SCHEMA_2020_12: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "$defs": {
        "address": {
            "$anchor": "addressDef",
            "type": "object",
            "properties": {"street": {"type": "string"}, "city": {"type": "string"}},
        }
    },
    "properties": {
        "name": {"type": "string"},
        "address": {"$ref": "#/$defs/address"},
        "contactMethod": {"type": "string", "enum": ["phone", "email"]},
        "phone": {"type": "string"},
        "email": {"type": "string"},
    },
    "allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
    "if": {"properties": {"contactMethod": {"const": "phone"}}, "required": ["contactMethod"]},
    "then": {"required": ["phone"]},
    "else": {"required": ["email"]},
    "additionalProperties": False,
}

app = Server(
    "trimcp-everything-server",
    version="1.0.0",
    instructions="Every MCP feature in one server, for conformance and interop tests.",
)

# --- tools ----------------------------------------------------------------------------------


@app.tool()
def test_simple_text() -> str:
    """Return a simple text response."""
    return "This is a simple text response for testing."


@app.tool()
def test_image_content() -> Image:
    """Return a 1x1 PNG image."""
    return Image(PNG_BYTES, "image/png")


@app.tool()
def test_audio_content() -> Audio:
    """Return a short WAV clip."""
    return Audio(WAV_BYTES, "audio/wav")


@app.tool()
def test_embedded_resource() -> EmbeddedResource:
    """Return an embedded text resource."""
    return EmbeddedResource(
        resource=TextResourceContents(
            uri="test://embedded-resource",
            mime_type="text/plain",
            text="This is an embedded resource content.",
        )
    )


@app.tool()
def test_multiple_content_types() -> list[ContentBlock]:
    """Return text, an image and an embedded resource together."""
    return [
        TextContent(text="Multiple content types test:"),
        ImageContent(data=PNG_BASE64, mime_type="image/png"),
        EmbeddedResource(
            resource=TextResourceContents(
                uri="test://mixed-content-resource",
                mime_type="application/json",
                text=json.dumps({"test": "data", "value": 123}, separators=(",", ":")),
            )
        ),
    ]


@app.tool()
async def test_tool_with_logging(ctx: Context) -> str:
    """Send three log messages while running."""
    await ctx.info("Tool execution started")
    await trio.sleep(0.05)
    await ctx.info("Tool processing data")
    await trio.sleep(0.05)
    await ctx.info("Tool execution completed")
    return "Tool with logging executed successfully"


@app.tool()
async def test_tool_with_progress(ctx: Context) -> str:
    """Report progress 0, 50 and 100 of 100 (when the call asks for progress)."""
    await ctx.report_progress(0, 100, "started")
    await trio.sleep(0.05)
    await ctx.report_progress(50, 100, "half way")
    await trio.sleep(0.05)
    await ctx.report_progress(100, 100, "done")
    return "Tool with progress executed successfully"


@app.tool()
def test_error_handling() -> CallToolResult:
    """Always fail, as a tool result with isError (not a protocol error)."""
    return CallToolResult(
        content=[TextContent(text="This tool intentionally returns an error for testing")],
        is_error=True,
    )


def _text_of(content: ContentBlock | list[ContentBlock] | Any) -> str:
    blocks = content if isinstance(content, list) else [content]
    return "".join(block.text for block in blocks if isinstance(block, TextContent))


@app.tool()
async def test_sampling(
    prompt: Annotated[str, "What to ask the client's model"], ctx: Context
) -> str:
    """Ask the client's LLM (sampling/createMessage) and return its answer."""
    answer = await ctx.sample(prompt, max_tokens=100)
    return f"LLM response: {_text_of(answer.content)}"


def _outcome(action: str, content: Mapping[str, Any] | None) -> str:
    return f"action={action}, content={json.dumps(content, sort_keys=True)}"


@app.tool()
async def test_elicitation(
    message: Annotated[str, "The message to show the user"], ctx: Context
) -> str:
    """Ask the user for a username and an email (elicitation/create)."""
    outcome = await ctx.elicit(message, CONTACT_SCHEMA)
    return f"User response: {_outcome(outcome.action, outcome.content)}"


@app.tool()
async def test_elicitation_sep1034_defaults(ctx: Context) -> str:
    """Elicit a form whose fields all have defaults (SEP-1034)."""
    outcome = await ctx.elicit(
        "Please review and update the form fields with defaults", SEP1034_SCHEMA
    )
    return f"Elicitation completed: {_outcome(outcome.action, outcome.content)}"


@app.tool()
async def test_elicitation_sep1330_enums(ctx: Context) -> str:
    """Elicit a form with every kind of enum field (SEP-1330)."""
    outcome = await ctx.elicit("Please select options from the enum fields", SEP1330_SCHEMA)
    return f"Elicitation completed: {_outcome(outcome.action, outcome.content)}"


@attrs.frozen
class Address:
    street: str | None = None
    city: str | None = None


@app.tool(description="Tool with JSON Schema 2020-12 features", input_schema=JSON_SCHEMA_2020_12)
def json_schema_2020_12_tool(
    name: str | None = None,
    address: Address | None = None,
    contactMethod: str | None = None,  # the schema's property name
    phone: str | None = None,
    email: str | None = None,
) -> str:
    where = f" from {address.city}" if address is not None and address.city else ""
    return f"Hello {name or 'anonymous'}{where}"


@app.tool()
async def test_reconnection(ctx: Context) -> str:
    """Close this call's SSE stream before answering; the client gets the answer by
    reconnecting with Last-Event-ID (SSE polling; over stdio it just answers)."""
    if close_request_stream(ctx.request_context):
        # Let the stream end on the wire first, so the answer can only arrive on the replay.
        await trio.sleep(0.1)
    return "Reconnection test completed successfully"


@app.tool()
async def update_watched_resource(text: Annotated[str, "The resource's new text"]) -> str:
    """Change test://watched-resource and notify its subscribers."""
    _watched["text"] = text
    await app.notify_resource_updated(WATCHED_URI)
    return f"{WATCHED_URI} updated"


# --- resources ------------------------------------------------------------------------------


@app.resource("test://static-text", name="static-text", mime_type="text/plain")
def static_text() -> str:
    """A static text resource."""
    return "This is the content of the static text resource."


@app.resource("test://static-binary", name="static-binary", mime_type="image/png")
def static_binary() -> bytes:
    """A static binary resource (a PNG image)."""
    return PNG_BYTES


@app.resource("test://template/{id}/data", name="template-data", mime_type="application/json")
def template_data(id: str) -> str:
    """Data for any id, from a URI template."""
    return json.dumps(
        {"id": id, "templateTest": True, "data": f"Data for ID: {id}"}, separators=(",", ":")
    )


@app.resource(WATCHED_URI, name="watched-resource", mime_type="text/plain")
def watched_resource() -> str:
    """A resource to subscribe to; update_watched_resource changes it."""
    return _watched["text"]


# --- skills (io.modelcontextprotocol/skills) ---------------------------------------------------

# A skill folder with a sub-folder: skills/list, skills/get, its files through
# resources/read and resources/directory/read.
skills = Skills(app)
skills.add_folder(Path(__file__).parent / "skills" / "release-notes")


# --- prompts and completion -----------------------------------------------------------------


@app.prompt()
def test_simple_prompt() -> str:
    """A simple prompt without arguments."""
    return "This is a simple prompt for testing."


@app.prompt()
def test_prompt_with_arguments(
    arg1: Annotated[str, "First test argument"], arg2: Annotated[str, "Second test argument"]
) -> str:
    """A prompt with two required arguments."""
    return f"Prompt with arguments: arg1='{arg1}', arg2='{arg2}'"


@app.complete_argument(prompt="test_prompt_with_arguments", argument="arg1")
def complete_arg1(value: str) -> list[str]:
    return [v for v in ("test", "testing", "tested", "example") if v.startswith(value)]


@app.prompt()
def test_prompt_with_embedded_resource(
    resourceUri: Annotated[str, "URI of the resource to embed"],  # the argument's wire name
) -> list[PromptMessage]:
    """A prompt that embeds a resource."""
    resource = TextResourceContents(
        uri=resourceUri, mime_type="text/plain", text="Embedded resource content for testing."
    )
    return [
        user_message(EmbeddedResource(resource=resource)),
        user_message("Please process the embedded resource above."),
    ]


@app.prompt()
def test_prompt_with_image() -> list[PromptMessage]:
    """A prompt that holds an image."""
    return [
        user_message(ImageContent(data=PNG_BASE64, mime_type="image/png")),
        user_message("Please analyze the image above."),
    ]


# --- 2026-07-28 diagnostics (the same handler bodies serve sessions too) --------------------

NAME_FORM: dict[str, Any] = {
    "type": "object",
    "properties": {"name": {"type": "string"}},
    "required": ["name"],
}


def _form(field: str) -> dict[str, Any]:
    return {"type": "object", "properties": {field: {"type": "string"}}, "required": [field]}


@app.tool()
async def test_missing_capability(ctx: Context) -> str:
    """Needs the client's sampling capability (2026: -32021 naming it when undeclared)."""
    await ctx.sample("Say hello", max_tokens=10)
    return "Success"


@app.tool()
async def test_input_required_result_elicitation(ctx: Context) -> str:
    """Ask the user's name (2026: one input_required round, key user_name)."""
    outcome = await ctx.elicit("What is your name?", NAME_FORM, key="user_name")
    name = outcome.data["name"] if outcome.data else "stranger"
    return f"Hello, {name}!"


@app.tool()
async def test_input_required_result_sampling(ctx: Context) -> str:
    """Ask the client's LLM a question (key capital_question)."""
    result = await ctx.sample(
        "What is the capital of France?", max_tokens=100, key="capital_question"
    )
    return f"Sampling result: {_text_of(result.content)}"


@app.tool()
async def test_input_required_result_list_roots(ctx: Context) -> str:
    """Ask for the client's roots (key client_roots)."""
    roots = await ctx.list_roots(key="client_roots")
    return f"Found {len(roots)} root(s)"


@app.tool()
async def test_input_required_result_request_state(ctx: Context) -> str:
    """One confirmation; the retry's sealed requestState is checked before this runs."""
    await ctx.elicit("Please confirm", _form("confirm"), key="confirm")
    return "state-ok: requestState validated"


@app.tool()
async def test_input_required_result_multiple_inputs(ctx: Context) -> str:
    """Three questions asked at once (one round in 2026, three requests in a session)."""
    answers: dict[str, Any] = {}

    async def name() -> None:
        answers["name"] = await ctx.elicit("What is your name?", NAME_FORM, key="user_name")

    async def greeting() -> None:
        answers["greeting"] = await ctx.sample("Generate a greeting", max_tokens=50, key="greeting")

    async def roots() -> None:
        answers["roots"] = await ctx.list_roots(key="client_roots")

    async with trio.open_nursery() as nursery:
        for ask in (name, greeting, roots):
            nursery.start_soon(ask)
    who = answers["name"].data["name"] if answers["name"].data else "stranger"
    return (
        f"Name: {who}; Greeting: {_text_of(answers['greeting'].content)}; "
        f"Roots: {len(answers['roots'])}"
    )


@app.tool()
async def test_input_required_result_multi_round(ctx: Context) -> str:
    """Two questions in a row (two rounds in 2026)."""
    first = await ctx.elicit("Step 1: What is your name?", NAME_FORM, key="step1")
    second = await ctx.elicit("Step 2: What is your favorite color?", _form("color"), key="step2")
    name = first.data["name"] if first.data else "friend"
    color = second.data["color"] if second.data else "no color"
    return f"Multi-round complete for {name} who likes {color}"


@app.tool()
async def test_input_required_result_tampered_state(ctx: Context) -> str:
    """One confirmation; a tampered requestState is refused before this runs again."""
    await ctx.elicit("Please confirm", _form("confirm"), key="confirm")
    return "integrity-ok: state verified"


@app.tool()
async def test_input_required_result_capabilities(ctx: Context) -> str:
    """Ask only through what the client declared (elicitation, sampling)."""
    caps = ctx.client_capabilities
    asked: list[str] = []

    async def elicit() -> None:
        await ctx.elicit("Elicitation input", _form("value"), key="elicitation_input")
        asked.append("elicitation_input")

    async def sample() -> None:
        await ctx.sample("Sample request", max_tokens=20, key="sampling_input")
        asked.append("sampling_input")

    async with trio.open_nursery() as nursery:
        if caps is not None and caps.elicitation is not None:
            nursery.start_soon(elicit)
        if caps is not None and caps.sampling is not None:
            nursery.start_soon(sample)
    if not asked:
        return "No supported capabilities declared"
    return f"capabilities-ok: received {','.join(sorted(asked))}"


@app.tool()
async def test_streaming_elicitation(ctx: Context) -> str:
    """Report progress, then answer: the stream carries notifications, never requests."""
    await ctx.report_progress(1, 1, "streaming")
    return "Streaming complete"


@app.tool()
async def test_logging_tool(ctx: Context) -> str:
    """Log at info: sent only when the request asked for a log level (2026)."""
    await ctx.info("Diagnostic trace logging activated")
    return "Logging evaluated"


def _dynamic_tool() -> str:
    """Comes and goes with test_trigger_tool_change."""
    return "dynamic"


def _dynamic_prompt() -> str:
    """Comes and goes with test_trigger_prompt_change."""
    return "dynamic"


# The dynamic entries are registered once, hidden, and shown or hidden by the triggers.
# Whether they show is kept in the store when the replicas share one (`--store redis://`):
# a trigger run on one replica shows the entry on every replica, as one process would.
# Each trigger increments a counter there (odd: shown); each replica reads the counters
# before it lists or calls (one Redis round trip) and sets its entries to match quietly
# (the replica that ran the trigger already told every replica's clients of the change).
DYNAMIC_TOOL = app.add_tool(_dynamic_tool, name="test_dynamic_tool")
DYNAMIC_TOOL.disable()
DYNAMIC_PROMPT = app.add_prompt(_dynamic_prompt, name="test_dynamic_prompt")
DYNAMIC_PROMPT.disable()
_TOGGLES = {"tools": DYNAMIC_TOOL, "prompts": DYNAMIC_PROMPT}


class SharedToggles:
    """The dynamic entries' toggles in a Redis store the replicas share."""

    def __init__(self, store: RedisStore) -> None:
        self.store = store
        self.keys = {kind: store.key("everything", "dynamic", kind) for kind in _TOGGLES}

    async def flip(self, kind: str) -> bool:
        """Flip ``kind``'s entry for every replica; whether it shows now."""
        count = await self.store.client.execute("INCR", self.keys[kind])
        return isinstance(count, int) and count % 2 == 1

    async def sync(self) -> None:
        """Show or hide this replica's entries as the store says, without notifying."""
        counts = await self.store.client.execute("MGET", *self.keys.values())
        assert isinstance(counts, list)
        for handle, count in zip(_TOGGLES.values(), counts, strict=True):
            handle.enabled = isinstance(count, bytes) and int(count) % 2 == 1


#: Set while serving with a shared Redis store (see serve_http_until_signalled).
_shared: SharedToggles | None = None


async def _synced_entries(call: Call, call_next: Next) -> Any:
    if _shared is not None and call.kind == "request" and call.method.split("/")[0] in _TOGGLES:
        await _shared.sync()
    return await call_next(call)


app.add_middleware(_synced_entries)


async def _toggle(kind: str) -> str:
    handle = _TOGGLES[kind]
    show = await _shared.flip(kind) if _shared is not None else not handle.enabled
    if show:
        handle.enable()  # notifies this replica's sessions, and the other replicas'
    else:
        handle.disable()
    return "Mutation triggered"


@app.tool()
async def test_trigger_tool_change() -> str:
    """Add or remove test_dynamic_tool (a tools list change)."""
    return await _toggle("tools")


@app.tool()
async def test_trigger_prompt_change() -> str:
    """Add or remove test_dynamic_prompt (a prompts list change)."""
    return await _toggle("prompts")


@app.tool(
    "test_custom_headers",
    input_schema={
        "type": "object",
        "properties": {
            "region": {"type": "string", "x-mcp-header": "Region"},
            "priority": {"type": "integer", "x-mcp-header": "Priority"},
            "query": {"type": "string"},
        },
        "required": ["region"],
    },
)
def custom_headers(region: str, priority: int | None = None, query: str = "") -> str:
    """Region and priority travel in Mcp-Param-* headers too (2026, HTTP)."""
    return f"region={region} priority={priority} query={query}"


@app.prompt()
async def test_input_required_result_prompt(ctx: Context) -> list[PromptMessage]:
    """A prompt that asks the user for context first."""
    outcome = await ctx.elicit(
        "What context should the prompt use?", _form("context"), key="user_context"
    )
    context = outcome.data["context"] if outcome.data else "none"
    return [user_message(f"Prompt with context: {context}")]


# --- tasks (2025-11-25 tasks; the io.modelcontextprotocol/tasks extension in 2026) ---------


@app.tool()
def greet(name: str) -> str:
    """Never a task: answers at once."""
    return f"Hello, {name}!"


@app.tool(task_support="optional")
async def slow_compute(seconds: float = 1, label: str = "") -> str:
    """A task: sleeps ``seconds`` (cancelled at once by tasks/cancel), then answers."""
    await trio.sleep(seconds)
    return f"Computed {label or 'result'} after {seconds:g}s"


@app.tool(task_support="required")
async def failing_job() -> str:
    """Only as a task: after about a second, reports a tool error (isError)."""
    await trio.sleep(1)
    raise ToolError("The job failed: simulated tool error")


@app.tool(task_support="optional")
async def protocol_error_job() -> str:
    """A task that ends with a JSON-RPC error (the task fails)."""
    raise McpError(INTERNAL_ERROR, "The job crashed: simulated protocol error")


CONFIRM_FORM: dict[str, Any] = {
    "type": "object",
    "properties": {"confirm": {"type": "boolean", "title": "Delete it?"}},
    "required": ["confirm"],
}


@app.tool(task_support="optional")
async def confirm_delete(filename: str, ctx: Context) -> str:
    """A task that asks the user to confirm (input_required), then answers."""
    outcome = await ctx.elicit(f"Delete {filename}?", CONFIRM_FORM)
    confirmed = outcome.action == "accept" and bool((outcome.data or {}).get("confirm"))
    return f"{'Deleted' if confirmed else 'Kept'} {filename}"


@app.tool(task_support="optional")
async def multi_input(ctx: Context) -> str:
    """A task that asks two questions at once (two inputRequests pending together)."""
    answers: dict[str, str] = {}

    async def ask(field: str) -> None:
        outcome = await ctx.elicit(
            f"Your {field}?",
            {
                "type": "object",
                "properties": {"name": {"type": "string"}, "confirm": {"type": "boolean"}},
            },
        )
        answers[field] = str((outcome.data or {}).get("name", outcome.action))

    async with trio.open_nursery() as nursery:
        nursery.start_soon(ask, "first")
        nursery.start_soon(ask, "second")
    return f"first={answers['first']} second={answers['second']}"


@app.tool(task_support="required", task_start="explicit")
async def test_tool_with_task(ctx: Context) -> CallToolResult:
    """Asks the user's name in the request (2026: input_required rounds), then runs as a
    task that greets them."""
    outcome = await ctx.elicit("What is your name?", NAME_FORM, key="user_name")
    name = outcome.data["name"] if outcome.data else "stranger"

    async def greet_later(task_ctx: Context) -> str:
        await trio.sleep(0.5)
        return f"Hello, {name}! (from a task)"

    return await start_task(ctx, greet_later)


# --- running --------------------------------------------------------------------------------


async def serve_http_until_signalled(
    host: str,
    port: int,
    store: str | None = None,
    config: HttpServerConfig | None = None,
    engine: Engine = "auto",
) -> None:
    """Serve over Streamable HTTP until SIGINT/SIGTERM; print the URL once listening.

    ``store``: a store URL (``redis://...``: the replicas behind a balancer share it, and
    the dynamic entries' toggles with it). ``config`` (JSON-response or stateless mode) and
    ``engine`` go to :func:`trimcp.serve_http` as they are. Cancellation: stops serving;
    the store is closed shielded."""
    global _shared
    opened = store_from_url(store) if store is not None else None
    if opened is not None and opened.shared:
        from trimcp.stores.redis import RedisStore  # loaded only when asked for

        assert isinstance(opened, RedisStore)
        _shared = SharedToggles(opened)
    try:
        await _serve_until_signalled(host, port, opened, config, engine)
    finally:
        _shared = None
        if opened is not None:
            with trio.CancelScope(shield=True):
                await opened.aclose()


async def _serve_until_signalled(
    host: str, port: int, store: Store | None, config: HttpServerConfig | None, engine: Engine
) -> None:
    with trio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:

        async def stop() -> None:
            async for _ in signals:
                return

        async with trio.open_nursery() as nursery:

            async def serve(task_status: trio.TaskStatus[int]) -> None:
                await serve_http(
                    app,
                    host=host,
                    port=port,
                    shutdown_trigger=stop,
                    store=store,
                    config=config,
                    engine=engine,
                    task_status=task_status,
                )

            bound = await nursery.start(serve)
            shown = f"[{host}]" if ":" in host else host
            print(f"http://{shown}:{bound}/mcp", flush=True)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--transport", choices=["stdio", "http"], default="stdio")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000, help="0 picks a free port")
    parser.add_argument(
        "--store",
        default=None,
        metavar="URL",
        help="http: memory:// (default) or redis://HOST:PORT/DB (replicas)",
    )
    parser.add_argument(
        "--json-response", action="store_true", help="http: answer POSTs with JSON, not SSE"
    )
    parser.add_argument(
        "--stateless", action="store_true", help="http: no sessions, each POST stands alone"
    )
    parser.add_argument(
        "--engine", choices=["auto", "lean", "hypercorn"], default="auto", help="http server"
    )
    args = parser.parse_args(argv)
    if args.transport == "stdio":
        app.run()
    else:
        config = HttpServerConfig(stateless=args.stateless, json_response=args.json_response)
        trio.run(serve_http_until_signalled, args.host, args.port, args.store, config, args.engine)


if __name__ == "__main__":
    main(sys.argv[1:])
