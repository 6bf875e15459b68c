"""An official-SDK (``mcp`` 2.x) server over stdio with every feature a client can drive:
an interop peer for trimcp's ``Client`` (tests/interop/test_trimcp_client_vs_sdk_everything.py).

Run: ``python tests/peers/sdk_everything_server.py`` (newline-delimited JSON-RPC on
stdin/stdout). Built on the high-level ``MCPServer``; the few methods it does not serve
itself (``logging/setLevel``, ``resources/subscribe``/``unsubscribe``,
``notifications/roots/list_changed``) are registered on its low-level server.

Tools:
- ``add(a, b)`` -> structured ``{"sum": a + b}`` (with an output schema);
- ``count(steps)`` -> reports ``steps`` progress notifications, returns ``"counted N"``;
- ``ask_model(question)`` -> ``sampling/createMessage`` to the client, returns its text;
- ``ask_user()`` -> ``elicitation/create`` (form: name, age, subscribe), returns what the
  user did;
- ``client_roots()`` -> ``roots/list`` to the client, returns the root URIs;
- ``roots_changes()`` -> how many ``notifications/roots/list_changed`` arrived;
- ``log_levels()`` -> one log message per level debug, info, warning, error (those the
  client's ``logging/setLevel`` lets through), returns how many were sent;
- ``touch(uri)`` -> ``notifications/resources/updated`` for ``uri`` if subscribed;
- ``fail()`` -> an ``isError`` result.
Resources: ``sdk://static`` (text), ``sdk://logo`` (PNG blob), template
``sdk://items/{item_id}``. Prompt: ``greet(name, style)``. Completion: ``style`` of
``greet`` and ``item_id`` of the template.

It imports nothing from trimcp.
"""

from __future__ import annotations

import base64
import logging
from typing import Any

import mcp_types as types
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import BaseModel, Field

LEVELS: list[types.LoggingLevel] = [
    "debug",
    "info",
    "notice",
    "warning",
    "error",
    "critical",
    "alert",
    "emergency",
]
PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR4nGP4z8AAAAMBAQDJ/pLvAAAAAElFTkSuQmCC"
)
ITEMS = {"apple": "A red fruit.", "apricot": "An orange fruit.", "banana": "A yellow fruit."}

server = MCPServer(
    "sdk-everything-peer",
    version="2.0.0",
    instructions="The SDK's everything peer.",
    log_level="WARNING",
)
# Per process (one stdio session): what the client asked for and told us.
state: dict[str, Any] = {"level": None, "subscriptions": set(), "roots_changes": 0}


class Sum(BaseModel):
    sum: float


class Profile(BaseModel):
    name: str = Field(description="Your name")
    age: int = Field(default=30, description="Your age")
    subscribe: bool = Field(default=False, description="Get the newsletter?")


@server.tool()
def add(a: float, b: float) -> Sum:
    """Add two numbers (structured result)."""
    return Sum(sum=a + b)


@server.tool()
async def count(steps: int, ctx: Context) -> str:
    """Report one progress notification per step."""
    for step in range(1, steps + 1):
        await ctx.report_progress(step, steps, f"step {step}")
    return f"counted {steps}"


@server.tool()
async def ask_model(question: str, ctx: Context) -> str:
    """Ask the client's model a question (sampling)."""
    message = types.SamplingMessage(
        role="user", content=types.TextContent(type="text", text=question)
    )
    result = await ctx.session.create_message(
        [message],
        max_tokens=64,
        system_prompt="Answer briefly.",
        related_request_id=ctx.request_id,
    )
    content = result.content
    text = content.text if isinstance(content, types.TextContent) else repr(content)
    return f"{result.model} says: {text}"


@server.tool()
async def ask_user(ctx: Context) -> str:
    """Ask the user for a profile (form elicitation)."""
    result = await ctx.elicit("Tell us about yourself", Profile)
    if result.action == "accept":
        profile = result.data
        return f"accepted: {profile.name}, {profile.age}, subscribe={profile.subscribe}"
    return result.action


@server.tool()
async def client_roots(ctx: Context) -> list[str]:
    """The client's roots (roots/list)."""
    result = await ctx.session.list_roots()
    return [str(root.uri) for root in result.roots]


@server.tool()
def roots_changes() -> int:
    """How many roots/list_changed notifications arrived."""
    return int(state["roots_changes"])


@server.tool()
async def log_levels(ctx: Context) -> int:
    """Log at debug, info, warning and error; the client's level filters them."""
    threshold = LEVELS.index(state["level"]) if state["level"] else 0
    sent = 0
    for level in ("debug", "info", "warning", "error"):
        if LEVELS.index(level) >= threshold:
            await ctx.log(level, {"level": level, "n": sent}, logger_name="sdk-peer")
            sent += 1
    return sent


@server.tool()
async def touch(uri: str, ctx: Context) -> bool:
    """Announce that ``uri`` changed, if the client subscribed to it."""
    if uri not in state["subscriptions"]:
        return False
    await ctx.session.send_resource_updated(uri)
    return True


@server.tool()
def fail() -> str:
    """Always fails (an isError result)."""
    raise ToolError("this tool always fails")


@server.resource("sdk://static", mime_type="text/plain")
def static() -> str:
    """A static text resource."""
    return "static text from the SDK peer"


@server.resource("sdk://logo", mime_type="image/png")
def logo() -> bytes:
    """A 1x1 PNG."""
    return PNG


@server.resource("sdk://items/{item_id}", mime_type="text/plain")
def item(item_id: str) -> str:
    """One item by id."""
    return ITEMS.get(item_id, f"no item {item_id}")


@server.prompt()
def greet(name: str, style: str = "friendly") -> str:
    """Greet someone in a style."""
    return f"Write a {style} greeting for {name}."


@server.completion()  # type: ignore[no-untyped-call, untyped-decorator]  # untyped in the SDK
async def complete(
    ref: types.PromptReference | types.ResourceTemplateReference,
    argument: types.CompletionArgument,
    context: types.CompletionContext | None,
) -> types.Completion | None:
    if isinstance(ref, types.PromptReference) and argument.name == "style":
        choices = ["formal", "friendly", "funny"]
    elif isinstance(ref, types.ResourceTemplateReference) and argument.name == "item_id":
        choices = sorted(ITEMS)
    else:
        return None
    values = [c for c in choices if c.startswith(argument.value)]
    return types.Completion(values=values, total=len(values), has_more=False)


# --- the methods MCPServer leaves to the low-level server ----------------------------------
# (`_lowlevel_server` is the SDK's own low-level Server inside MCPServer; there is no
# public accessor in mcp 2.3.0.)
lowlevel = server._lowlevel_server


async def set_level(ctx: Any, params: types.SetLevelRequestParams) -> types.EmptyResult:
    state["level"] = params.level
    return types.EmptyResult()


async def subscribe(ctx: Any, params: types.SubscribeRequestParams) -> types.EmptyResult:
    state["subscriptions"].add(str(params.uri))
    return types.EmptyResult()


async def unsubscribe(ctx: Any, params: types.UnsubscribeRequestParams) -> types.EmptyResult:
    state["subscriptions"].discard(str(params.uri))
    return types.EmptyResult()


async def roots_changed(ctx: Any, params: types.NotificationParams) -> None:
    state["roots_changes"] += 1


lowlevel.add_request_handler("logging/setLevel", types.SetLevelRequestParams, set_level)
lowlevel.add_request_handler("resources/subscribe", types.SubscribeRequestParams, subscribe)
lowlevel.add_request_handler("resources/unsubscribe", types.UnsubscribeRequestParams, unsubscribe)
lowlevel.add_notification_handler(
    "notifications/roots/list_changed", types.NotificationParams, roots_changed
)


if __name__ == "__main__":
    logging.basicConfig(level=logging.WARNING)
    server.run("stdio")
