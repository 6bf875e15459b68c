"""The everything server: one ``trimcp.Server`` with every fixture the official MCP
conformance suite calls (tools, resources, a template, prompts, completion, logging,
progress, sampling, elicitation, SSE polling).

Run it::

    python examples/everything_server.py                          # stdio
    python examples/everything_server.py --transport http --port 8000 [--host 127.0.0.1]

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
from typing import Annotated, Any

import attrs
import trio

from trimcp import Context, Server, serve_http
from trimcp.server import Audio, Image, PromptMessage, user_message
from trimcp.transports.http_server import close_request_stream
from trimcp.types import (
    CallToolResult,
    ContentBlock,
    EmbeddedResource,
    ImageContent,
    TextContent,
    TextResourceContents,
)

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
            "type": "object",
            "properties": {"street": {"type": "string"}, "city": {"type": "string"}},
        }
    },
    "properties": {"name": {"type": "string"}, "address": {"$ref": "#/$defs/address"}},
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


@app.tool(
    description="Tool with JSON Schema 2020-12 features", input_schema=JSON_SCHEMA_2020_12
)
def json_schema_2020_12_tool(name: str | None = None, address: Address | None = None) -> str:
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


# --- running --------------------------------------------------------------------------------


async def serve_http_until_signalled(host: str, port: int) -> None:
    """Serve over Streamable HTTP until SIGINT/SIGTERM; print the URL once listening."""
    with trio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:

        async def stop() -> None:
            async for _ in signals:
                return

        async with trio.open_nursery() as nursery:

            async def serve(task_status: trio.TaskStatus[int]) -> None:
                await serve_http(
                    app, host=host, port=port, shutdown_trigger=stop, task_status=task_status
                )

            bound = await nursery.start(serve)
            shown = f"[{host}]" if ":" in host else host
            print(f"http://{shown}:{bound}/mcp", flush=True)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--transport", choices=["stdio", "http"], default="stdio")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000, help="0 picks a free port")
    args = parser.parse_args(argv)
    if args.transport == "stdio":
        app.run()
    else:
        trio.run(serve_http_until_signalled, args.host, args.port)


if __name__ == "__main__":
    main(sys.argv[1:])
