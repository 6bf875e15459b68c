"""A trimcp client for the official MCP conformance suite's client scenarios.

The suite runs ``python examples/conformance_client.py <server url>`` with the scenario's
name in the environment variable ``MCP_CONFORMANCE_SCENARIO``, against a mock server it
starts itself (see ``tests/conformance/SCENARIOS.md``, section 3)::

    tests/conformance/run.sh client --command "python examples/conformance_client.py" \\
        --scenario initialize

Scenarios: ``initialize``, ``tools_call``, ``elicitation-sep1034-client-defaults`` and
``sse-retry``. Each one connects over Streamable HTTP (``connect_transport`` on
``open_http_client_transport``), does what the scenario asks, prints one line per step
on stdout and exits 0; any failure prints the error on stderr and exits 1 (2 for bad
usage). The whole run is bounded by ``--deadline`` seconds (default 20, below the suite's
30 s kill).
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Awaitable, Callable
from typing import Any

import trio

from trimcp import McpError
from trimcp.client import Client, connect_transport
from trimcp.session import RequestContext
from trimcp.transports.http_client import open_http_client_transport
from trimcp.types import (
    ElicitRequestFormParams,
    ElicitRequestParams,
    ElicitResult,
    Implementation,
    TextContent,
)

CLIENT_INFO = Implementation(name="trimcp-conformance-client", version="1.0.0")


def texts(content: list[Any]) -> str:
    return " ".join(block.text for block in content if isinstance(block, TextContent))


async def accept_with_defaults(ctx: RequestContext, params: ElicitRequestParams) -> ElicitResult:
    """Accept a form as if the user left every field alone: each field that has a
    ``default`` gets it (SEP-1034); fields without one stay out of the answer."""
    if not isinstance(params, ElicitRequestFormParams):
        return ElicitResult(action="decline")
    properties = params.requested_schema.properties
    content = {
        name: field.default for name, field in properties.items() if field.default is not None
    }
    print(f"elicitation: {params.message!r} -> accept {content}")
    return ElicitResult(action="accept", content=content)


async def run_initialize(client: Client) -> None:
    print(f"connected to {client.server_info.name} {client.server_info.version}")
    print(f"protocol version {client.protocol_version}")


async def run_tools_call(client: Client) -> None:
    tools = [tool.name async for tool in client.iter_tools()]
    print(f"tools: {tools}")
    result = await client.call_tool("add_numbers", {"a": 2, "b": 3})
    if result.is_error:
        raise RuntimeError(f"add_numbers failed: {texts(result.content)}")
    print(f"add_numbers: {texts(result.content)}")


async def run_elicitation_defaults(client: Client) -> None:
    result = await client.call_tool("test_client_elicitation_defaults", {})
    print(f"test_client_elicitation_defaults: {texts(result.content)}")


async def run_sse_retry(client: Client) -> None:
    # The server ends the call's SSE stream before answering; the transport waits the
    # server's `retry`, reconnects with GET + Last-Event-ID and takes the answer from there.
    result = await client.call_tool("test_reconnection", {})
    print(f"test_reconnection: {texts(result.content)}")


SCENARIOS: dict[str, Callable[[Client], Awaitable[None]]] = {
    "initialize": run_initialize,
    "tools_call": run_tools_call,
    "elicitation-sep1034-client-defaults": run_elicitation_defaults,
    "sse-retry": run_sse_retry,
}


async def run(scenario: str, url: str, deadline: float) -> None:
    """Connect to ``url``, run ``scenario``, close (DELETE, bounded), all within
    ``deadline`` seconds (``trio.TooSlowError`` past it)."""
    with trio.fail_after(deadline):
        async with open_http_client_transport(url, timeout=10.0) as transport, connect_transport(
            transport,
            client_info=CLIENT_INFO,
            elicitation_handler=accept_with_defaults,
        ) as client:
            await SCENARIOS[scenario](client)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="trimcp client for the MCP conformance suite")
    parser.add_argument("--deadline", type=float, default=20.0, help="bound on the run (s)")
    parser.add_argument("url", help="the server URL (the suite appends it last)")
    args = parser.parse_args(argv)
    scenario = os.environ.get("MCP_CONFORMANCE_SCENARIO", "")
    if scenario not in SCENARIOS:
        print(
            f"unknown scenario {scenario!r} (MCP_CONFORMANCE_SCENARIO); "
            f"known: {', '.join(SCENARIOS)}",
            file=sys.stderr,
        )
        return 2
    try:
        trio.run(run, scenario, args.url, args.deadline)
    except (McpError, OSError, RuntimeError, trio.TooSlowError) as exc:
        print(f"{scenario} failed: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    print(f"{scenario}: done")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
