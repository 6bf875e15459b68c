"""Requests are bounded by a documented default timeout whose error names the request and
how to wait longer; misuse of the client's arguments is a TypeError naming the argument
(issue 16)."""

from __future__ import annotations

from typing import Any

import pytest
import trio

from tests.client.helpers import RecordingServer
from trimcp.client import connect_memory, connect_transport
from trimcp.client.client import DEFAULT_DISCOVER_TIMEOUT
from trimcp.errors import RequestTimeout
from trimcp.session import RequestContext, SessionOptions
from trimcp.transports.memory import memory_transport_pair
from trimcp.types import CallToolResult

#: The documented default (docs/client.md, SessionOptions.request_timeout).
DEFAULT_TIMEOUT = 60.0


def silent_server() -> RecordingServer:
    """A server whose tools never answer."""
    server = RecordingServer()

    @server.request_handler("tools/call")
    async def call(ctx: RequestContext) -> CallToolResult:
        await trio.sleep_forever()
        raise AssertionError

    return server


async def test_a_call_without_a_timeout_ends_after_the_documented_default(
    autojump_clock: Any,
) -> None:
    async with connect_memory(silent_server()) as client:
        start = trio.current_time()
        with pytest.raises(RequestTimeout) as caught:
            await client.call_tool("lookup", {"q": "x"})
        assert trio.current_time() - start == pytest.approx(DEFAULT_TIMEOUT)
    message = caught.value.message
    assert message.startswith("tools/call 'lookup' got no answer within 60s")
    assert "default request timeout" in message
    assert "timeout=SECONDS" in message
    assert "SessionOptions(request_timeout=SECONDS)" in message


async def test_a_timeout_given_to_the_call_is_named_as_such(autojump_clock: Any) -> None:
    async with connect_memory(silent_server()) as client:
        with pytest.raises(RequestTimeout) as caught:
            await client.call_tool("lookup", timeout=2)
    assert caught.value.message.startswith("tools/call 'lookup' got no answer within 2s")
    assert "the timeout given to this call" in caught.value.message


async def test_the_default_is_configurable(autojump_clock: Any) -> None:
    options = SessionOptions(request_timeout=5)
    async with connect_memory(silent_server(), options=options) as client:
        start = trio.current_time()
        with pytest.raises(RequestTimeout, match="within 5s"):
            await client.call_tool("lookup")
        assert trio.current_time() - start == pytest.approx(5)


async def test_a_server_that_never_answers_the_handshake(autojump_clock: Any) -> None:
    client_end, _server_end = memory_transport_pair()  # nobody reads the other end
    start = trio.current_time()
    with pytest.raises(RequestTimeout) as caught:
        async with connect_transport(client_end):
            raise AssertionError("no handshake can complete")
    # The auto mode probes with server/discover first (its own bound), then initializes.
    elapsed = trio.current_time() - start
    assert elapsed == pytest.approx(DEFAULT_DISCOVER_TIMEOUT + DEFAULT_TIMEOUT)
    assert "initialize got no answer within 60s" in caught.value.message
    assert "did not answer the handshake" in caught.value.message
    assert "request_timeout" in caught.value.message


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        ([1, 2], r"call_tool\('add'\): arguments must be a mapping of names to values.*list"),
        ("a=1", r"arguments must be a mapping.*str 'a=1'"),
        ({1: "x"}, r"call_tool\('add'\): the keys of arguments must be str, got 1"),
    ],
)
async def test_call_tool_arguments_of_the_wrong_type(arguments: Any, expected: str) -> None:
    server = RecordingServer()
    async with connect_memory(server) as client:
        with pytest.raises(TypeError, match=expected):
            await client.call_tool("add", arguments)
        with pytest.raises(TypeError, match=r"call_tool\('add'\): meta must be a mapping"):
            await client.call_tool("add", {}, meta=[("k", "v")])  # type: ignore[arg-type]
        with pytest.raises(TypeError, match="call_tool: name must be a str, not int"):
            await client.call_tool(7)  # type: ignore[arg-type]
    assert server.params_of("tools/call") == []  # nothing was sent


async def test_prompt_and_resource_arguments_of_the_wrong_type() -> None:
    async with connect_memory(RecordingServer()) as client:
        with pytest.raises(TypeError, match=r"get_prompt\('p'\): arguments\['n'\] must be a str"):
            await client.get_prompt("p", {"n": 3})  # type: ignore[dict-item]
        with pytest.raises(TypeError, match="read_resource: uri must be a str"):
            await client.read_resource(b"file:///x")  # type: ignore[arg-type]
