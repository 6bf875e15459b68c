"""An official-SDK (``mcp`` 2.3.0) ``MCPServer`` that speaks 2026-07-28 as well as 2025:
the peer of tests/interop/test_client_vs_sdk_2026.py (trimcp's client in auto mode).

Run: ``python tests/peers/sdk_modern_server.py`` (stdio) or
``python tests/peers/sdk_modern_server.py http`` (Streamable HTTP on 127.0.0.1, a free
port printed on the first line of stdout, path ``/mcp``).

Tools: ``add(a, b)`` (structured), ``count(steps)`` (progress), ``log_levels()`` (one log
message per level debug/info/warning/error: the client's per-request level filters them),
``ask_user()`` (elicitation), ``ask_model(question)`` (sampling), ``client_roots()`` (roots;
the three through the SDK's ``Resolve`` markers, which become an ``InputRequiredResult``
in 2026), ``touch(uri)`` (announces a resource update and a tools list change for
``subscriptions/listen``). Resources ``sdk://static`` and template ``sdk://items/{item_id}``;
prompt ``greet(name, style)``; completion of ``style`` and ``item_id``.

It imports nothing from trimcp.
"""

from __future__ import annotations

import logging
import socket
import sys
import warnings
from typing import Annotated

import anyio
import mcp_types as types
import uvicorn
from mcp.server.mcpserver import (
    Context,
    Elicit,
    ElicitationResult,
    ListRoots,
    MCPServer,
    Resolve,
    Sample,
)
from pydantic import BaseModel, Field

ITEMS = {"apple": "A red fruit.", "apricot": "An orange fruit.", "banana": "A yellow fruit."}

server = MCPServer(
    "sdk-modern-peer", version="2.3.0", instructions="The SDK's 2026 peer.", log_level="WARNING"
)


class Sum(BaseModel):
    sum: float


class Profile(BaseModel):
    name: str = Field(description="Your name")
    age: int = Field(default=30, description="Your age")


def profile_question() -> Elicit[Profile]:
    return Elicit("Tell us about yourself", Profile)


def model_question(question: str) -> Sample:
    message = types.SamplingMessage(
        role="user", content=types.TextContent(type="text", text=question)
    )
    return Sample([message], max_tokens=64, system_prompt="Answer briefly.")


def roots_question() -> ListRoots:
    return ListRoots()


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
async def log_levels(ctx: Context) -> str:
    """Log once at debug, info, warning and error."""
    for level in ("debug", "info", "warning", "error"):
        await ctx.log(level, {"level": level}, logger_name="sdk-peer")
    return "logged"


@server.tool()
def ask_user(
    profile: Annotated[ElicitationResult[Profile], Resolve(profile_question)],
) -> str:
    """Ask the user for a profile (elicitation)."""
    if profile.action == "accept":
        return f"accepted: {profile.data.name}, {profile.data.age}"
    return profile.action


@server.tool()
def ask_model(
    question: str, answer: Annotated[types.CreateMessageResult, Resolve(model_question)]
) -> str:
    """Ask the client's model a question (sampling)."""
    content = answer.content
    text = content.text if isinstance(content, types.TextContent) else repr(content)
    return f"{answer.model} says: {text}"


@server.tool()
def client_roots(roots: Annotated[types.ListRootsResult, Resolve(roots_question)]) -> list[str]:
    """The client's roots."""
    return [str(root.uri) for root in roots.roots]


@server.tool()
async def touch(uri: str, ctx: Context) -> str:
    """Announce that ``uri`` changed and that the tool list changed."""
    await ctx.notify_resource_updated(uri)
    await ctx.notify_tools_changed()
    return "touched"


@server.resource("sdk://static", mime_type="text/plain")
def static() -> str:
    """A static text resource."""
    return "static text from the SDK peer"


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


def main() -> None:
    # The SDK warns that logging is deprecated in 2026-07-28 on every log call; the
    # peer logs on purpose, so keep its stderr for real problems.
    warnings.filterwarnings("ignore", message=".*deprecated as of 2026-07-28.*")
    logging.basicConfig(level=logging.WARNING)
    if sys.argv[1:2] != ["http"]:
        server.run("stdio")
        return
    app = server.streamable_http_app(host="127.0.0.1")
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)
    print(sock.getsockname()[1], flush=True)
    config = uvicorn.Config(app, log_level="warning", lifespan="on")
    anyio.run(uvicorn.Server(config).serve, [sock])


if __name__ == "__main__":
    main()
