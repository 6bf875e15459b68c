"""The client in the 2026-07-28 (stateless) era, against scripted servers: era choice and
fallback, the ``_meta`` envelope, input_required rounds, and the bad answers a server may
give (no common version, endless input_required, malformed input requests)."""

from __future__ import annotations

from typing import Any

import pytest
import trio
import trio.testing

from trimcp import McpError
from trimcp.client import Client, Era, ListenNotAcknowledged, Subscription, SubscriptionLost
from trimcp.client.mrtr import InputRoundsExceeded, MalformedInputRequest
from trimcp.client.stateless import (
    META_CLIENT_CAPABILITIES,
    META_CLIENT_INFO,
    META_LOG_LEVEL,
    META_PROTOCOL_VERSION,
    NoCommonVersion,
)
from trimcp.errors import (
    INTERNAL_ERROR,
    UNSUPPORTED_PROTOCOL_VERSION,
    LocalProtocolError,
    made_here,
)
from trimcp.session import RequestContext
from trimcp.testing import ScriptedServer
from trimcp.types import (
    CreateMessageRequestParams,
    CreateMessageResult,
    ElicitRequestParams,
    ElicitResult,
    Implementation,
    Root,
    TextContent,
)

V2026 = "2026-07-28"


def done(text: str) -> dict[str, Any]:
    return {"resultType": "complete", "content": [{"type": "text", "text": text}]}


def meta_of(message: dict[str, Any]) -> dict[str, Any]:
    return dict(message["params"]["_meta"])


async def accept(ctx: RequestContext, params: ElicitRequestParams) -> ElicitResult:
    return ElicitResult(action="accept", content={"name": "octocat"})


async def sample(ctx: RequestContext, params: CreateMessageRequestParams) -> CreateMessageResult:
    return CreateMessageResult(
        role="assistant", content=TextContent(text="Paris"), model="test-model"
    )


async def test_auto_speaks_2026_with_a_stateless_server_and_sends_the_envelope() -> None:
    server = ScriptedServer(name="modern", protocol_version=V2026, instructions="be nice")
    server.expect("tools/list").reply({"resultType": "complete", "tools": []})
    server.expect("tools/call", {"name": "echo"}).reply(done("hi"))
    async with server.open_client(client_info=Implementation(name="me", version="1")) as client:
        assert client.era is Era.MODERN
        assert client.protocol_version == V2026
        assert client.server_info.name == "modern"
        assert client.instructions == "be nice"
        assert client.discover_result.supported_versions == [V2026]
        with pytest.raises(LocalProtocolError, match="no initialize"):
            client.initialize_result  # noqa: B018
        await client.list_tools()
        result = await client.call_tool("echo", {"text": "hi"})
        assert result.content == [TextContent(text="hi")]
    methods = [m["method"] for m in server.requests()]
    assert methods == ["server/discover", "tools/list", "tools/call"]
    assert server.notifications() == []  # no notifications/initialized in 2026
    for request in server.requests():
        meta = meta_of(request)
        assert meta[META_PROTOCOL_VERSION] == V2026
        assert meta[META_CLIENT_INFO] == {"name": "me", "version": "1"}
        assert isinstance(meta[META_CLIENT_CAPABILITIES], dict)
        assert META_LOG_LEVEL not in meta


async def test_auto_falls_back_to_initialize_with_a_2025_server() -> None:
    server = ScriptedServer(name="old")
    server.expect("tools/call").reply({"content": []})
    async with server.open_client(mode="auto") as client:
        assert client.era is Era.LEGACY
        assert client.protocol_version == "2025-11-25"
        assert client.initialize_result.server_info.name == "old"
        await client.call_tool("x")
    methods = [m["method"] for m in server.requests()]
    assert methods == ["server/discover", "initialize", "tools/call"]
    assert "_meta" not in (server.requests("tools/call")[0].get("params") or {})


async def test_legacy_mode_sends_initialize_first() -> None:
    server = ScriptedServer(protocol_version=V2026)
    server.expect("initialize").reply(
        {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "serverInfo": {"name": "d", "version": "1"},
        }
    )
    server.auto_initialize = False
    server.expect("notifications/initialized")
    async with server.open_client(mode="legacy") as client:
        assert client.era is Era.LEGACY
    assert [m["method"] for m in server.requests()] == ["initialize"]


async def test_a_version_list_with_nothing_in_common_is_a_clear_error() -> None:
    server = ScriptedServer(auto_initialize=False)
    server.expect("server/discover").reply(
        {"supportedVersions": ["2099-01-01"], "capabilities": {}}
    )
    with pytest.raises(NoCommonVersion) as info:
        async with server.open_client(mode="auto"):
            pass
    assert info.value.code == UNSUPPORTED_PROTOCOL_VERSION
    assert "2099-01-01" in info.value.message
    assert "2026-07-28" in info.value.message


async def test_unsupported_version_error_is_retried_once_with_a_listed_version() -> None:
    server = ScriptedServer(auto_initialize=False)
    server.expect("server/discover").error(
        UNSUPPORTED_PROTOCOL_VERSION,
        "Unsupported protocol version",
        {"supported": [V2026], "requested": V2026},
    )
    server.expect("server/discover").reply(
        {"supportedVersions": [V2026], "capabilities": {"tools": {}}}
    )
    async with server.open_client(mode="auto") as client:
        assert client.era is Era.MODERN
        assert client.server_info.name == "unknown"  # it did not say
    first, second = server.requests("server/discover")
    assert first["id"] != second["id"]


async def test_a_refusal_repeated_after_the_retry_is_not_retried_forever() -> None:
    server = ScriptedServer(auto_initialize=False)
    for _ in range(2):
        server.expect("server/discover").error(
            UNSUPPORTED_PROTOCOL_VERSION, "no", {"supported": [V2026]}
        )
    with pytest.raises(NoCommonVersion):
        async with server.open_client(mode="auto"):
            pass
    assert len(server.requests("server/discover")) == 2


async def test_pinned_2026_does_not_fall_back() -> None:
    server = ScriptedServer()  # a 2025 server: discover gets -32601
    with pytest.raises(McpError, match="mode='2026-07-28' needs a 2026-07-28 server") as info:
        async with server.open_client(mode=V2026):
            pass
    assert info.value.code == -32601  # the server's own code is kept
    assert "mode='auto'" in info.value.message
    assert [m["method"] for m in server.requests()] == ["server/discover"]


async def test_a_silent_server_is_taken_for_a_2025_one(autojump_clock: Any) -> None:
    server = ScriptedServer(auto_initialize=False)
    server.expect("server/discover")  # no answer: some 2025 servers ignore it
    server.expect("notifications/cancelled")
    server.expect("initialize").reply(
        {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "serverInfo": {"name": "quiet", "version": "1"},
        }
    )
    server.expect("notifications/initialized")
    async with server.open_client(mode="auto", discover_timeout=3) as client:
        assert client.era is Era.LEGACY


def test_mode_is_checked() -> None:
    with pytest.raises(ValueError, match="mode"):
        Client(mode="2020-01-01")
    with pytest.raises(ValueError, match="max_input_rounds"):
        Client(max_input_rounds=0)


async def test_input_required_is_answered_and_retried_with_the_echoed_state() -> None:
    server = ScriptedServer(protocol_version=V2026)
    state = '{"nonce": "n1",  "x": 1}'  # odd spacing: must come back byte for byte
    server.expect("tools/call", {"name": "login"}).reply(
        {
            "resultType": "input_required",
            "inputRequests": {
                "who": {
                    "method": "elicitation/create",
                    "params": {
                        "message": "GitHub login?",
                        "requestedSchema": {
                            "type": "object",
                            "properties": {"name": {"type": "string"}},
                        },
                    },
                },
                "llm": {
                    "method": "sampling/createMessage",
                    "params": {
                        "messages": [
                            {"role": "user", "content": {"type": "text", "text": "capital?"}}
                        ],
                        "maxTokens": 10,
                    },
                },
                "dirs": {"method": "roots/list", "params": {}},
            },
            "requestState": state,
        }
    )
    server.expect("tools/call", {"name": "login"}).reply(done("welcome"))
    async with server.open_client(
        elicitation_handler=accept,
        sampling_handler=sample,
        roots=[Root(uri="file:///w")],
    ) as client:
        result = await client.call_tool("login", {"a": 1})
        assert result.content == [TextContent(text="welcome")]
    first, retry = server.requests("tools/call")
    assert first["id"] != retry["id"]
    assert retry["params"]["arguments"] == {"a": 1}
    assert retry["params"]["requestState"] == state
    responses = retry["params"]["inputResponses"]
    assert responses["who"] == {"action": "accept", "content": {"name": "octocat"}}
    assert responses["llm"]["content"] == {"type": "text", "text": "Paris"}
    assert responses["dirs"] == {"roots": [{"uri": "file:///w"}]}
    caps = meta_of(first)[META_CLIENT_CAPABILITIES]
    assert {"elicitation", "sampling", "roots"} <= set(caps)


async def test_no_request_state_means_none_in_the_retry() -> None:
    server = ScriptedServer(protocol_version=V2026)
    server.expect("prompts/get").reply(
        {
            "resultType": "input_required",
            "inputRequests": {
                "c": {
                    "method": "elicitation/create",
                    "params": {
                        "message": "ok?",
                        "requestedSchema": {"type": "object", "properties": {}},
                    },
                }
            },
        }
    )
    server.expect("prompts/get").reply({"resultType": "complete", "messages": []})
    async with server.open_client(elicitation_handler=accept) as client:
        await client.get_prompt("p")
    retry = server.requests("prompts/get")[1]
    assert "requestState" not in retry["params"]
    assert "c" in retry["params"]["inputResponses"]


async def test_endless_input_required_stops_after_max_rounds() -> None:
    server = ScriptedServer(protocol_version=V2026, ordered=False)
    forever = {"resultType": "input_required", "requestState": "again"}
    for _ in range(4):
        server.expect("resources/read").reply(forever)
    async with server.open_client(max_input_rounds=3) as client:
        with pytest.raises(InputRoundsExceeded) as info:
            await client.read_resource("file:///x")
    assert info.value.code == INTERNAL_ERROR
    assert info.value.data == {"method": "resources/read", "target": "file:///x", "rounds": 3}
    assert "max_input_rounds" in info.value.message
    assert len(server.requests("resources/read")) == 4  # the first try and three retries


@pytest.mark.parametrize(
    ("answer", "message"),
    [
        ({"resultType": "input_required"}, "neither inputRequests nor requestState"),
        (
            {"resultType": "input_required", "inputRequests": {"k": {"method": "tools/call"}}},
            "not one of",
        ),
        ({"resultType": "input_required", "inputRequests": {"k": 5}}, "has no method"),
        (
            {
                "resultType": "input_required",
                "inputRequests": {"k": {"method": "elicitation/create", "params": {"message": 3}}},
            },
            "invalid params",
        ),
    ],
)
async def test_malformed_input_required_results_are_refused(
    answer: dict[str, Any], message: str
) -> None:
    server = ScriptedServer(protocol_version=V2026)
    server.expect("tools/call").reply(answer)
    async with server.open_client(elicitation_handler=accept) as client:
        with pytest.raises(MalformedInputRequest, match=message):
            await client.call_tool("t")
    assert len(server.requests("tools/call")) == 1


async def test_input_for_a_handler_the_client_lacks_names_it() -> None:
    server = ScriptedServer(protocol_version=V2026)
    server.expect("tools/call").reply(
        {
            "resultType": "input_required",
            "inputRequests": {
                "llm": {
                    "method": "sampling/createMessage",
                    "params": {"messages": [], "maxTokens": 1},
                }
            },
        }
    )
    async with server.open_client() as client:
        with pytest.raises(McpError, match="no sampling handler"):
            await client.call_tool("t")


async def test_an_unknown_result_type_is_an_error() -> None:
    server = ScriptedServer(protocol_version=V2026)
    # ("task" is the tasks extension's, which trimcp's client declares: tests/tasks.)
    server.expect("tools/call").reply({"resultType": "eventually", "content": []})
    server.expect("tools/list").reply({"resultType": "input_required", "requestState": "s"})
    async with server.open_client() as client:
        with pytest.raises(McpError, match="resultType 'eventually'"):
            await client.call_tool("t")
        with pytest.raises(McpError, match="cannot have"):
            await client.list_tools()


async def test_an_absent_result_type_is_complete() -> None:
    server = ScriptedServer(protocol_version=V2026)
    server.expect("tools/call").reply({"content": []})
    async with server.open_client() as client:
        assert (await client.call_tool("t")).content == []
    assert len(server.requests("tools/call")) == 1


async def test_log_level_travels_in_meta_and_ping_is_discover() -> None:
    server = ScriptedServer(protocol_version=V2026)
    server.expect("tools/call").reply(done("a"))
    server.expect("tools/call").reply(done("b"))
    async with server.open_client(log_level="warning") as client:
        await client.call_tool("t")
        await client.set_logging_level("debug")
        await client.call_tool("t")
        await client.ping()
        await client.notify_roots_changed()  # nothing to send in 2026
        with pytest.raises(LocalProtocolError, match="listen"):
            await client.subscribe_resource("file:///a")
    first, second = server.requests("tools/call")
    assert meta_of(first)[META_LOG_LEVEL] == "warning"
    assert meta_of(second)[META_LOG_LEVEL] == "debug"
    assert [m["method"] for m in server.requests()][-1] == "server/discover"
    assert server.notifications() == []


async def test_cancelling_a_2026_request_over_a_shared_channel_sends_the_cancel(
    autojump_clock: Any,
) -> None:
    server = ScriptedServer(protocol_version=V2026)
    release = trio.Event()
    server.expect("tools/call").hold(release)
    server.expect("notifications/cancelled")
    async with server.open_client() as client:
        with trio.move_on_after(1):
            await client.call_tool("slow")
        await server.wait_done()
        release.set()
    cancel = server.notifications("notifications/cancelled")[0]
    assert cancel["params"]["requestId"] == server.requests("tools/call")[0]["id"]


SUB = "io.modelcontextprotocol/subscriptionId"


async def test_listen_yields_the_opted_in_changes_and_ends_gracefully() -> None:
    server = ScriptedServer(protocol_version=V2026)
    # Ids are the client's own: server/discover was 1, so this listen request is 2.
    server.expect(
        "subscriptions/listen",
        {"notifications": {"toolsListChanged": True, "resourceSubscriptions": ["file:///a"]}},
    ).notify(
        "notifications/subscriptions/acknowledged",
        {"_meta": {SUB: 2}, "notifications": {"toolsListChanged": True}},
    ).notify("notifications/tools/list_changed", {"_meta": {SUB: 2}}).notify(
        "notifications/resources/updated", {"_meta": {SUB: 2}, "uri": "file:///a"}
    ).notify(
        "notifications/tools/list_changed",
        {"_meta": {SUB: 99}},  # another subscription
    ).reply({"resultType": "complete", "_meta": {SUB: 2}})
    changed: list[str] = []
    async with (
        server.open_client(on_tools_list_changed=lambda: changed.append("tools")) as c,
        c.listen(tools_list_changed=True, resource_subscriptions=["file:///a"]) as sub,
    ):
        assert sub.id == 2
        assert sub.acknowledged is not None
        assert sub.acknowledged.tools_list_changed is True
        assert sub.acknowledged.resource_subscriptions is None  # not honoured
        events = [(event.method, event.uri) async for event in sub]
    assert events == [
        ("notifications/tools/list_changed", None),
        ("notifications/resources/updated", "file:///a"),
    ]
    assert changed == ["tools", "tools"]  # the callback hears every list change
    meta = meta_of(server.requests("subscriptions/listen")[0])
    assert meta[META_PROTOCOL_VERSION] == V2026


async def test_leaving_listen_cancels_it_on_the_wire() -> None:
    server = ScriptedServer(protocol_version=V2026)
    hold = trio.Event()
    server.expect("subscriptions/listen").notify(
        "notifications/subscriptions/acknowledged",
        {"_meta": {SUB: 2}, "notifications": {"promptsListChanged": True}},
    ).hold(hold)
    server.expect("notifications/cancelled", {"requestId": 2})
    async with server.open_client() as client:
        async with client.listen(prompts_list_changed=True) as sub:
            assert sub.id == 2
        await server.wait_done()
        hold.set()


async def test_a_dropped_listen_stream_raises_subscription_lost(autojump_clock: Any) -> None:
    server = ScriptedServer(protocol_version=V2026)
    server.expect("subscriptions/listen").notify(
        "notifications/subscriptions/acknowledged",
        {"_meta": {SUB: 2}, "notifications": {"toolsListChanged": True}},
    ).notify("notifications/tools/list_changed", {"_meta": {SUB: 2}}).send(
        {"jsonrpc": "2.0", "id": 2, "error": {"code": -32000, "message": "stream dropped"}}
    )
    seen: list[str] = []

    async def read_all(sub: Subscription) -> None:
        async for event in sub:
            seen.append(event.method)

    async with server.open_client() as client, client.listen(tools_list_changed=True) as sub:
        with pytest.raises(SubscriptionLost, match="stream dropped"):
            await read_all(sub)
    assert seen == ["notifications/tools/list_changed"]


async def test_a_listen_never_acknowledged_names_the_wait_and_the_server(
    autojump_clock: Any,
) -> None:
    # It raised a bare trio.TooSlowError, saying neither what was awaited nor from whom.
    server = ScriptedServer(name="quiet-one", protocol_version=V2026)
    hold = trio.Event()
    server.expect("subscriptions/listen").hold(hold)
    server.expect("notifications/cancelled", {"requestId": 2})
    async with server.open_client() as client:
        with pytest.raises(ListenNotAcknowledged) as caught:
            async with client.listen(tools_list_changed=True, ack_timeout=5):
                pass
        await server.wait_done()  # the request was cancelled on the wire
        hold.set()
    message = caught.value.message
    assert "The server 'quiet-one' did not acknowledge subscriptions/listen within 5s" in message
    assert "pass a larger ack_timeout to listen()" in message
    assert isinstance(caught.value, trio.TooSlowError)  # what it was: old handlers still work
    assert made_here(caught.value)


async def test_listen_refusals() -> None:
    server = ScriptedServer(protocol_version=V2026)
    server.expect("subscriptions/listen").error(-32602, "no such kind")
    async with server.open_client() as client:
        with pytest.raises(LocalProtocolError, match="at least one"):
            async with client.listen():
                pass
        with pytest.raises(McpError, match="no such kind"):
            async with client.listen(tools_list_changed=True):
                pass
    legacy = ScriptedServer()
    async with legacy.open_client() as client:
        with pytest.raises(LocalProtocolError, match="needs 2026-07-28"):
            client.listen(tools_list_changed=True)


def listing(ttl_ms: int | None, *names: str) -> dict[str, Any]:
    result: dict[str, Any] = {
        "resultType": "complete",
        "cacheScope": "private",
        "tools": [{"name": name, "inputSchema": {"type": "object"}} for name in names],
    }
    if ttl_ms is not None:
        result["ttlMs"] = ttl_ms
    return result


async def test_fresh_results_come_from_the_cache_until_the_ttl_passes(
    autojump_clock: Any,
) -> None:
    server = ScriptedServer(protocol_version=V2026)
    server.expect("tools/list").reply(listing(5_000, "a"))
    server.expect("tools/list").reply(listing(5_000, "b"))
    server.expect("resources/read", {"uri": "file:///x"}).reply(
        {"resultType": "complete", "contents": [], "ttlMs": 60_000, "cacheScope": "public"}
    )
    server.expect("resources/read", {"uri": "file:///y"}).reply(
        {"resultType": "complete", "contents": [], "ttlMs": 0, "cacheScope": "public"}
    )
    server.expect("resources/read", {"uri": "file:///y"}).reply(
        {"resultType": "complete", "contents": []}
    )
    async with server.open_client() as client:
        first = await client.list_tools()
        assert await client.list_tools() is first  # fresh: no request
        await trio.sleep(4.9)
        assert await client.list_tools() is first
        await trio.sleep(0.2)  # now stale: fetched again
        assert [t.name for t in (await client.list_tools()).tools] == ["b"]
        await client.read_resource("file:///x")
        await client.read_resource("file:///x")
        await client.read_resource("file:///y")  # ttlMs 0: never kept
        await client.read_resource("file:///y")
        assert client.cache.hits == 3
    assert len(server.requests("tools/list")) == 2
    assert len(server.requests("resources/read")) == 3


async def test_change_notifications_empty_the_cache() -> None:
    server = ScriptedServer(protocol_version=V2026)
    server.expect("tools/list").reply(listing(60_000, "a"))
    server.expect("tools/call").notify("notifications/tools/list_changed").reply(done("ok"))
    server.expect("tools/list").reply(listing(60_000, "a", "b"))
    server.expect("resources/read").reply(
        {"resultType": "complete", "contents": [], "ttlMs": 60_000}
    )
    server.expect("tools/call").notify(
        "notifications/resources/updated", {"uri": "file:///r"}
    ).reply(done("ok"))
    server.expect("resources/read").reply(
        {"resultType": "complete", "contents": [], "ttlMs": 60_000}
    )
    async with server.open_client() as client:
        await client.list_tools()
        await client.call_tool("change")
        await trio.testing.wait_all_tasks_blocked()  # the notifier task has run
        names = [t.name for t in (await client.list_tools()).tools]
        assert names == ["a", "b"]
        await client.read_resource("file:///r")
        await client.call_tool("touch")
        await trio.testing.wait_all_tasks_blocked()
        await client.read_resource("file:///r")


async def test_retried_and_legacy_results_are_not_cached() -> None:
    server = ScriptedServer(protocol_version=V2026)
    server.expect("resources/read").reply({"resultType": "input_required", "requestState": "s"})
    server.expect("resources/read").reply(
        {"resultType": "complete", "contents": [], "ttlMs": 60_000}
    )
    server.expect("resources/read").reply(
        {"resultType": "complete", "contents": [], "ttlMs": 60_000}
    )
    async with server.open_client(cache_size=8) as client:
        await client.read_resource("file:///r")  # answered after a retry: not kept
        await client.read_resource("file:///r")  # kept now
        await client.read_resource("file:///r")
    assert len(server.requests("resources/read")) == 3
    off = ScriptedServer(protocol_version=V2026)
    off.expect("tools/list").reply(listing(60_000, "a"))
    off.expect("tools/list").reply(listing(60_000, "a"))
    async with off.open_client(cache_size=0) as client:
        await client.list_tools()
        await client.list_tools()


def test_the_cache_is_bounded() -> None:
    from trimcp.client.cache import ResponseCache, cache_key
    from trimcp.types import ListToolsResult, PaginatedRequestParams

    cache = ResponseCache(2)
    for cursor in ("a", "b", "c"):
        key = cache_key("tools/list", PaginatedRequestParams(cursor=cursor))
        assert key is not None
        cache.put(key, ListToolsResult(tools=[], ttl_ms=1000), 0.0)
    assert len(cache) == 2
    assert cache.get(("tools/list", '{"cursor":"a"}'), 0.0) is None
    assert cache.get(("tools/list", '{"cursor":"c"}'), 0.5) is not None
    assert cache.get(("tools/list", '{"cursor":"c"}'), 1.0) is None  # stale at t + ttl
    assert cache_key("tools/call", {}) is None
    with pytest.raises(ValueError, match="max_entries"):
        ResponseCache(-1)
