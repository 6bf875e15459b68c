"""2026-07-28 over Streamable HTTP: one POST per request, no session, same endpoint as 2025."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from typing import Any

import pytest
import trio
import trio.testing

from tests.http_server.helpers import WAIT, AsgiClient, Exchange, running_app
from trimcp import Context, Server
from trimcp.protocol import modern
from trimcp.transports.http_server import HttpServerConfig, McpHttpApp

V = "2026-07-28"
CAPS: dict[str, Any] = {"elicitation": {}, "sampling": {}, "roots": {}}


def meta(**extra: Any) -> dict[str, Any]:
    base = {
        modern.META_PROTOCOL_VERSION: V,
        modern.META_CLIENT_CAPABILITIES: CAPS,
        modern.META_CLIENT_INFO: {"name": "t", "version": "1"},
    }
    base.update(extra)
    return base


class Fixture:
    def __init__(self) -> None:
        self.started = trio.Event()
        self.cancelled = trio.Event()
        self.ran: list[str] = []


def make_server(fixture: Fixture) -> Server:
    app = Server("modern", "2.0")

    @app.tool()
    def echo(text: str) -> str:
        return text

    @app.tool()
    async def progress(ctx: Context) -> str:
        await ctx.report_progress(1, 2)
        await ctx.info("halfway")
        return "done"

    @app.tool()
    async def greet(ctx: Context) -> str:
        fixture.ran.append("greet")
        answer = await ctx.elicit(
            "Name?",
            {"type": "object", "properties": {"name": {"type": "string"}}},
            key="user_name",
        )
        assert answer.data is not None
        return f"Hello, {answer.data['name']}!"

    @app.tool()
    async def slow(ctx: Context) -> str:
        fixture.started.set()
        try:
            await trio.sleep_forever()
        finally:
            fixture.cancelled.set()
        return "never"

    @app.tool(
        input_schema={
            "type": "object",
            "properties": {
                "region": {"type": "string", "x-mcp-header": "Region"},
                "query": {"type": "string"},
            },
            "required": ["region"],
        }
    )
    def routed(region: str, query: str = "") -> str:
        return region

    @app.resource("test://static")
    def static() -> str:
        return "static text"

    return app


def headers_for(
    method: str, params: Any, *, version: str | None = V, drop: Sequence[str] = (), **override: str
) -> list[tuple[str, str]]:
    headers = {"content-type": "application/json", "accept": "application/json, text/event-stream"}
    if version is not None:
        headers.update(
            {k.lower(): v for k, v in modern.standard_headers(method, params, version).items()}
        )
    for name in drop:
        headers.pop(name, None)
    headers.update({k.replace("_", "-"): v for k, v in override.items()})
    return list(headers.items())


async def post(
    client: AsgiClient,
    method: str,
    params: dict[str, Any] | None = None,
    request_id: int = 1,
    *,
    wait: bool = True,
    with_meta: bool = True,
    extra: Sequence[tuple[str, str]] = (),
    **header_options: Any,
) -> Exchange:
    params = dict(params or {})
    if with_meta:
        params.setdefault("_meta", meta())
    body = {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}
    headers = headers_for(method, params, **header_options)
    headers.extend(extra)
    exchange = client.start("POST", headers=headers, body=body)
    if wait:
        await exchange.wait_finished()
    return exchange


@asynccontextmanager
async def serving(
    config: HttpServerConfig | None = None,
) -> AsyncIterator[tuple[McpHttpApp, AsgiClient, Fixture]]:
    fixture = Fixture()
    async with running_app(config, make_server(fixture)) as (app, client):
        yield app, client, fixture


def answer_of(exchange: Exchange) -> Any:
    if exchange.headers["content-type"].startswith("application/json"):
        return exchange.json()
    return [m for m in exchange.messages() if "method" not in m][-1]


async def test_discover_and_a_call_answer_json_without_a_session() -> None:
    async with serving() as (app, client, _):
        found = await post(client, "server/discover")
        assert found.status == 200
        assert "mcp-session-id" not in found.headers
        result = found.json()["result"]
        assert result["supportedVersions"][0] == V
        assert "2025-11-25" in result["supportedVersions"]
        assert result["resultType"] == "complete"
        assert result["_meta"][modern.META_SERVER_INFO] == {"name": "modern", "version": "2.0"}
        assert "ttlMs" in result
        assert "cacheScope" in result
        call = await post(client, "tools/call", {"name": "echo", "arguments": {"text": "hi"}})
        assert call.headers["content-type"] == "application/json"
        assert call.json()["result"]["content"] == [{"type": "text", "text": "hi"}]
        assert app.manager.alive == 0  # nothing kept once answered


async def test_notifications_turn_the_answer_into_an_event_stream() -> None:
    async with serving() as (_, client, _):
        reply = await post(
            client,
            "tools/call",
            {
                "name": "progress",
                "_meta": meta(progressToken="p", **{modern.META_LOG_LEVEL: "info"}),
            },
        )
        assert reply.headers["content-type"] == "text/event-stream"
        methods = [m.get("method") for m in reply.messages()]
        assert methods == ["notifications/progress", "notifications/message", None]
        assert answer_of(reply)["result"]["resultType"] == "complete"


async def test_no_log_messages_without_a_log_level() -> None:
    async with serving() as (_, client, _):
        reply = await post(
            client, "tools/call", {"name": "progress", "_meta": meta(progressToken="p")}
        )
        methods = [m.get("method") for m in reply.messages()]
        assert methods == ["notifications/progress", None]


@pytest.mark.parametrize(
    ("options", "fragment"),
    [
        ({"drop": ["mcp-method"]}, "Mcp-Method header is missing"),
        ({"mcp_method": "tools/list"}, "does not match body method"),
        ({"drop": ["mcp-name"]}, "Mcp-Name header is missing"),
        ({"mcp_name": "other"}, "does not match body name"),
        ({"mcp_protocol_version": "2025-11-25"}, "does not match"),
    ],
)
async def test_header_mismatch_is_400_and_nothing_runs(
    options: dict[str, Any], fragment: str
) -> None:
    async with serving() as (_, client, fixture):
        reply = await post(client, "tools/call", {"name": "greet"}, request_id=7, **options)
        assert reply.status == 400
        error = reply.json()
        assert error["id"] == 7
        assert error["error"]["code"] == -32020
        assert fragment in error["error"]["message"]
        assert fixture.ran == []


async def test_missing_protocol_version_header_on_a_2026_body() -> None:
    async with serving() as (_, client, _):
        reply = await post(client, "tools/list", version=None, extra=[("mcp-method", "tools/list")])
        assert reply.status == 400
        assert reply.json()["error"]["code"] == -32020


async def test_param_headers_are_checked_against_the_arguments() -> None:
    async with serving() as (_, client, _):
        args = {"name": "routed", "arguments": {"region": "us-west1"}}
        good = await post(client, "tools/call", args, extra=[("mcp-param-region", "us-west1")])
        assert good.status == 200
        assert good.json()["result"]["content"][0]["text"] == "us-west1"
        missing = await post(client, "tools/call", args)
        assert missing.status == 400
        assert "Mcp-Param-region is missing" in missing.json()["error"]["message"]
        wrong = await post(client, "tools/call", args, extra=[("mcp-param-region", "eu")])
        assert wrong.json()["error"]["code"] == -32020
        bad_b64 = await post(
            client, "tools/call", args, extra=[("mcp-param-region", "=?base64?SGVsbG8?=")]
        )
        assert bad_b64.status == 400
        encoded = await post(
            client,
            "tools/call",
            {"name": "routed", "arguments": {"region": "Hello"}},
            extra=[("mcp-param-region", "=?base64?SGVsbG8=?=")],
        )
        assert encoded.status == 200


async def test_envelope_errors_are_400_with_the_spec_data() -> None:
    async with serving() as (_, client, _):
        no_meta = await post(client, "server/discover", with_meta=False, request_id=101)
        assert no_meta.status == 400
        assert no_meta.json() == {
            "jsonrpc": "2.0",
            "id": 101,
            "error": {
                "code": -32602,
                "message": no_meta.json()["error"]["message"],
                "data": {"path": "params._meta"},
            },
        }
        bad = meta(**{modern.META_PROTOCOL_VERSION: "v999"})
        unsupported = await post(client, "server/discover", {"_meta": bad}, version="v999")
        assert unsupported.status == 400
        data = unsupported.json()["error"]["data"]
        assert data["requested"] == "v999"
        assert data["supported"][0] == V


async def test_removed_and_unknown_methods_are_404() -> None:
    async with serving() as (_, client, _):
        for method in (
            "initialize",
            "ping",
            "logging/setLevel",
            "resources/subscribe",
            "resources/unsubscribe",
            "unknown/method",
        ):
            reply = await post(client, method, request_id=500)
            assert reply.status == 404, method
            assert reply.json()["error"]["code"] == -32601
            assert reply.json()["id"] == 500


async def test_resource_not_found_is_invalid_params_in_2026() -> None:
    async with serving() as (_, client, _):
        reply = await post(client, "resources/read", {"uri": "test://missing"})
        error = reply.json()["error"]
        assert error["code"] == -32602
        found = await post(client, "resources/read", {"uri": "test://static"})
        result = found.json()["result"]
        assert result["cacheScope"] == "private"
        assert result["ttlMs"] == 0


async def test_elicitation_through_input_required() -> None:
    async with serving() as (_, client, fixture):
        first = (await post(client, "tools/call", {"name": "greet"})).json()["result"]
        assert first["resultType"] == "input_required"
        assert first["inputRequests"]["user_name"]["method"] == "elicitation/create"
        retry = await post(
            client,
            "tools/call",
            {
                "name": "greet",
                "inputResponses": {"user_name": {"action": "accept", "content": {"name": "Ada"}}},
                "requestState": first["requestState"],
            },
            request_id=2,
        )
        assert retry.json()["result"]["content"][0]["text"] == "Hello, Ada!"
        assert fixture.ran == ["greet", "greet"]  # the same body, run twice


async def test_a_tampered_state_runs_nothing() -> None:
    async with serving() as (_, client, fixture):
        first = (await post(client, "tools/call", {"name": "greet"})).json()["result"]
        fixture.ran.clear()
        state = first["requestState"]
        tampered = state[:-2] + ("A" if state[-2] != "A" else "B") + state[-1]
        reply = await post(
            client,
            "tools/call",
            {
                "name": "greet",
                "requestState": tampered,
                "inputResponses": {"user_name": {"action": "accept", "content": {"name": "x"}}},
            },
        )
        assert reply.json()["error"]["code"] == -32602
        assert "requestState" in reply.json()["error"]["message"]
        assert fixture.ran == []


async def test_a_client_disconnect_cancels_the_request() -> None:
    async with serving() as (app, client, fixture):
        exchange = await post(client, "tools/call", {"name": "slow"}, wait=False)
        with trio.fail_after(WAIT):
            await fixture.started.wait()
        exchange.disconnect()
        with trio.fail_after(WAIT):
            await fixture.cancelled.wait()
        await exchange.wait_returned()
        assert exchange.status is None  # nothing was sent
        assert app.manager.alive == 0


async def test_the_handler_timeout_applies(autojump_clock: trio.testing.MockClock) -> None:
    from trimcp.session import SessionOptions

    config = HttpServerConfig(session_options=SessionOptions(handler_timeout=5))
    async with serving(config) as (_, client, fixture):
        reply = await post(client, "tools/call", {"name": "slow"})
        assert reply.json()["error"]["code"] == -32001
        assert fixture.cancelled.is_set()


async def test_get_and_delete_with_a_2026_header_are_405() -> None:
    async with serving() as (_, client, _):
        for method in ("GET", "DELETE"):
            reply = await client.request(
                method, headers=[("mcp-protocol-version", V), ("accept", "text/event-stream")]
            )
            assert reply.status == 405
            assert reply.headers["allow"] == "POST"


async def test_an_unknown_header_version_on_a_legacy_body_stays_400() -> None:
    async with serving() as (_, client, _):
        reply = await client.post(
            {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}, version="1999-01-01"
        )
        assert reply.status == 400
        assert "Unsupported MCP-Protocol-Version" in reply.json()["error"]["message"]


async def test_a_2026_request_on_a_2025_session_is_refused() -> None:
    async with serving() as (_, client, fixture):
        session_id = await client.initialize()
        body = {
            "jsonrpc": "2.0",
            "id": 3,
            "method": "tools/call",
            "params": {"name": "greet", "_meta": meta()},
        }
        reply = await client.post(body, session_id=session_id)
        error = answer_of(reply)["error"]
        assert error["code"] == -32600
        assert "initialize" in error["message"]
        assert fixture.ran == []


async def test_a_2025_request_with_a_2026_header_is_refused() -> None:
    async with serving() as (_, client, _):
        reply = await post(client, "tools/list", with_meta=False)
        assert reply.status == 400
        assert reply.json()["error"]["code"] == -32602


async def test_listen_streams_acknowledge_then_tag_changes() -> None:
    async with serving() as (app, client, _):
        server = app._lifespan_of
        assert isinstance(server, Server)
        exchange = await post(
            client,
            "subscriptions/listen",
            {
                "notifications": {
                    "toolsListChanged": True,
                    "resourceSubscriptions": ["test://static", "test://nope"],
                }
            },
            request_id=9,
            wait=False,
        )
        ack = await exchange.next_message()
        assert exchange.headers["content-type"] == "text/event-stream"
        assert ack["method"] == "notifications/subscriptions/acknowledged"
        assert ack["params"]["_meta"] == {modern.META_SUBSCRIPTION_ID: 9}
        assert ack["params"]["notifications"] == {
            "toolsListChanged": True,
            "resourceSubscriptions": ["test://static"],
        }
        server.add_tool(lambda: "new", name="fresh")
        changed = await exchange.next_message()
        assert changed == {
            "jsonrpc": "2.0",
            "method": "notifications/tools/list_changed",
            "params": {"_meta": {modern.META_SUBSCRIPTION_ID: 9}},
        }
        await server.notify_resource_updated("test://static")
        updated = await exchange.next_message()
        assert updated["params"] == {
            "_meta": {modern.META_SUBSCRIPTION_ID: 9},
            "uri": "test://static",
        }
        await app.shutdown()  # ends the stream gracefully, with its result
        final = await exchange.next_message()
        assert final["id"] == 9
        assert final["result"] == {
            "resultType": "complete",
            "_meta": {
                modern.META_SUBSCRIPTION_ID: 9,
                modern.META_SERVER_INFO: {"name": "modern", "version": "2.0"},
            },
        }


async def test_json_response_mode_still_serves_listen_as_a_stream() -> None:
    # A listen stream has no answer to wait for: JSON-response mode (which turns answers
    # into one JSON body) serves it as an event stream, as it must, and the calls around
    # it still answer in one JSON body.
    async with serving(HttpServerConfig(json_response=True)) as (app, client, _):
        server = app._lifespan_of
        assert isinstance(server, Server)
        called = await post(client, "tools/call", {"name": "progress", "arguments": {}})
        assert called.headers["content-type"].startswith("application/json")
        assert called.json()["result"]["content"][0]["text"] == "done"
        exchange = await post(
            client,
            "subscriptions/listen",
            {"notifications": {"toolsListChanged": True}},
            request_id=4,
            wait=False,
        )
        ack = await exchange.next_message()
        assert exchange.status == 200
        assert exchange.headers["content-type"] == "text/event-stream"
        assert ack["method"] == "notifications/subscriptions/acknowledged"
        server.add_tool(lambda: "new", name="fresh")
        changed = await exchange.next_message()
        assert changed["method"] == "notifications/tools/list_changed"
        await app.shutdown()
        assert (await exchange.next_message())["id"] == 4


async def test_a_listen_request_with_no_kinds_is_refused() -> None:
    async with serving() as (_, client, _):
        reply = await post(client, "subscriptions/listen", {"notifications": {}})
        error = reply.json()["error"]
        assert error["code"] == -32602
        assert "at least one kind" in error["message"]
        falsy = await post(
            client, "subscriptions/listen", {"notifications": {"toolsListChanged": False}}
        )
        assert falsy.json()["error"]["code"] == -32602


async def test_a_low_level_server_serves_2026_too() -> None:
    """LowLevelServer's raw handlers answer stateless requests (ctx.session is None)."""
    from tests.http_server.helpers import ServerLog
    from tests.http_server.helpers import make_server as make_low_level

    log = ServerLog()
    async with running_app(server=make_low_level(log)) as (_app, client):
        found = await post(client, "server/discover")
        assert found.json()["result"]["supportedVersions"][0] == V
        call = await post(client, "tools/call", {"name": "echo", "arguments": {"text": "lo"}})
        assert call.json()["result"]["content"][0]["text"] == "lo"
        assert call.json()["result"]["resultType"] == "complete"
        assert log.sessions == [None]


async def test_finished_requests_leave_no_memory_behind() -> None:
    """Memory held after many stateless calls does not grow with their number."""
    import gc
    import tracemalloc

    async with serving() as (_, client, _):

        async def calls(n: int) -> None:
            for i in range(n):
                reply = await post(
                    client, "tools/call", {"name": "echo", "arguments": {"text": f"t{i}"}}, i
                )
                assert reply.status == 200

        await calls(50)  # warm caches (cattrs hooks, capabilities) first
        gc.collect()
        tracemalloc.start()
        try:
            await calls(200)
            gc.collect()
            after_200, _ = tracemalloc.get_traced_memory()
            await calls(600)
            gc.collect()
            after_800, _ = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
    # 600 more calls may not keep more than a few KiB (no per-request table or cache).
    assert after_800 - after_200 < 16 * 1024, (after_200, after_800)


async def test_listen_streams_take_no_session_slot_and_are_bounded_per_caller(
    autojump_clock: trio.testing.MockClock,
) -> None:
    # Issue 21: each listen stream took one of max_sessions: 2 listens from one client
    # and every other request got 503. Now streams have their own bounds (per principal,
    # 429; in total, 503) and ordinary requests go on.
    fixture = Fixture()
    server = make_server(fixture)
    server.listen_hub.max_per_principal = 2
    config = HttpServerConfig(max_sessions=2)
    async with running_app(config, server) as (app, client):
        listen = {"notifications": {"toolsListChanged": True}}
        streams = []
        for n in range(2):
            exchange = await post(client, "subscriptions/listen", listen, request_id=n, wait=False)
            assert (await exchange.next_message())["method"].endswith("acknowledged")
            streams.append(exchange)
        assert app.manager.alive == 0
        assert app.manager.streams == 2
        call = await post(client, "tools/call", {"name": "echo", "arguments": {"text": "hi"}})
        assert call.status == 200  # not 503: the streams hold no session slot
        refused = await post(client, "subscriptions/listen", listen, request_id=7)
        assert refused.status == 429
        error = refused.json()["error"]
        assert error["code"] == -32603
        assert "listen_max_streams_per_principal" in error["message"]
        assert refused.json()["id"] == 7
        assert server.listen_hub.streams_of(None) == 2
        await app.shutdown()  # the streams still end with their result
        for n, exchange in enumerate(streams):
            assert (await exchange.next_message())["id"] == n
