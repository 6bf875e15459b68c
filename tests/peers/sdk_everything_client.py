"""Drive a stdio "everything" server through every MCP feature with the official SDK client
(``mcp`` 2.x), and print a JSON report.

Usage::

    python tests/peers/sdk_everything_client.py [--timeout S] [--overall-timeout S] \\
        -- <server argv...>

The server must offer the fixtures of ``examples/everything_server.py`` (the conformance
suite's fixture names). Steps, each recorded in the report under its own key:
initialize (with sampling, elicitation and roots declared), ping, ``logging/setLevel``,
``tools/list``, a call of every tool (sampling and elicitation answered here, progress
and log notifications collected), ``resources/list``, ``resources/templates/list``, reads
of every resource and of the template, subscribe -> ``update_watched_resource`` ->
``notifications/resources/updated`` -> read -> unsubscribe, ``prompts/list`` and every
prompt, ``completion/complete``, a final ping. The report also holds every notification
method received, every server request answered, and the SDK's view of the server.

Notifications are dispatched by the SDK in their own tasks, so they may land after the
result of the call that caused them: each wait for them is bounded (``--timeout``).

This script imports nothing from trimcp, so it is an independent reference client.
Exit status: 0 when every step ran, 1 otherwise (the report carries ``"error"``), 2 on
bad usage.
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import sys
import traceback
import warnings
from collections.abc import Callable
from typing import Any

import anyio
import mcp_types as types
from mcp.client.session import ClientRequestContext, ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.shared.exceptions import MCPDeprecationWarning

SAMPLED_TEXT = "This is a test response from the client"
CONTACT = {"username": "testuser", "email": "test@example.com"}
SEP1034_ANSWER = {
    "name": "Jane Smith",
    "age": 25,
    "score": 88.0,
    "status": "inactive",
    "verified": False,
}
SEP1330_ANSWER = {
    "untitledSingle": "option1",
    "titledSingle": "value1",
    "legacyEnum": "opt1",
    "untitledMulti": ["option1", "option2"],
    "titledMulti": ["value1", "value2"],
}
WATCHED = "test://watched-resource"
ROOT_URI = "file:///tmp/sdk-everything-client"


def dump(model: Any) -> Any:
    return model.model_dump(mode="json", by_alias=True, exclude_none=True)


class Recorder:
    """What the server sent us outside of responses, with bounded waits on it."""

    def __init__(self) -> None:
        self.logs: list[dict[str, Any]] = []
        self.notifications: list[str] = []
        self.updated: list[str] = []
        self.sampling: list[dict[str, Any]] = []
        self.elicitations: list[dict[str, Any]] = []
        self.roots_requests = 0
        self._changed = anyio.Event()

    def poke(self) -> None:
        self._changed.set()
        self._changed = anyio.Event()

    async def wait_for(self, condition: Callable[[], bool], timeout: float) -> bool:
        with anyio.move_on_after(timeout):
            while not condition():
                await self._changed.wait()
        return condition()

    async def on_log(self, params: types.LoggingMessageNotificationParams) -> None:
        self.logs.append(dump(params))
        self.poke()

    async def on_message(self, message: Any) -> None:
        if isinstance(message, Exception):
            self.notifications.append(f"error: {message!r}")
        else:
            self.notifications.append(message.method)
            if isinstance(message, types.ResourceUpdatedNotification):
                self.updated.append(message.params.uri)
        self.poke()

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
        properties = set(record.get("requestedSchema", {}).get("properties", {}))
        for answer in (CONTACT, SEP1034_ANSWER, SEP1330_ANSWER):
            if properties == set(answer):
                return types.ElicitResult(action="accept", content=answer)  # type: ignore[arg-type]
        return types.ElicitResult(action="decline")

    async def on_list_roots(self, context: ClientRequestContext) -> types.ListRootsResult:
        self.roots_requests += 1
        root = types.Root(uri=ROOT_URI, name="sdk-root")  # type: ignore[arg-type]
        return types.ListRootsResult(roots=[root])


def _content(result: types.CallToolResult) -> list[dict[str, Any]]:
    return [dump(block) for block in result.content]


def _decoded_prefix(data: str, n: int) -> str:
    return base64.b64decode(data, validate=True)[:n].hex()


DIAGNOSTICS_2026 = frozenset(
    {
        "test_missing_capability",
        "test_streaming_elicitation",
        "test_logging_tool",
        "test_trigger_tool_change",
        "test_trigger_prompt_change",
        "test_custom_headers",
        # The tasks fixtures (tests/tasks, the conformance tasks-* scenarios): some run only
        # as tasks, some wait for input; this peer calls tools plainly.
        "greet",
        "slow_compute",
        "failing_job",
        "protocol_error_job",
        "confirm_delete",
        "multi_input",
        "test_tool_with_task",
    }
)

TOOL_ARGUMENTS: dict[str, dict[str, Any] | None] = {
    "test_simple_text": None,  # as the suite does: no "arguments" key at all
    "test_sampling": {"prompt": "Test prompt for sampling"},
    "test_elicitation": {"message": "Please provide your information"},
    "json_schema_2020_12_tool": {
        "name": "Ann",
        "address": {"street": "1 Main St", "city": "Paris"},
    },
    "update_watched_resource": {"text": "first update"},
}


async def _call(session: ClientSession, rec: Recorder, name: str, timeout: float) -> Any:
    seen: list[dict[str, Any]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append({"progress": progress, "total": total, "message": message})
        rec.poke()

    logs_before = len(rec.logs)
    result = await session.call_tool(
        name, TOOL_ARGUMENTS.get(name, {}), progress_callback=on_progress
    )
    entry: dict[str, Any] = {"is_error": bool(result.is_error), "content": _content(result)}
    if result.structured_content is not None:
        entry["structured"] = result.structured_content
    if name == "test_tool_with_progress":
        await rec.wait_for(lambda: len(seen) >= 3, timeout)
        entry["progress"] = seen
    if name == "test_tool_with_logging":
        await rec.wait_for(lambda: len(rec.logs) - logs_before >= 3, timeout)
        entry["logs"] = rec.logs[logs_before:]
    for block in result.content:
        if isinstance(block, types.ImageContent | types.AudioContent):
            entry.setdefault("decoded_prefixes", []).append(_decoded_prefix(block.data, 4))
    return entry


#: Tools of the tasks tests that are not tasks themselves (they need arguments).
TASK_COMPANIONS = frozenset({"greet"})


async def _tools(
    session: ClientSession, rec: Recorder, report: dict[str, Any], timeout: float
) -> None:
    listed = await session.list_tools()
    report["tools"] = {tool.name: dump(tool) for tool in listed.tools}
    # The 2026-07-28 diagnostics (input_required fixtures, list-change triggers...) are
    # driven by the 2026 interop peer; calling the triggers here would change the lists.
    # The task fixtures (execution.taskSupport set) are the tasks tests' to drive: some
    # refuse a plain call (as the spec says), some fail on purpose as tasks.
    must_be_tasks = {
        tool.name
        for tool in listed.tools
        if tool.execution is not None and tool.execution.task_support in ("optional", "required")
    } | TASK_COMPANIONS
    report["task_fixtures"] = sorted(must_be_tasks)
    report["calls"] = {
        name: await _call(session, rec, name, timeout)
        for name in report["tools"]
        if name not in DIAGNOSTICS_2026
        and name not in must_be_tasks
        and not name.startswith("test_input_required_result_")
    }


async def _resources(
    session: ClientSession, rec: Recorder, report: dict[str, Any], timeout: float
) -> None:
    listed = await session.list_resources()
    report["resources"] = [dump(resource) for resource in listed.resources]
    templates = await session.list_resource_templates()
    report["templates"] = [dump(template) for template in templates.resource_templates]
    reads: dict[str, Any] = {}
    for uri in [str(r.uri) for r in listed.resources] + ["test://template/123/data"]:
        reads[uri] = [dump(c) for c in (await session.read_resource(uri)).contents]
    report["reads"] = reads
    for content in reads.get("test://static-binary", []):
        content["decoded_prefix"] = _decoded_prefix(content.get("blob", ""), 4)

    subscribed = await session.subscribe_resource(WATCHED)
    await session.call_tool("update_watched_resource", {"text": "changed by the SDK client"})
    got_update = await rec.wait_for(lambda: WATCHED in rec.updated, timeout)
    after = await session.read_resource(WATCHED)
    unsubscribed = await session.unsubscribe_resource(WATCHED)
    updates_before = len(rec.updated)
    await session.call_tool("update_watched_resource", {"text": "after unsubscribe"})
    # A ping round trip: an update sent before its answer would have been read by now.
    await session.send_ping()
    report["subscription"] = {
        "subscribe_result": dump(subscribed),
        "update_received": got_update,
        "read_after_update": [dump(c) for c in after.contents],
        "unsubscribe_result": dump(unsubscribed),
        "updates_after_unsubscribe": len(rec.updated) - updates_before,
    }


async def _prompts(session: ClientSession, report: dict[str, Any]) -> None:
    listed = await session.list_prompts()
    report["prompts"] = {prompt.name: dump(prompt) for prompt in listed.prompts}
    arguments = {
        "test_prompt_with_arguments": {"arg1": "testValue1", "arg2": "testValue2"},
        "test_prompt_with_embedded_resource": {"resourceUri": "test://example-resource"},
    }
    report["prompt_messages"] = {
        name: [dump(m) for m in (await session.get_prompt(name, arguments.get(name))).messages]
        for name in report["prompts"]
        if not name.startswith("test_input_required_result_")  # the 2026 peer's
    }
    completion = await session.complete(
        types.PromptReference(type="ref/prompt", name="test_prompt_with_arguments"),
        {"name": "arg1", "value": "te"},
    )
    report["completion"] = dump(completion.completion)


async def exercise(
    session: ClientSession, rec: Recorder, report: dict[str, Any], timeout: float
) -> None:
    init = await session.initialize()
    report["protocol_version"] = init.protocol_version
    report["server_info"] = dump(init.server_info)
    report["capabilities"] = dump(init.capabilities)
    report["ping"] = dump(await session.send_ping())
    report["set_level"] = dump(await session.set_logging_level("debug"))
    await _tools(session, rec, report, timeout)
    await _resources(session, rec, report, timeout)
    await _prompts(session, report)
    report["final_ping"] = dump(await session.send_ping())


async def run(opts: argparse.Namespace, server_argv: list[str], report: dict[str, Any]) -> None:
    rec = Recorder()
    params = StdioServerParameters(
        command=server_argv[0], args=server_argv[1:], env=dict(os.environ)
    )
    try:
        with anyio.fail_after(opts.overall_timeout):
            async with (
                stdio_client(params) as (read, write),
                ClientSession(
                    read,
                    write,
                    read_timeout_seconds=opts.timeout,
                    sampling_callback=rec.on_sampling,
                    elicitation_callback=rec.on_elicitation,
                    list_roots_callback=rec.on_list_roots,
                    logging_callback=rec.on_log,
                    message_handler=rec.on_message,
                ) as session,
            ):
                await exercise(session, rec, report, opts.timeout)
    finally:
        report["sampling_requests"] = rec.sampling
        report["elicitation_requests"] = rec.elicitations
        report["notifications"] = rec.notifications
        report["log_count"] = len(rec.logs)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if "--" not in args:
        print("usage: sdk_everything_client.py [options] -- <server argv...>", file=sys.stderr)
        return 2
    split = args.index("--")
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--timeout", type=float, default=20.0, help="per request/wait (s)")
    parser.add_argument("--overall-timeout", type=float, default=120.0, help="whole run (s)")
    opts = parser.parse_args(args[:split])
    server_argv = args[split + 1 :]
    if not server_argv:
        parser.error("missing server argv after --")
    report: dict[str, Any] = {"server_argv": server_argv}
    # logging/setLevel and resources/subscribe are deprecated in 2026-07-28 only; the
    # session negotiates 2025-11-25, where they are current.
    warnings.simplefilter("ignore", MCPDeprecationWarning)
    status = 0
    try:
        anyio.run(run, opts, server_argv, report)
    except Exception as exc:  # report every failure, exception groups included, as JSON
        report["error"] = f"{type(exc).__name__}: {exc}"
        report["traceback"] = traceback.format_exc()
        status = 1
    json.dump(report, sys.stdout, indent=2, default=str)
    sys.stdout.write("\n")
    return status


if __name__ == "__main__":
    raise SystemExit(main())
