"""A trimcp client for the official MCP conformance suite's client scenarios.

The suite runs ``python examples/conformance_client.py <server url>`` with the scenario's
name in the environment variable ``MCP_CONFORMANCE_SCENARIO``, against a mock server it
starts itself (see ``tests/conformance/SCENARIOS.md``, section 3)::

    tests/conformance/run.sh client --command "python examples/conformance_client.py" \\
        --scenario initialize

Scenarios of suite 0.1.16 (2025 revisions): ``initialize``, ``tools_call``,
``elicitation-sep1034-client-defaults`` and ``sse-retry``. Scenarios of suite
0.2.0-alpha.12 at ``--spec-version 2026-07-28`` (the client then speaks 2026-07-28 with
``mode="auto"``): ``request-metadata``, ``sep-2322-client-request-state``,
``http-standard-headers``, ``http-custom-headers``, ``http-invalid-tool-headers``,
``json-schema-ref-no-deref`` and ``json-schema-2020-12-preservation`` (``tools_call`` runs
at both). The suite names the revision in ``MCP_CONFORMANCE_PROTOCOL_VERSION`` and passes
scenario data in ``MCP_CONFORMANCE_CONTEXT``. Each scenario connects over Streamable HTTP
(``connect_transport`` on ``open_http_client_transport``), does what the scenario asks,
prints one line per step on stdout and exits 0; any failure prints the error on stderr
and exits 1 (2 for bad usage). The whole run is bounded by ``--deadline`` seconds
(default 20, below the suite's 30 s kill).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Awaitable, Callable
from typing import Any

import conformance_auth  # the auth/... scenarios (examples/conformance_auth.py)
import trio

from trimcp import McpError
from trimcp.auth import AuthError
from trimcp.client import Client, connect_transport
from trimcp.client.skills import SkillVerificationError, list_skills, read_skill_file
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


# --- 2026-07-28 scenarios (suite 0.2.0-alpha.12) ----------------------------------------


def context() -> dict[str, Any]:
    """The scenario data the suite passes in ``MCP_CONFORMANCE_CONTEXT`` (may be absent)."""
    raw = os.environ.get("MCP_CONFORMANCE_CONTEXT")
    value = json.loads(raw) if raw else {}
    return value if isinstance(value, dict) else {}


async def run_request_metadata(client: Client) -> None:
    # The server refuses the first request with -32022; the client retried with a
    # version it listed. Every request carries the _meta envelope and header.
    print(f"protocol version {client.protocol_version} ({client.era.value})")
    await client.ping()  # server/discover again: the mock declares no capabilities
    print("ping: ok")


async def run_request_state(client: Client) -> None:
    for name in (
        "test_mrtr_echo_state",
        "test_mrtr_unrelated",
        "test_mrtr_no_state",
        "test_mrtr_no_result_type",
    ):
        result = await client.call_tool(name, {})
        print(f"{name}: {texts(result.content)}")


async def run_standard_headers(client: Client) -> None:
    async for tool in client.iter_tools():
        result = await client.call_tool(tool.name, {})
        print(f"{tool.name}: {texts(result.content)}")
    async for resource in client.iter_resources():
        await client.read_resource(resource.uri)
        print(f"read {resource.uri}")
    async for prompt in client.iter_prompts():
        await client.get_prompt(prompt.name)
        print(f"prompt {prompt.name}")


async def run_custom_headers(client: Client) -> None:
    await client.list_tools()
    for call in context().get("toolCalls", []):
        result = await client.call_tool(call["name"], call.get("arguments") or {})
        print(f"{call['name']}: {texts(result.content)}")


async def run_invalid_tool_headers(client: Client) -> None:
    # Tools whose x-mcp-header annotations are invalid never reach the listing.
    names = [tool.name async for tool in client.iter_tools()]
    print(f"usable tools: {names}")
    for name in names:
        await client.call_tool(name, {"region": "us-west1"})


async def run_ref_no_deref(client: Client) -> None:
    tools = [tool.name async for tool in client.iter_tools()]
    print(f"tools (schemas kept as sent, no $ref fetched): {tools}")


async def run_schema_preservation(client: Client) -> None:
    tools = {tool.name: tool async for tool in client.iter_tools()}
    schema = tools["json_schema_2020_12_tool"].input_schema
    result = await client.call_tool("json_schema_echo", {"schema": schema})
    print(f"json_schema_echo: {texts(result.content)}")


async def run_skills_list_only(client: Client) -> None:
    """List the skills and load none: nothing is read ahead of need."""
    listed = await list_skills(client)
    print(f"skills: {[entry['uri'] for entry in listed['skills']]}")


async def run_skills_load(client: Client) -> None:
    """Load the first skill: read its SKILL.md (verified against the entry), then its
    other files only when that passed; a failed verification stops the load."""
    [entry, *_] = (await list_skills(client))["skills"]
    try:
        await read_skill_file(client, entry, entry["uri"])
    except SkillVerificationError as exc:
        print(f"refused to load the skill: {exc}")
        return
    for item in entry["resources"]:
        if item["uri"] != entry["uri"]:
            await read_skill_file(client, entry, item["uri"])
    print(f"loaded {entry['uri']}")


async def confirm(ctx: RequestContext, params: ElicitRequestParams) -> ElicitResult:
    """Accept every elicitation: form defaults where given, ``confirmed`` for booleans."""
    if not isinstance(params, ElicitRequestFormParams):
        return ElicitResult(action="decline")
    content: dict[str, Any] = {}
    for name, field in params.requested_schema.properties.items():
        if field.default is not None:
            content[name] = field.default
        elif getattr(field, "type", None) == "boolean":
            content[name] = True
    print(f"elicitation: {params.message!r} -> accept {content}")
    return ElicitResult(action="accept", content=content)


SCENARIOS: dict[str, Callable[[Client], Awaitable[None]]] = {
    "initialize": run_initialize,
    "tools_call": run_tools_call,
    "elicitation-sep1034-client-defaults": run_elicitation_defaults,
    "sse-retry": run_sse_retry,
    "request-metadata": run_request_metadata,
    "sep-2322-client-request-state": run_request_state,
    "http-standard-headers": run_standard_headers,
    "http-custom-headers": run_custom_headers,
    "http-invalid-tool-headers": run_invalid_tool_headers,
    "json-schema-ref-no-deref": run_ref_no_deref,
    "json-schema-2020-12-preservation": run_schema_preservation,
    "sep-2640-client-no-prefetch": run_skills_list_only,
    "sep-2640-client-verify-digest": run_skills_load,
    "sep-2640-client-verify-size": run_skills_load,
    "sep-2640-client-verify-frontmatter": run_skills_load,
}


def is_auth(scenario: str) -> bool:
    """Authorization scenarios (``auth/...``): see ``conformance_auth.py``."""
    return scenario.startswith("auth/")


async def run(scenario: str, url: str, deadline: float) -> None:
    """Connect to ``url``, run ``scenario``, close (DELETE, bounded), all within
    ``deadline`` seconds (``trio.TooSlowError`` past it)."""
    with trio.fail_after(deadline):
        modern = os.environ.get("MCP_CONFORMANCE_PROTOCOL_VERSION") == "2026-07-28"
        auth = await conformance_auth.scenario_auth(scenario, url) if is_auth(scenario) else None
        action = conformance_auth.run_auth if is_auth(scenario) else SCENARIOS[scenario]
        async with (
            open_http_client_transport(url, timeout=10.0, auth=auth) as transport,
            connect_transport(
                transport,
                client_info=CLIENT_INFO,
                elicitation_handler=confirm if modern else accept_with_defaults,
                # The 2025 mock servers expect initialize first; at 2026 the client probes.
                mode="auto" if modern else "legacy",
            ) as client,
        ):
            await action(client)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="trimcp client for the MCP conformance suite")
    parser.add_argument("--deadline", type=float, default=20.0, help="bound on the run (s)")
    parser.add_argument("url", help="the server URL (the suite appends it last)")
    args = parser.parse_args(argv)
    scenario = os.environ.get("MCP_CONFORMANCE_SCENARIO", "")
    if scenario not in SCENARIOS and not is_auth(scenario):
        print(
            f"unknown scenario {scenario!r} (MCP_CONFORMANCE_SCENARIO); "
            f"known: {', '.join(SCENARIOS)}",
            file=sys.stderr,
        )
        return 2
    try:
        trio.run(run, scenario, args.url, args.deadline)
    except (McpError, OSError, RuntimeError, trio.TooSlowError, AuthError) as exc:
        print(f"{scenario} failed: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    print(f"{scenario}: done")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
