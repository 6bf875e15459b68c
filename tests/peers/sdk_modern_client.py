"""Drive the everything server with the official SDK client (``mcp`` 2.x) in ``mode="auto"``
and print a JSON report: which era it negotiated, and every feature in that era.

Usage::

    python tests/peers/sdk_modern_client.py --url http://127.0.0.1:PORT/mcp
    python tests/peers/sdk_modern_client.py -- <server argv...>          # stdio

Steps (each under its own key of the report): the negotiated version and server info,
``tools/list``, a text tool, progress, log messages (opted in with a log level), sampling,
elicitation and roots answered through input_required (the SDK retries by itself), several
questions in one round, two rounds, a prompt that asks first, resources, templates and
reads, prompts, completion, and a ``subscriptions/listen`` stream that sees a tools list
change. On HTTP also a tool whose arguments travel in ``Mcp-Param-*`` headers. Imports
nothing from trimcp. Exit status 0 when every step ran, 1 otherwise (``"error"``).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import traceback
from typing import Any

import anyio
import mcp_types as types
from mcp.client import Client, ClientRequestContext
from mcp.client.stdio import StdioServerParameters

SAMPLED_TEXT = "This is a test response from the client"
ROOT_URI = "file:///tmp/sdk-modern-client"


def dump(model: Any) -> Any:
    return model.model_dump(mode="json", by_alias=True, exclude_none=True)


def text_of(result: Any) -> str:
    return "".join(getattr(block, "text", "") for block in result.content)


class Peer:
    def __init__(self) -> None:
        self.logs: list[dict[str, Any]] = []
        self.sampling: list[dict[str, Any]] = []
        self.elicitations: list[dict[str, Any]] = []
        self.roots = 0

    async def on_log(self, params: types.LoggingMessageNotificationParams) -> None:
        self.logs.append(dump(params))

    async def on_sampling(
        self, context: ClientRequestContext, params: types.CreateMessageRequestParams
    ) -> types.CreateMessageResult:
        self.sampling.append(dump(params))
        return types.CreateMessageResult(
            role="assistant",
            content=types.TextContent(type="text", text=SAMPLED_TEXT),
            model="test-model",
            stop_reason="endTurn",
        )

    async def on_elicitation(
        self, context: ClientRequestContext, params: types.ElicitRequestParams
    ) -> types.ElicitResult:
        record = dump(params)
        self.elicitations.append(record)
        names = record.get("requestedSchema", {}).get("properties", {})
        content = {name: "sdk" for name in names}
        if set(names) == {"username", "email"}:
            content = {"username": "testuser", "email": "test@example.com"}
        return types.ElicitResult(action="accept", content=content)  # type: ignore[arg-type]

    async def on_roots(self, context: ClientRequestContext) -> types.ListRootsResult:
        self.roots += 1
        return types.ListRootsResult(roots=[types.Root(uri=ROOT_URI, name="sdk-root")])  # type: ignore[arg-type]


async def drive(target: Any, report: dict[str, Any], http: bool) -> None:
    peer = Peer()
    progress: list[float] = []

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        progress.append(value)

    async with Client(
        target,
        mode="auto",
        sampling_callback=peer.on_sampling,
        elicitation_callback=peer.on_elicitation,
        list_roots_callback=peer.on_roots,
        logging_callback=peer.on_log,
        log_level="debug",
        read_timeout_seconds=20,
    ) as client:
        report["protocol_version"] = client.protocol_version
        report["server_info"] = dump(client.server_info) if client.server_info else None
        listed = await client.list_tools()
        report["tools"] = [tool.name for tool in listed.tools]
        calls: dict[str, str] = {}
        calls["test_simple_text"] = text_of(await client.call_tool("test_simple_text"))
        calls["test_tool_with_progress"] = text_of(
            await client.call_tool(
                "test_tool_with_progress",
                progress_callback=on_progress,  # type: ignore[arg-type]  # the SDK's Protocol
            )
        )
        calls["test_tool_with_logging"] = text_of(await client.call_tool("test_tool_with_logging"))
        calls["test_sampling"] = text_of(
            await client.call_tool("test_sampling", {"prompt": "Test prompt for sampling"})
        )
        calls["test_elicitation"] = text_of(
            await client.call_tool(
                "test_elicitation", {"message": "Please provide your information"}
            )
        )
        for name in (
            "test_input_required_result_list_roots",
            "test_input_required_result_multiple_inputs",
            "test_input_required_result_multi_round",
        ):
            calls[name] = text_of(await client.call_tool(name))
        if http:
            calls["test_custom_headers"] = text_of(
                await client.call_tool(
                    "test_custom_headers", {"region": "eu-west\u00e9", "priority": 7}
                )
            )
        report["calls"] = calls
        report["progress"] = progress
        report["logs"] = peer.logs
        report["sampling"] = peer.sampling
        report["elicitations"] = [e.get("message") for e in peer.elicitations]
        report["roots_requests"] = peer.roots

        resources = await client.list_resources()
        report["resources"] = sorted(r.uri for r in resources.resources)
        templates = await client.list_resource_templates()
        report["templates"] = [t.uri_template for t in templates.resource_templates]
        read = await client.read_resource("test://static-text")
        report["read"] = [dump(c) for c in read.contents]
        templated = await client.read_resource("test://template/42/data")
        report["templated"] = [dump(c) for c in templated.contents]
        prompts = await client.list_prompts()
        report["prompts"] = sorted(p.name for p in prompts.prompts)
        prompt = await client.get_prompt("test_prompt_with_arguments", {"arg1": "a", "arg2": "b"})
        report["prompt"] = [dump(m) for m in prompt.messages]
        asked = await client.get_prompt("test_input_required_result_prompt")
        report["prompt_after_input"] = [dump(m) for m in asked.messages]
        completion = await client.complete(
            types.PromptReference(type="ref/prompt", name="test_prompt_with_arguments"),
            {"name": "arg1", "value": "te"},
        )
        report["completion"] = completion.completion.values

        async with client.listen(tools_list_changed=True) as subscription:
            report["listen_honored"] = dump(subscription.honored)
            await client.call_tool("test_trigger_tool_change")
            with anyio.fail_after(20):
                event = await subscription.__anext__()
            report["listen_event"] = type(event).__name__
        report["done"] = True


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--url")
    parser.add_argument("server", nargs="*")
    args = parser.parse_args()
    report: dict[str, Any] = {}
    if args.url:
        target: Any = args.url
    else:
        # The SDK passes the child a minimal environment: keep PYTHONPATH (a checkout).
        env = {"PYTHONPATH": os.environ["PYTHONPATH"]} if "PYTHONPATH" in os.environ else None
        target = StdioServerParameters(command=args.server[0], args=args.server[1:], env=env)

    async def bounded() -> None:
        with anyio.fail_after(120):
            await drive(target, report, bool(args.url))

    try:
        anyio.run(bounded)
    except BaseException as exc:  # report whatever went wrong, then fail
        report["error"] = "".join(traceback.format_exception(exc))[-4000:]
    print(json.dumps(report))
    return 0 if "error" not in report else 1


if __name__ == "__main__":
    sys.exit(main())
