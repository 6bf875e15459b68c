"""Handlers the application registers: declared capabilities, server requests answered,
notifications dispatched."""

from __future__ import annotations

import logging
from typing import Any

import pytest
import trio
import trio.testing

from tests.client.helpers import RecordingServer, client_and_server
from trimcp import serde
from trimcp.client import ClientHandlers, Progress, connect_memory
from trimcp.errors import INVALID_PARAMS, METHOD_NOT_FOUND, LocalProtocolError, McpError
from trimcp.session import RequestContext
from trimcp.types import (
    CallToolResult,
    ClientCapabilities,
    CreateMessageRequestParams,
    CreateMessageResult,
    ElicitationSchema,
    ElicitRequestFormParams,
    ElicitRequestParams,
    ElicitRequestURLParams,
    ElicitResult,
    ListRootsResult,
    LoggingMessageNotificationParams,
    Root,
    SamplingCapability,
    SamplingMessage,
    StringSchema,
    TextContent,
)


async def sample(ctx: RequestContext, params: CreateMessageRequestParams) -> CreateMessageResult:
    first = params.messages[0].content
    assert isinstance(first, TextContent)
    return CreateMessageResult(
        role="assistant", content=TextContent(text=f"echo: {first.text}"), model="test-model"
    )


async def elicit(ctx: RequestContext, params: ElicitRequestParams) -> ElicitResult:
    if isinstance(params, ElicitRequestURLParams):
        return ElicitResult(action="decline")
    return ElicitResult(action="accept", content={"name": "Ada"})


SAMPLING_REQUEST = CreateMessageRequestParams(
    messages=[SamplingMessage(role="user", content=TextContent(text="hi"))], max_tokens=10
)
FORM_REQUEST = ElicitRequestFormParams(
    message="Your name?",
    requested_schema=ElicitationSchema(properties={"name": StringSchema()}, required=["name"]),
)
URL_REQUEST = ElicitRequestURLParams(
    message="Sign in", url="https://example.com/login", elicitation_id="e1"
)


#: What a client declares for running the server's sampling / elicitation as tasks
#: (2025-11-25, offered by default; see tests/client/test_task_receiver.py).
TASKS_SAMPLING: dict[str, Any] = {
    "list": {},
    "cancel": {},
    "requests": {"sampling": {"createMessage": {}}},
}
TASKS_ELICIT: dict[str, Any] = {
    "list": {},
    "cancel": {},
    "requests": {"elicitation": {"create": {}}},
}


@pytest.mark.parametrize(
    ("kwargs", "wire"),
    [
        ({}, {}),
        ({"sampling_handler": sample}, {"sampling": {}, "tasks": TASKS_SAMPLING}),
        (
            {"sampling_handler": sample, "sampling_capability": SamplingCapability(tools={})},
            {"sampling": {"tools": {}}, "tasks": TASKS_SAMPLING},
        ),
        ({"elicitation_handler": elicit}, {"elicitation": {"form": {}}, "tasks": TASKS_ELICIT}),
        (
            {"elicitation_handler": elicit, "elicitation_modes": ("form", "url")},
            {"elicitation": {"form": {}, "url": {}}, "tasks": TASKS_ELICIT},
        ),
        (
            {"elicitation_handler": elicit, "elicitation_modes": ["url"]},
            {"elicitation": {"url": {}}, "tasks": TASKS_ELICIT},
        ),
        ({"roots": []}, {"roots": {"listChanged": True}}),
        ({"on_log_message": print, "on_tools_list_changed": print}, {}),
        (
            {"sampling_handler": sample, "protocol_version": "2025-06-18"},
            {"sampling": {}},  # tasks exist only from 2025-11-25
        ),
    ],
    ids=[
        "none",
        "sampling",
        "sampling-tools",
        "form",
        "form+url",
        "url",
        "roots",
        "callbacks",
        "sampling-2025-06-18",
    ],
)
async def test_capabilities_follow_the_registered_handlers(
    kwargs: dict[str, Any], wire: dict[str, Any]
) -> None:
    server = RecordingServer()
    async with connect_memory(server, **kwargs):
        pass
    (init,) = server.params_of("initialize")
    assert serde.unstructure(init.capabilities) == wire


def test_elicitation_modes_are_checked() -> None:
    with pytest.raises(ValueError, match="elicitation_modes"):
        ClientHandlers(elicitation_modes=())
    with pytest.raises(ValueError, match="elicitation_modes"):
        ClientHandlers(elicitation_modes=("form", "popup"))  # type: ignore[arg-type]
    assert ClientHandlers().capabilities() == ClientCapabilities()


async def test_sampling_request_is_answered_by_the_handler() -> None:
    async with client_and_server(RecordingServer(), sampling_handler=sample) as (_c, server):
        result = await server.send_request("sampling/createMessage", SAMPLING_REQUEST)
    assert result == CreateMessageResult(
        role="assistant", content=TextContent(text="echo: hi"), model="test-model"
    )


async def test_sampling_from_inside_a_tool_call() -> None:
    # The usual shape: the server asks the client's LLM while it handles a tool call.
    server = RecordingServer()

    @server.request_handler("tools/call")
    async def call(ctx: RequestContext) -> CallToolResult:
        sampled = await ctx.send_request("sampling/createMessage", SAMPLING_REQUEST)
        return CallToolResult(content=[sampled.content])

    async with connect_memory(server, sampling_handler=sample) as client:
        result = await client.call_tool("ask")
    assert result.content == [TextContent(text="echo: hi")]


async def test_elicitation_form_and_url_modes() -> None:
    async with client_and_server(
        RecordingServer(), elicitation_handler=elicit, elicitation_modes=("form", "url")
    ) as (_c, server):
        form = await server.send_request("elicitation/create", FORM_REQUEST)
        url = await server.send_request("elicitation/create", URL_REQUEST)
    assert form == ElicitResult(action="accept", content={"name": "Ada"})
    assert url == ElicitResult(action="decline")


async def test_a_mode_the_client_did_not_declare_is_refused() -> None:
    async with client_and_server(RecordingServer(), elicitation_handler=elicit) as (_c, server):
        with pytest.raises(McpError) as info:
            await server.send_request("elicitation/create", URL_REQUEST)
        assert info.value.code == INVALID_PARAMS
        assert "url-mode" in info.value.message


async def test_roots_from_a_list_and_from_a_provider() -> None:
    roots = [Root(uri="file:///work", name="work")]
    async with client_and_server(RecordingServer(), roots=roots) as (_c, server):
        assert await server.send_request("roots/list") == ListRootsResult(roots=roots)

    calls = 0

    async def provider() -> list[Root]:
        nonlocal calls
        calls += 1
        return [Root(uri=f"file:///call{calls}")]

    async with client_and_server(RecordingServer(), roots=provider) as (_c, server):
        first = await server.send_request("roots/list")
        second = await server.send_request("roots/list")
    assert [r.uri for r in first.roots + second.roots] == ["file:///call1", "file:///call2"]


async def test_roots_changes_are_announced() -> None:
    server = RecordingServer()
    changes: list[Any] = []

    @server.notification_handler("notifications/roots/list_changed")
    async def changed(session: Any, params: Any) -> None:
        changes.append(params)

    async with client_and_server(server, roots=[Root(uri="file:///a")]) as (client, session):
        await client.notify_roots_changed()
        await client.set_roots([Root(uri="file:///b")])
        await trio.testing.wait_all_tasks_blocked()
        assert len(changes) == 2
        result = await session.send_request("roots/list")
        assert [r.uri for r in result.roots] == ["file:///b"]


async def test_roots_cannot_be_announced_without_the_capability() -> None:
    async with connect_memory(RecordingServer()) as client:
        with pytest.raises(LocalProtocolError, match="roots"):
            await client.notify_roots_changed()
        with pytest.raises(LocalProtocolError, match="roots"):
            await client.set_roots([])


@pytest.mark.parametrize(
    ("method", "params"),
    [
        ("sampling/createMessage", SAMPLING_REQUEST),
        ("roots/list", None),
        ("elicitation/create", FORM_REQUEST),
        ("custom/whatever", {"x": 1}),
    ],
)
async def test_unhandled_server_requests_get_method_not_found(method: str, params: Any) -> None:
    async with client_and_server(RecordingServer()) as (client, server):
        with pytest.raises(McpError) as info:
            await server.send_request(method, params)
        assert info.value.code == METHOD_NOT_FOUND
        await client.ping()


async def test_a_cancel_from_the_server_cancels_the_sampling_handler(autojump_clock: Any) -> None:
    seen: list[str] = []

    async def slow_sample(ctx: RequestContext, params: Any) -> CreateMessageResult:
        seen.append("started")
        try:
            await trio.sleep(100)
        except trio.Cancelled:
            seen.append("cancelled")
            raise
        raise AssertionError("not reached")

    async with client_and_server(RecordingServer(), sampling_handler=slow_sample) as (c, server):
        with trio.move_on_after(5) as scope:
            await server.send_request("sampling/createMessage", SAMPLING_REQUEST)
        assert scope.cancelled_caught  # the request was still waiting: no early answer
        await trio.testing.wait_all_tasks_blocked()
        assert seen == ["started", "cancelled"]
        await c.ping()


class Recorder:
    """Plain and async callbacks that record what they were given."""

    def __init__(self) -> None:
        self.events: list[tuple[str, Any]] = []

    def log(self, params: LoggingMessageNotificationParams) -> None:
        self.events.append(("log", (params.level, params.logger, params.data)))

    async def tools(self) -> None:
        self.events.append(("tools", None))

    def resources(self) -> None:
        self.events.append(("resources", None))

    async def prompts(self) -> None:
        self.events.append(("prompts", None))

    async def updated(self, uri: str) -> None:
        self.events.append(("updated", uri))

    def elicitation_complete(self, elicitation_id: str) -> None:
        self.events.append(("elicitation_complete", elicitation_id))

    async def other(self, method: str, params: Any) -> None:
        self.events.append((method, params))


async def test_notifications_reach_their_callbacks() -> None:
    r = Recorder()
    async with client_and_server(
        RecordingServer(),
        on_log_message=r.log,
        on_tools_list_changed=r.tools,
        on_resources_list_changed=r.resources,
        on_prompts_list_changed=r.prompts,
        on_resource_updated=r.updated,
        on_elicitation_complete=r.elicitation_complete,
        on_notification=r.other,
    ) as (_client, server):
        await server.send_notification(
            "notifications/message", {"level": "error", "logger": "db", "data": {"x": 1}}
        )
        await server.send_notification("notifications/tools/list_changed")
        await server.send_notification("notifications/resources/list_changed")
        await server.send_notification("notifications/prompts/list_changed")
        await server.send_notification("notifications/resources/updated", {"uri": "file:///a"})
        await server.send_notification(
            "notifications/elicitation/complete", {"elicitationId": "e1"}
        )
        await server.send_notification("custom/thing", {"y": 2})
        await trio.testing.wait_all_tasks_blocked()
    assert r.events == [
        ("log", ("error", "db", {"x": 1})),
        ("tools", None),
        ("resources", None),
        ("prompts", None),
        ("updated", "file:///a"),
        ("elicitation_complete", "e1"),
        ("custom/thing", {"y": 2}),
    ]


async def test_server_logs_go_to_the_python_logger_by_default(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG, logger="trimcp.client")
    async with client_and_server(RecordingServer()) as (_client, server):
        await server.send_notification(
            "notifications/message", {"level": "warning", "logger": "db", "data": "disk full"}
        )
        await server.send_notification("notifications/tools/list_changed")
        await trio.testing.wait_all_tasks_blocked()
    records = [r for r in caplog.records if r.name == "trimcp.client.server_log"]
    assert [(r.levelno, r.getMessage()) for r in records] == [(logging.WARNING, "[db] 'disk full'")]


async def test_a_failing_callback_is_logged_and_the_session_goes_on(
    caplog: pytest.LogCaptureFixture,
) -> None:
    calls: list[str] = []

    def broken() -> None:
        calls.append("broken")
        raise RuntimeError("callback bug")

    async with client_and_server(RecordingServer(), on_tools_list_changed=broken) as (c, server):
        await server.send_notification("notifications/tools/list_changed")
        await server.send_notification("notifications/tools/list_changed")
        await trio.testing.wait_all_tasks_blocked()
        await c.ping()
    assert calls == ["broken", "broken"]
    failures = [r for r in caplog.records if r.exc_info and "list_changed" in r.getMessage()]
    assert len(failures) == 2
    assert all(str(r.exc_info[1]) == "callback bug" for r in failures if r.exc_info)


async def test_global_progress_sees_every_request_with_its_target(autojump_clock: Any) -> None:
    server = RecordingServer()

    @server.request_handler("tools/call")
    async def call(ctx: RequestContext) -> CallToolResult:
        await ctx.report_progress(1, 2, "half")
        await ctx.report_progress(2, 2)
        return CallToolResult(content=[])

    @server.request_handler("prompts/list")
    async def prompts(ctx: RequestContext) -> dict[str, Any]:
        await ctx.report_progress(0.5)
        return {"prompts": []}

    updates: list[Progress] = []
    per_call: list[float] = []
    async with connect_memory(server, on_progress=updates.append) as client:
        await client.call_tool("work", on_progress=lambda p, t, m: per_call.append(p))
        await client.list_prompts()
    assert updates == [
        Progress(method="tools/call", target="work", progress=1, total=2, message="half"),
        Progress(method="tools/call", target="work", progress=2, total=2, message=None),
        Progress(method="prompts/list", target=None, progress=0.5, total=None, message=None),
    ]
    assert per_call == [1, 2]
