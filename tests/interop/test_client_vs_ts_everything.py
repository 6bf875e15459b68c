"""Interop: trimcp's client drives the official TypeScript everything server
(``@modelcontextprotocol/server-everything``, pinned in ``ts_everything/setup.sh``) over
stdio and over Streamable HTTP: the handshake (also at older revisions), tools (plain,
structured, images, annotations, links, embedded resources, errors), progress (also for
concurrent calls), logging and its level, sampling, form and URL elicitation, roots,
resources and templates, subscriptions, list changes, prompts, completion, ping,
cancellation and timeouts (``notifications/cancelled`` checked on the wire), and the clean
close (the child exits by itself; the HTTP session is DELETEd).

Every test runs once per transport (the ``peer`` fixture, ``ts_everything/conftest.py``).
A real subprocess, so the real clock: waits are bounded and wake on events, nothing sleeps.

Tasks (``simulate-research-query`` as a task, and the ``*-async`` tools, for which the
client runs the server's sampling and elicitation as tasks) are in
test_client_tasks_vs_ts_everything.py.
"""

from __future__ import annotations

import base64
import gzip
import json
from typing import Any

import pytest
import trio

from tests.interop.ts_everything.conftest import (  # fixtures: the tests live one level up
    Inbox,
    Peer,
    StdioPeer,
    TsEverything,
    peer_fixture,  # noqa: F401
    ts_everything_fixture,  # noqa: F401
)
from trimcp.client import Era, Progress
from trimcp.errors import McpError, RequestTimeout
from trimcp.session import RequestContext
from trimcp.transports.stdio import ShutdownTimeouts
from trimcp.types import (
    BlobResourceContents,
    CreateMessageRequestParams,
    CreateMessageResult,
    ElicitRequestFormParams,
    ElicitRequestParams,
    ElicitRequestURLParams,
    ElicitResult,
    EmbeddedResource,
    ImageContent,
    LoggingMessageNotificationParams,
    PromptReference,
    ResourceLink,
    ResourceTemplateReference,
    Root,
    TextContent,
    TextResourceContents,
)

LONG = "trigger-long-running-operation"
BASE_TOOLS = {
    "echo", "get-annotated-message", "get-env", "get-resource-links", "get-resource-reference",
    "get-structured-content", "get-sum", "get-tiny-image", "gzip-file-as-resource",
    "toggle-simulated-logging", "toggle-subscriber-updates", LONG, "simulate-research-query",
}  # fmt: skip
PNG = b"\x89PNG\r\n\x1a\n"


def texts(result: Any) -> list[str]:
    return [block.text for block in result.content if isinstance(block, TextContent)]


def text(result: Any) -> str:
    return "".join(texts(result))


def log_text(log: LoggingMessageNotificationParams) -> str:
    return log.data if isinstance(log.data, str) else ""


# --- the handshake ---------------------------------------------------------------------------


async def test_initialize_and_ping(peer: Peer) -> None:
    async with peer.connect() as client:
        assert client.server_info.name == "mcp-servers/everything"
        assert client.server_info.title == "Everything Reference Server"
        assert client.server_info.version == "2.0.0"
        assert client.protocol_version == "2025-11-25"
        # This server is 2025-only: the default mode="auto" probed with server/discover,
        # was refused, and fell back to initialize.
        assert client.era is Era.LEGACY
        assert client.instructions is not None
        assert client.instructions.startswith("# Everything Server")
        caps = client.server_capabilities
        assert caps.tools is not None
        assert caps.tools.list_changed is True
        assert caps.prompts is not None
        assert caps.prompts.list_changed is True
        assert caps.resources is not None
        assert caps.resources.subscribe is True
        assert caps.resources.list_changed is True
        assert caps.logging is not None
        assert caps.completions is not None
        assert caps.tasks is not None
        await client.ping()
        await client.ping()


@pytest.mark.parametrize("version", ["2025-06-18", "2025-03-26", "2024-11-05"])
async def test_older_protocol_versions(peer: Peer, version: str) -> None:
    async with peer.connect(protocol_version=version) as client:
        assert client.protocol_version == version
        assert text(await client.call_tool("echo", {"message": version})) == f"Echo: {version}"
        await client.ping()


# --- tools -----------------------------------------------------------------------------------


async def test_tools(peer: Peer) -> None:
    async with peer.connect() as client:
        tools = {tool.name: tool async for tool in client.iter_tools()}
        # Without sampling, elicitation or roots, the tools that need them are not offered.
        assert set(tools) == BASE_TOOLS
        assert tools["echo"].title == "Echo Tool"
        assert tools["echo"].input_schema["required"] == ["message"]
        assert tools["echo"].annotations is not None
        assert tools["echo"].annotations.read_only_hint is True
        assert tools["get-structured-content"].output_schema is not None

        assert text(await client.call_tool("echo", {"message": "héllo ✓"})) == "Echo: héllo ✓"
        summed = await client.call_tool("get-sum", {"a": 2, "b": 3.5})
        assert text(summed) == "The sum of 2 and 3.5 is 5.5."

        # Validated by the client against the listed output schema.
        weather = await client.call_tool("get-structured-content", {"location": "Chicago"})
        expected = {"temperature": 36, "conditions": "Light rain / drizzle", "humidity": 82}
        assert weather.structured_content == expected
        assert json.loads(text(weather)) == expected

        image = await client.call_tool("get-tiny-image")
        [picture] = [block for block in image.content if isinstance(block, ImageContent)]
        assert picture.mime_type == "image/png"
        assert base64.b64decode(picture.data).startswith(PNG)

        annotated = await client.call_tool(
            "get-annotated-message", {"messageType": "error", "includeImage": True}
        )
        first, second = annotated.content
        assert isinstance(first, TextContent)
        assert first.text == "Error: Operation failed"
        assert first.annotations is not None
        assert first.annotations.priority == 1
        assert first.annotations.audience == ["user", "assistant"]
        assert isinstance(second, ImageContent)
        assert second.annotations is not None
        assert second.annotations.audience == ["user"]

        linked = await client.call_tool("get-resource-links", {"count": 2})
        links = [block for block in linked.content if isinstance(block, ResourceLink)]
        assert [str(link.uri) for link in links] == [
            "demo://resource/dynamic/blob/1",
            "demo://resource/dynamic/text/2",
        ]

        referenced = await client.call_tool(
            "get-resource-reference", {"resourceType": "Blob", "resourceId": 4}
        )
        [embedded] = [b for b in referenced.content if isinstance(b, EmbeddedResource)]
        assert isinstance(embedded.resource, BlobResourceContents)
        assert str(embedded.resource.uri) == "demo://resource/dynamic/blob/4"
        assert base64.b64decode(embedded.resource.blob).startswith(b"Resource 4: ")

        # The server reports bad calls as tool errors, not as protocol errors.
        unknown = await client.call_tool("no-such-tool", {})
        assert unknown.is_error is True
        assert "Tool no-such-tool not found" in text(unknown)
        invalid = await client.call_tool("echo", {})
        assert invalid.is_error is True
        assert "Input validation error" in text(invalid)
        await client.ping()


async def test_progress_also_for_concurrent_calls(peer: Peer) -> None:
    everything: list[Progress] = []
    async with peer.connect(on_progress=everything.append) as client:
        steps: list[tuple[float, float | None, str | None]] = []
        done = await client.call_tool(
            LONG, {"duration": 0.3, "steps": 3}, on_progress=lambda p, t, m: steps.append((p, t, m))
        )
        assert text(done) == "Long running operation completed. Duration: 0.3 seconds, Steps: 3."
        assert steps == [(1, 3, None), (2, 3, None), (3, 3, None)]
        assert [(p.method, p.target, p.progress, p.total) for p in everything] == [
            ("tools/call", LONG, 1, 3),
            ("tools/call", LONG, 2, 3),
            ("tools/call", LONG, 3, 3),
        ]

        # Four calls in flight at once: each one's progress reaches its own callback.
        seen: dict[int, list[float]] = {n: [] for n in (1, 2, 3, 4)}
        results: dict[int, str] = {}

        async def call(n: int) -> None:
            result = await client.call_tool(
                LONG,
                {"duration": 0.1 * n, "steps": n},
                on_progress=lambda p, t, m: seen[n].append(p),
            )
            results[n] = text(result)

        async with trio.open_nursery() as nursery:
            for n in seen:
                nursery.start_soon(call, n)
        assert seen == {n: [float(i) for i in range(1, n + 1)] for n in seen}
        assert all(f"Steps: {n}." in results[n] for n in seen)


# --- notifications: logging, subscriptions, list changes ------------------------------------------


async def test_logging_and_its_level(peer: Peer) -> None:
    logs: Inbox[LoggingMessageNotificationParams] = Inbox()
    async with peer.connect(on_log_message=logs.append) as client:
        await peer.notifications_ready()
        # The server logs every (un)subscribe at level info.
        subscribed = "Received Subscribe Resource request for URI: demo://resource/dynamic/text/"
        await client.subscribe_resource("demo://resource/dynamic/text/1")
        first = await logs.wait_for(lambda log: log_text(log).startswith(subscribed + "1"))
        assert first.level == "info"

        await client.set_logging_level("warning")
        await client.subscribe_resource("demo://resource/dynamic/text/2")  # info: filtered out
        await client.set_logging_level("info")
        await client.unsubscribe_resource("demo://resource/dynamic/text/2")
        await logs.wait_for(lambda log: "Unsubscribe Resource request" in log_text(log))
        # Logs arrive in order, so the filtered one would have come before this one.
        assert not [log for log in logs.items if log_text(log).startswith(subscribed + "2")]

        # Simulated logging sends one message at once (a random level), then every 5 s.
        await client.set_logging_level("debug")
        started = await client.call_tool("toggle-simulated-logging")
        assert "Started simulated, random-leveled logging" in text(started)
        simulated = await logs.wait_for(
            lambda log: "-level message" in log_text(log) or "level-message" in log_text(log)
        )
        assert simulated.level in {
            "debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"
        }  # fmt: skip
        stopped = await client.call_tool("toggle-simulated-logging")
        assert "Stopped simulated logging" in text(stopped)
        await client.unsubscribe_resource("demo://resource/dynamic/text/1")


async def test_resource_subscriptions(peer: Peer) -> None:
    updated: Inbox[str] = Inbox()
    async with peer.connect(on_resource_updated=updated.append) as client:
        await peer.notifications_ready()
        uri = "demo://resource/dynamic/text/7"
        await client.subscribe_resource(uri)
        # The updater sends one round at once for every subscribed URI, then every 5 s.
        started = await client.call_tool("toggle-subscriber-updates")
        assert "Started simulated resource updated notifications" in text(started)
        await updated.wait_for(lambda seen: seen == uri)
        assert set(updated.items) == {uri}
        stopped = await client.call_tool("toggle-subscriber-updates")
        assert "Stopped simulated resource updates" in text(stopped)
        await client.unsubscribe_resource(uri)


# --- requests from the server: sampling, elicitation, roots -------------------------------------


async def test_sampling_elicitation_and_roots(peer: Peer) -> None:
    sampled: list[CreateMessageRequestParams] = []
    asked: list[ElicitRequestParams] = []
    answers = iter([
        ElicitResult(action="accept", content={
            "name": "Ada", "check": True, "integer": 7, "untitledMultipleSelectEnum": ["Piano"],
            "titledSingleSelectEnum": "hero-2",
        }),
        ElicitResult(action="decline"),
        ElicitResult(action="accept"),  # the URL-mode elicitation
        ElicitResult(action="accept"),  # the retried call after the -32042 error
    ])  # fmt: skip
    logs: Inbox[LoggingMessageNotificationParams] = Inbox()
    roots_asked = Inbox[int]()
    roots = [Root(uri="file:///work/project", name="project")]

    async def model(ctx: RequestContext, params: CreateMessageRequestParams) -> CreateMessageResult:
        sampled.append(params)
        return CreateMessageResult(
            role="assistant", content=TextContent(text="forty-two"), model="toy-model",
            stop_reason="endTurn",
        )  # fmt: skip

    async def user(ctx: RequestContext, params: ElicitRequestParams) -> ElicitResult:
        asked.append(params)
        return next(answers)

    async def list_roots() -> list[Root]:
        roots_asked.append(len(roots))
        return list(roots)

    async with peer.connect(
        sampling_handler=model,
        elicitation_handler=user,
        elicitation_modes=("form", "url"),
        roots=list_roots,
        on_log_message=logs.append,
    ) as client:
        await peer.notifications_ready()
        tools = {tool.name async for tool in client.iter_tools()}
        # Offered once the server knows what the client can do.
        assert tools == BASE_TOOLS | {
            "trigger-sampling-request", "trigger-elicitation-request", "trigger-url-elicitation",
            "get-roots-list",
            # The client declares running sampling and elicitation as tasks.
            "trigger-sampling-request-async", "trigger-elicitation-request-async",
        }  # fmt: skip

        # Sampling: the server asks our model from inside its tool call.
        answer = await client.call_tool("trigger-sampling-request", {"prompt": "6 x 7?",
                                                                     "maxTokens": 20})  # fmt: skip
        [request] = sampled
        assert request.max_tokens == 20
        assert request.system_prompt == "You are a helpful test server."
        assert request.temperature == 0.7
        assert request.messages[0].role == "user"
        assert request.messages[0].content == TextContent(
            text="Resource trigger-sampling-request context: 6 x 7?"
        )
        reported = json.loads(text(answer).split("\n", 1)[1])
        assert reported == {
            "model": "toy-model", "role": "assistant", "stopReason": "endTurn",
            "content": {"type": "text", "text": "forty-two"},
        }  # fmt: skip

        # Form elicitation, with every kind of field the spec allows, accepted then declined.
        accepted = await client.call_tool("trigger-elicitation-request")
        assert texts(accepted)[0] == "✅ User provided the requested information!"
        assert "- Name: Ada\n- Agreed to terms: true\n- Favorite Integer: 7" in texts(accepted)[1]
        raw = json.loads(texts(accepted)[2].split("Raw result: ", 1)[1])
        assert raw["content"]["untitledMultipleSelectEnum"] == ["Piano"]
        form = asked[0]
        assert isinstance(form, ElicitRequestFormParams)
        schema = form.requested_schema
        assert schema.required == ["name"]
        assert set(schema.properties) == {
            "name", "check", "firstLine", "email", "homepage", "birthdate", "integer", "number",
            "untitledSingleSelectEnum", "untitledMultipleSelectEnum", "titledSingleSelectEnum",
            "titledMultipleSelectEnum", "legacyTitledEnum",
        }  # fmt: skip
        declined = await client.call_tool("trigger-elicitation-request")
        assert texts(declined)[0] == "❌ User declined to provide the requested information."

        # URL elicitation: the request path, then the -32042 error path and its retry.
        arguments = {"url": "https://example.com/authorize", "elicitationId": "e-1"}
        opened = await client.call_tool("trigger-url-elicitation", arguments)
        assert texts(opened)[0].startswith("✅ User completed the URL elicitation flow.")
        url_request = asked[2]
        assert isinstance(url_request, ElicitRequestURLParams)
        assert url_request.url == "https://example.com/authorize"
        assert url_request.elicitation_id == "e-1"
        error_path = {"url": "https://example.com/consent", "errorPath": True}
        with pytest.raises(McpError) as required:
            await client.call_tool("trigger-url-elicitation", error_path)
        assert required.value.code == -32042
        [prerequisite] = required.value.data["elicitations"]
        assert prerequisite["mode"] == "url"
        assert prerequisite["url"] == "https://modelcontextprotocol.io"
        retried = await client.call_tool("trigger-url-elicitation", error_path)
        assert texts(retried)[0].startswith("✅ User completed the URL elicitation flow.")
        assert len(asked) == 4

        # Roots: listed on demand, then asked again after the client announces a change.
        listed = await client.call_tool("get-roots-list")
        assert "Current MCP Roots (1 total)" in text(listed)
        assert "URI: file:///work/project" in text(listed)
        roots.append(Root(uri="file:///work/other", name="other"))
        await client.set_roots(list_roots)
        await roots_asked.wait_for(lambda count: count == 2)
        await logs.wait_for(lambda log: "Roots updated: 2 root(s)" in log_text(log))
        relisted = await client.call_tool("get-roots-list")
        assert "Current MCP Roots (2 total)" in text(relisted)
        assert "2. other\n   URI: file:///work/other" in text(relisted)


# --- resources, templates, prompts, completion -------------------------------------------------


async def test_resources_and_templates(peer: Peer, ts_everything: TsEverything) -> None:
    changed: Inbox[str] = Inbox()
    async with peer.connect(on_resources_list_changed=lambda: changed.append("resources")) as (
        client
    ):
        await peer.notifications_ready()
        resources = {str(r.uri): r async for r in client.iter_resources()}
        documents = sorted(path.name for path in ts_everything.docs_dir.iterdir())
        assert sorted(resources) == [f"demo://resource/static/document/{d}" for d in documents]
        uri = "demo://resource/static/document/features.md"
        assert resources[uri].mime_type == "text/markdown"
        [document] = (await client.read_resource(uri)).contents
        assert isinstance(document, TextResourceContents)
        assert document.text == (ts_everything.docs_dir / "features.md").read_text("utf-8")

        templates = [t async for t in client.iter_resource_templates()]
        assert [(t.uri_template, t.mime_type) for t in templates] == [
            ("demo://resource/dynamic/text/{resourceId}", "text/plain"),
            ("demo://resource/dynamic/blob/{resourceId}", "application/octet-stream"),
        ]
        [plain] = (await client.read_resource("demo://resource/dynamic/text/5")).contents
        assert isinstance(plain, TextResourceContents)
        assert plain.text.startswith("Resource 5: This is a plaintext resource created at ")
        [blob] = (await client.read_resource("demo://resource/dynamic/blob/3")).contents
        assert isinstance(blob, BlobResourceContents)
        assert base64.b64decode(blob.blob).startswith(b"Resource 3: This is a base64 blob")

        with pytest.raises(McpError, match="Unknown resource"):
            await client.read_resource("demo://resource/dynamic/text/0")
        with pytest.raises(McpError, match="not found") as missing:
            await client.read_resource("demo://nowhere")
        assert missing.value.code == -32602

        # A tool that adds a resource to the session: the list changes, the blob reads back.
        data = b"hello from trimcp\n" * 20
        data_uri = "data:text/plain;base64," + base64.b64encode(data).decode()
        linked = await client.call_tool(
            "gzip-file-as-resource", {"name": f"{peer.name}.txt.gz", "data": data_uri}
        )
        [link] = linked.content
        assert isinstance(link, ResourceLink)
        assert str(link.uri) == f"demo://resource/session/{peer.name}.txt.gz"
        await changed.wait_for(lambda seen: seen == "resources")
        assert str(link.uri) in {str(r.uri) async for r in client.iter_resources()}
        [zipped] = (await client.read_resource(str(link.uri))).contents
        assert isinstance(zipped, BlobResourceContents)
        assert zipped.mime_type == "application/gzip"
        assert gzip.decompress(base64.b64decode(zipped.blob)) == data


async def test_prompts_and_completion(peer: Peer) -> None:
    async with peer.connect() as client:
        prompts = {p.name: p async for p in client.iter_prompts()}
        assert set(prompts) == {"simple-prompt", "args-prompt", "completable-prompt",
                                "resource-prompt"}  # fmt: skip
        arguments = {a.name: a.required for a in prompts["args-prompt"].arguments or []}
        assert arguments == {"city": True, "state": False}

        simple = await client.get_prompt("simple-prompt")
        assert simple.messages[0].content == TextContent(
            text="This is a simple prompt without arguments."
        )
        both = await client.get_prompt("args-prompt", {"city": "Austin", "state": "TX"})
        assert both.messages[0].role == "user"
        assert both.messages[0].content == TextContent(text="What's weather in Austin, TX?")
        one = await client.get_prompt("args-prompt", {"city": "Paris"})
        assert one.messages[0].content == TextContent(text="What's weather in Paris?")
        with pytest.raises(McpError) as missing:
            await client.get_prompt("args-prompt", {})
        assert missing.value.code == -32602

        embedded = await client.get_prompt("resource-prompt", {"resourceType": "Text",
                                                               "resourceId": "9"})  # fmt: skip
        resource = embedded.messages[1].content
        assert isinstance(resource, EmbeddedResource)
        assert isinstance(resource.resource, TextResourceContents)
        assert str(resource.resource.uri) == "demo://resource/dynamic/text/9"

        departments = await client.complete(
            PromptReference(name="completable-prompt"), "department", "S"
        )
        assert departments.completion.values == ["Sales", "Support"]
        # The second argument's completions depend on the first one's value.
        people = await client.complete(
            PromptReference(name="completable-prompt"), "name", "",
            context_arguments={"department": "Engineering"},
        )  # fmt: skip
        assert people.completion.values == ["Alice", "Bob", "Charlie"]
        kinds = await client.complete(PromptReference(name="resource-prompt"), "resourceType", "B")
        assert kinds.completion.values == ["Blob"]
        ids = await client.complete(
            ResourceTemplateReference(uri="demo://resource/dynamic/text/{resourceId}"),
            "resourceId", "12",
        )  # fmt: skip
        assert ids.completion.values == ["12"]
        none = await client.complete(
            ResourceTemplateReference(uri="demo://resource/dynamic/blob/{resourceId}"),
            "resourceId", "x",
        )  # fmt: skip
        assert none.completion.values == []
        await client.ping()


# --- cancellation, timeouts and closing ----------------------------------------------------------


async def test_cancel_and_timeout_send_cancelled_and_the_session_goes_on(peer: Peer) -> None:
    async with peer.connect_wired() as wired:
        client, sent = wired.client, wired.recorder.sent

        def sent_calls() -> list[dict[str, Any]]:
            return [m for m in sent.items if m.get("method") == "tools/call"]

        # Cancel from the caller's side once the server is demonstrably running the tool.
        with trio.CancelScope() as scope:
            await client.call_tool(
                LONG, {"duration": 2, "steps": 8}, on_progress=lambda p, t, m: scope.cancel()
            )
        assert scope.cancelled_caught
        [call] = sent_calls()
        notice = await sent.wait_for(lambda m: m.get("method") == "notifications/cancelled")
        assert notice["params"]["requestId"] == call["id"]

        # A timeout cancels on the server too.
        with pytest.raises(RequestTimeout):
            await client.call_tool(LONG, {"duration": 2, "steps": 2}, timeout=0.2)
        timed_out = sent_calls()[-1]
        await sent.wait_for(
            lambda m: (
                m.get("method") == "notifications/cancelled"
                and m["params"]["requestId"] == timed_out["id"]
            )
        )

        # The session goes on: the server's late progress for the cancelled calls is
        # ignored, and new calls (with progress) work.
        await client.ping()
        assert text(await client.call_tool("echo", {"message": "still here"})) == (
            "Echo: still here"
        )
        steps: list[float] = []
        finished = await client.call_tool(
            LONG, {"duration": 0.2, "steps": 2}, on_progress=lambda p, t, m: steps.append(p)
        )
        assert steps == [1, 2]
        assert "Steps: 2." in text(finished)
        assert len(sent_calls()) == 4


async def test_clean_close(peer: Peer) -> None:
    with trio.fail_after(15):
        async with peer.connect_wired() as wired:
            reply = await wired.client.call_tool("echo", {"message": "bye"})
            assert text(reply) == "Echo: bye"
        # stdio: the child exited by itself once its stdin closed (no signal);
        # http: the client DELETEd its session and the server closed it.
        await peer.assert_closed_cleanly()


async def test_stdio_close_lets_a_busy_server_finish(ts_everything: TsEverything) -> None:
    peer = StdioPeer(ts_everything)
    # Plenty of time to finish after stdin closes: the operation has 1.5 s left.
    patient = ShutdownTimeouts(after_stdin_close=10.0)
    async with peer.connect_wired(shutdown=patient) as wired:
        with trio.CancelScope() as scope:
            await wired.client.call_tool(
                LONG, {"duration": 2, "steps": 4}, on_progress=lambda p, t, m: scope.cancel()
            )
        assert scope.cancelled_caught
    # The server ignores notifications/cancelled for this tool and keeps reporting its
    # progress; per the spec's shutdown (close stdin, wait for the exit) it may, then exits
    # 0 when done. Regression: trimcp closed the child's stdout with its stdin, so the
    # server died of EPIPE on its next write (exit 1).
    assert not [line for line in peer.stderr.items if "EPIPE" in line]
    await peer.assert_closed_cleanly()
