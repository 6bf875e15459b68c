"""ROBUSTNESS.md cases 1-9 at the session level: bad input gets an error, never a crash."""

from __future__ import annotations

import json
from typing import Any

import pytest
import trio
import trio.testing

from tests.support import make_server, raw_client, session_pair
from trimcp.errors import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    PARSE_ERROR,
    McpError,
)
from trimcp.protocol.lifecycle import Role
from trimcp.server.lowlevel import LowLevelServer
from trimcp.session import RequestContext, SessionOptions, open_session
from trimcp.transports.ndjson import NdjsonTransport


def echo_server() -> LowLevelServer:
    server = make_server()

    @server.request_handler("echo")
    async def echo(ctx: RequestContext) -> dict[str, Any]:
        return {"params": ctx.params}

    @server.request_handler("boom")
    async def boom(ctx: RequestContext) -> dict[str, Any]:
        raise RuntimeError("secret detail that must not leak")

    @server.request_handler("refuse")
    async def refuse(ctx: RequestContext) -> dict[str, Any]:
        raise McpError(-32002, "Resource not found", {"uri": "x://y"})

    @server.request_handler("nan")
    async def nan(ctx: RequestContext) -> dict[str, Any]:
        return {"value": float("nan")}

    @server.request_handler("unencodable")
    async def unencodable(ctx: RequestContext) -> dict[str, Any]:
        return {"value": {1, 2}}

    return server


async def expect_error_then_recover(peer: Any, bad: bytes, code: int, reply_id: Any = None) -> None:
    await peer.send_bytes(bad)
    reply = await peer.receive()
    assert reply["error"]["code"] == code, reply
    assert reply["id"] == reply_id
    # The session goes on: the next message is answered normally.
    assert (await peer.request(100, "ping"))["result"] == {}


@pytest.mark.parametrize(
    ("bad", "code", "reply_id"),
    [
        (b"{oops", PARSE_ERROR, None),
        (b"\xff\xfe{}", PARSE_ERROR, None),
        (b"[" * 100_000 + b"]" * 100_000, PARSE_ERROR, None),
        (b'"just a string"', INVALID_REQUEST, None),
        (b"42", INVALID_REQUEST, None),
        (b'{"jsonrpc":"1.0","id":1,"method":"ping"}', INVALID_REQUEST, 1),
        (b'{"id":1,"method":"ping"}', INVALID_REQUEST, 1),
        (b'{"jsonrpc":"2.0","id":1}', INVALID_REQUEST, None),
        (b'{"jsonrpc":"2.0","id":true,"method":"ping"}', INVALID_REQUEST, None),
        (b'{"jsonrpc":"2.0","id":null,"method":"ping"}', INVALID_REQUEST, None),
        (b'{"jsonrpc":"2.0","id":1.5,"method":"ping"}', INVALID_REQUEST, None),
        (b'{"jsonrpc":"2.0","id":1,"method":7}', INVALID_REQUEST, 1),
        (b'{"jsonrpc":"2.0","id":1,"method":"echo","params":null}', INVALID_PARAMS, 1),
        (b'{"jsonrpc":"2.0","id":1,"method":"echo","params":[1,2]}', INVALID_PARAMS, 1),
        (b'{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":5}}', INVALID_PARAMS, 3),
        (b'[{"jsonrpc":"2.0","id":1,"method":"ping"}]', INVALID_REQUEST, None),
        (b"[]", INVALID_REQUEST, None),
    ],
)
async def test_bad_input_gets_an_error_and_the_session_survives(
    autojump_clock: Any, bad: bytes, code: int, reply_id: Any
) -> None:
    async with raw_client(echo_server()) as (peer, _session):
        await expect_error_then_recover(peer, bad, code, reply_id)


async def test_shape_errors_name_the_bad_field(autojump_clock: Any) -> None:
    async with raw_client(echo_server()) as (peer, _session):
        reply = await peer.request(1, "tools/call", {"name": "x", "arguments": [1]})
        assert reply["error"]["code"] == INVALID_PARAMS
        assert reply["error"]["data"]["path"] == "arguments"


async def test_handler_exception_answers_that_id_only(autojump_clock: Any) -> None:
    async with raw_client(echo_server()) as (peer, _session):
        await peer.send({"jsonrpc": "2.0", "id": 1, "method": "boom"})
        await peer.send({"jsonrpc": "2.0", "id": 2, "method": "echo", "params": {"a": 1}})
        replies = {r["id"]: r for r in [await peer.receive(), await peer.receive()]}
        assert replies[1]["error"] == {"code": INTERNAL_ERROR, "message": "Internal error"}
        assert replies[2]["result"] == {"params": {"a": 1}}


async def test_mcp_error_keeps_its_code_and_data(autojump_clock: Any) -> None:
    async with raw_client(echo_server()) as (peer, _session):
        reply = await peer.request(1, "refuse")
        assert reply["error"] == {
            "code": -32002,
            "message": "Resource not found",
            "data": {"uri": "x://y"},
        }


async def test_unencodable_result_becomes_internal_error(autojump_clock: Any) -> None:
    async with raw_client(echo_server()) as (peer, _session):
        reply = await peer.request(1, "unencodable")
        assert reply["error"]["code"] == INTERNAL_ERROR


async def test_nan_result_is_sent_as_valid_json(autojump_clock: Any) -> None:
    # JSON has no NaN: orjson writes null (as JavaScript does); without orjson the stdlib
    # refuses it and the peer gets -32603. Either way the wire stays valid JSON.
    async with raw_client(echo_server()) as (peer, _session):
        reply = await peer.request(1, "nan")
        assert reply.get("result") == {"value": None} or reply["error"]["code"] == INTERNAL_ERROR


async def test_duplicate_in_flight_id_is_rejected_and_first_completes(autojump_clock: Any) -> None:
    server = make_server()
    release = trio.Event()

    @server.request_handler("wait")
    async def wait(ctx: RequestContext) -> dict[str, Any]:
        await release.wait()
        return {"first": True}

    async with raw_client(server) as (peer, _session):
        await peer.send({"jsonrpc": "2.0", "id": "a", "method": "wait"})
        await trio.testing.wait_all_tasks_blocked()
        duplicate = await peer.request("a", "wait")
        assert duplicate["error"]["code"] == INVALID_REQUEST
        release.set()
        assert (await peer.receive()) == {"jsonrpc": "2.0", "id": "a", "result": {"first": True}}


async def test_lone_surrogates_are_refused_with_the_requests_id(autojump_clock: Any) -> None:
    # Policy (docs/input-limits.md): an unpaired surrogate escape has no UTF-8 form, so it
    # is refused, as the official SDK does; the sender still gets an answer for its id.
    async with raw_client(echo_server()) as (peer, _session):
        await peer.send_bytes(b'{"jsonrpc":"2.0","id":1,"method":"echo","params":{"s":"\\ud800"}}')
        reply = json.loads(await peer.transport.receive())
        assert reply["id"] == 1
        assert reply["error"]["code"] == INVALID_REQUEST
        assert "surrogate" in reply["error"]["message"]
        # a paired escape (an emoji) is fine
        await peer.send_bytes(
            b'{"jsonrpc":"2.0","id":2,"method":"echo","params":{"s":"\\ud83d\\ude00"}}'
        )
        assert json.loads(await peer.transport.receive())["result"]["params"]["s"] == "\U0001f600"


async def test_batches_work_in_2025_03_26(autojump_clock: Any) -> None:
    async with raw_client(echo_server(), version="2025-03-26") as (peer, _session):
        await peer.send(
            [
                {"jsonrpc": "2.0", "id": 1, "method": "echo", "params": {"n": 1}},
                {"jsonrpc": "2.0", "method": "notifications/whatever"},
                {"jsonrpc": "2.0", "id": 2, "method": "boom"},
                {"jsonrpc": "2.0", "id": 3, "method": 5},
            ]
        )
        replies = await peer.receive()
        assert isinstance(replies, list)
        by_id = {r["id"]: r for r in replies}
        assert by_id[1]["result"] == {"params": {"n": 1}}
        assert by_id[2]["error"]["code"] == INTERNAL_ERROR
        assert by_id[3]["error"]["code"] == INVALID_REQUEST
        assert len(replies) == 3
        reply = await peer.request(9, "ping")
        assert reply["result"] == {}


async def test_a_batch_request_cancelled_before_it_ran_still_lets_the_batch_go_out(
    autojump_clock: Any,
) -> None:
    # The cancel arrives in the same batch, so the handler never runs; the batch's other
    # replies must still be sent (the cancelled request's place is simply left out).
    async with raw_client(echo_server(), version="2025-03-26") as (peer, _session):
        await peer.send(
            [
                {"jsonrpc": "2.0", "id": 1, "method": "echo", "params": {"n": 1}},
                {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}},
                {"jsonrpc": "2.0", "id": 2, "method": "ping"},
            ]
        )
        with trio.fail_after(5):
            replies = await peer.receive()
        assert replies == [{"jsonrpc": "2.0", "id": 2, "result": {}}]


async def test_initialize_in_a_batch_is_refused(autojump_clock: Any) -> None:
    async with raw_client(echo_server(), version="2025-03-26") as (peer, _session):
        await peer.send([{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}}])
        replies = await peer.receive()
        assert replies[0]["error"]["code"] == INVALID_REQUEST


async def test_oversized_line_is_skipped_and_reading_goes_on(autojump_clock: Any) -> None:
    client_stream, server_stream = trio.testing.memory_stream_pair()
    transport = NdjsonTransport(server_stream, server_stream, max_message_bytes=1024)
    async with open_session(transport, role=Role.SERVER, handler=echo_server()) as _session:
        await client_stream.send_all(b"x" * 10_000 + b"\n")
        await client_stream.send_all(b'{"jsonrpc":"2.0","id":1,"method":"ping"}\n')
        data = b""
        while data.count(b"\n") < 2:
            data += await client_stream.receive_some()
        first, second = (json.loads(line) for line in data.splitlines())
        assert first["error"]["code"] == INVALID_REQUEST
        assert first["id"] is None
        assert second == {"jsonrpc": "2.0", "id": 1, "result": {}}
        await client_stream.aclose()


async def test_in_flight_limit_applies_backpressure(autojump_clock: Any) -> None:
    server = make_server()
    running = 0
    peak = 0
    release = trio.Event()

    @server.request_handler("hold")
    async def hold(ctx: RequestContext) -> dict[str, Any]:
        nonlocal running, peak
        running += 1
        peak = max(peak, running)
        await release.wait()
        running -= 1
        return {}

    async with raw_client(server, options=SessionOptions(max_in_flight=4)) as (peer, _session):
        for i in range(10):
            await peer.send({"jsonrpc": "2.0", "id": i + 1, "method": "hold"})
        await trio.testing.wait_all_tasks_blocked()
        assert running == 4
        release.set()
        replies = [await peer.receive() for _ in range(10)]
        assert sorted(r["id"] for r in replies) == list(range(1, 11))
        assert peak == 4


async def test_other_sessions_are_unaffected_by_a_broken_one(autojump_clock: Any) -> None:
    async with (
        session_pair(echo_server()) as (good_client, _),
        raw_client(echo_server()) as (
            bad_peer,
            _,
        ),
    ):
        await bad_peer.send_bytes(b"{{{{")
        await bad_peer.receive()
        assert await good_client.send_request("echo", {"ok": 1}) == {"params": {"ok": 1}}


class _Custom(BaseException):
    """A BaseException a library might raise (not an Exception)."""


@pytest.mark.parametrize(
    "raised",
    [
        SystemExit(2),
        KeyboardInterrupt(),
        GeneratorExit(),
        _Custom("x"),
        BaseExceptionGroup("g", [KeyboardInterrupt(), ValueError()]),
    ],
    ids=["SystemExit", "KeyboardInterrupt", "GeneratorExit", "custom", "group"],
)
async def test_a_handler_raising_a_base_exception_answers_that_call_only(
    autojump_clock: Any, raised: BaseException
) -> None:
    # ROBUSTNESS.md 25. Was: the exception left the handler task and ended the session's
    # nursery, and with it the process (argparse raises SystemExit on bad arguments).
    server = echo_server()

    @server.request_handler("die")
    async def die(ctx: RequestContext) -> dict[str, Any]:
        raise raised

    async with raw_client(server) as (peer, session):
        reply = await peer.request(1, "die")
        assert reply["error"] == {"code": INTERNAL_ERROR, "message": "Internal error"}
        assert (await peer.request(2, "echo", {"still": "here"}))["result"] == {
            "params": {"still": "here"}
        }
        assert not session.closing


async def test_integers_of_any_size_stay_exact(autojump_clock: Any) -> None:
    # Was: orjson read integers over 64 bits as floats: an id of 2**64 was refused and big
    # arguments lost precision.
    async with raw_client(echo_server()) as (peer, _session):
        big = 2**64
        await peer.send_bytes(
            b'{"jsonrpc":"2.0","id":%d,"method":"echo","params":{"n":%d,"m":-%d}}'
            % (big, 2**70 + 1, 2**80)
        )
        reply = json.loads(await peer.transport.receive())
        assert reply["id"] == big
        assert reply["result"]["params"] == {"n": 2**70 + 1, "m": -(2**80)}


@pytest.mark.parametrize(
    "bad",
    [
        b"\xef\xbb\xbf" + b'{"jsonrpc":"2.0","id":1,"method":"ping"}',
        '{"jsonrpc":"2.0","id":1,"method":"ping"}'.encode("utf-16"),
    ],
    ids=["utf-8 BOM", "UTF-16"],
)
async def test_only_utf8_without_a_bom_is_json(autojump_clock: Any, bad: bytes) -> None:
    async with raw_client(echo_server()) as (peer, _session):
        await expect_error_then_recover(peer, bad, PARSE_ERROR)
