"""Issue 16: whatever the core answers or refuses releases what the HTTP layer waits on.

Answers are routed by what the engine says they answer (``Outgoing.answers``), never by
matching bytes; a batch over the limit, a client that leaves, a handler that raises
``SystemExit`` each release their POST, ids and session slots at once.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
import trio
import trio.testing

from trimcp.errors import INTERNAL_ERROR, INVALID_REQUEST
from trimcp.protocol import connection as connection_module
from trimcp.protocol.connection import DEFAULT_MAX_BATCH, Connection
from trimcp.protocol.lifecycle import Role
from trimcp.session import open_session
from trimcp.session.options import SessionOptions
from trimcp.session.transport import Decoded, Outgoing
from trimcp.transports.http_server import HttpServerConfig
from trimcp.transports.http_server import asgi as asgi_module
from trimcp.transports.http_server.transport import HttpSessionTransport

from .helpers import WAIT, ServerLog, make_server, running_app, tool_call

NON_ASCII_ID = "é-☃-\u2028"


@pytest.mark.parametrize("json_response", [False, True])
async def test_an_answer_with_a_lone_surrogate_to_a_non_ascii_id_ends_its_post(
    autojump_clock: trio.abc.Clock, json_response: bool
) -> None:
    # Was: the answer was written but not recognised as the answer (ids were matched as
    # bytes of our encoder, which escapes this one), so the SSE stream never ended and
    # JSON mode sent nothing at all.
    config = HttpServerConfig(json_response=json_response)
    async with running_app(config) as (_app, client):
        session_id = await client.initialize()
        with trio.fail_after(WAIT):
            reply = await client.post(
                tool_call(NON_ASCII_ID, "surrogate", {"text": "!"}), session_id=session_id
            )
        assert reply.status == 200
        answers = [reply.json()] if json_response else reply.messages()
        assert [a["id"] for a in answers] == [NON_ASCII_ID]
        assert answers[0]["result"]["content"][0]["text"] == "\ud800!"
        reply.body.decode("utf-8")  # valid UTF-8 on the wire (the surrogate is escaped)


def _batch(count: int, first: int = 1) -> list[dict[str, Any]]:
    return [tool_call(first + i, "echo", {"text": str(i)}) for i in range(count)]


async def test_a_batch_over_the_limit_is_refused_at_once_and_pins_no_id(
    autojump_clock: trio.abc.Clock, monkeypatch: pytest.MonkeyPatch
) -> None:
    classified = 0
    classify = vars(asgi_module)["classify"]

    def counting_classify(obj: Any) -> Any:
        nonlocal classified
        classified += 1
        return classify(obj)

    monkeypatch.setattr(asgi_module, "classify", counting_classify)
    async with running_app() as (app, client):
        session_id = await client.initialize("2025-03-26")
        classified = 0
        with trio.fail_after(WAIT):
            reply = await client.post(
                _batch(DEFAULT_MAX_BATCH + 1), session_id=session_id, version="2025-03-26"
            )
        assert reply.status == 400
        assert reply.json()["error"]["code"] == INVALID_REQUEST
        assert f"larger than {DEFAULT_MAX_BATCH}" in reply.json()["error"]["message"]
        assert classified == 0  # refused before any member was looked at
        # The same ids are free: a batch at the limit is answered in full.
        with trio.fail_after(WAIT):
            reply = await client.post(
                _batch(DEFAULT_MAX_BATCH), session_id=session_id, version="2025-03-26"
            )
        assert reply.status == 200
        (answers,) = reply.messages()
        assert sorted(a["id"] for a in answers) == list(range(1, DEFAULT_MAX_BATCH + 1))
        assert len(app.manager) == 1


async def test_over_limit_batches_do_not_use_up_stateless_session_slots(
    autojump_clock: trio.abc.Clock,
) -> None:
    # Was: in stateless mode with max_sessions=5, five such POSTs made every later one 503.
    config = HttpServerConfig(stateless=True, max_sessions=5)
    async with running_app(config) as (app, client):
        for _ in range(12):
            with trio.fail_after(WAIT):
                reply = await client.post(_batch(DEFAULT_MAX_BATCH + 1), version="2025-03-26")
            assert reply.status == 400
        with trio.fail_after(WAIT):
            reply = await client.post(tool_call(1, "echo", {"text": "still here"}))
        assert reply.status == 200
        assert reply.messages()[-1]["result"]["content"][0]["text"] == "still here"
        assert len(app.manager) == 0


async def test_a_batch_the_engine_refuses_whole_settles_every_id_the_transport_waits_for(
    autojump_clock: trio.abc.Clock,
) -> None:
    # The engine side of the same rule, below the app's own check: the core refuses an
    # over-limit batch with one error (id null), and that error releases all its ids.
    transport = HttpSessionTransport(store=None, inbound_queue=4, backlog_size=4, retry_ms=1)
    server = make_server()
    async with open_session(transport, role=Role.SERVER, handler=server) as session:
        session.restore_state(_initialized_state())
        assert session.protocol_version == "2025-03-26"  # batches are allowed
        batch = _batch(DEFAULT_MAX_BATCH + 1)
        ids = [m["id"] for m in batch]
        stream = await transport.open_post_stream(ids, json_mode=True, sink=None, prime=False)
        await transport.feed(Decoded(batch), WAIT)
        with trio.fail_after(WAIT):
            await stream.done.wait()
        assert stream.json_body is not None
        refusal = json.loads(stream.json_body)
        assert refusal["id"] is None
        assert refusal["error"]["code"] == INVALID_REQUEST
        assert not any(transport.in_flight(i) for i in ids)


def _initialized_state() -> dict[str, Any]:
    # A core past the handshake, its state handed to the session as another process would.
    conn = Connection(Role.SERVER)
    _handshake(conn)
    return conn.resting_state()


def _handshake(conn: Connection) -> None:
    # Drive the sans-IO core through a 2025-03-26 handshake (batches are allowed there).
    conn.receive(
        json.dumps(
            {
                "jsonrpc": "2.0",
                "id": "init",
                "method": "initialize",
                "params": {
                    "protocolVersion": "2025-03-26",
                    "capabilities": {},
                    "clientInfo": {"name": "t", "version": "0"},
                },
            }
        )
    )
    server_caps: dict[str, Any] = {"tools": {}}
    conn.send_result(
        "init",
        {
            "protocolVersion": "2025-03-26",
            "capabilities": server_caps,
            "serverInfo": {"name": "s", "version": "0"},
        },
    )
    conn.receive('{"jsonrpc":"2.0","method":"notifications/initialized"}')


def test_the_core_batch_limit_is_exact() -> None:
    # A mutation that removed the limit passed every test before this one.
    conn = connection_module.Connection(Role.SERVER)
    _handshake(conn)
    at_limit = conn.receive_object(_batch(DEFAULT_MAX_BATCH))
    assert type(at_limit).__name__ == "BatchReceived"
    over = conn.receive_object(_batch(DEFAULT_MAX_BATCH + 1, first=1000))
    assert type(over).__name__ == "MessageRejected"
    assert over.answers == tuple(range(1000, 1000 + DEFAULT_MAX_BATCH + 1))  # type: ignore[union-attr]


async def test_a_post_body_is_parsed_once(
    autojump_clock: trio.abc.Clock, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Was: twice (the app, then the engine): a 4 MiB body cost ~+221 MiB of peak memory.
    parses = 0
    real = vars(asgi_module)["parse_json"]

    def counting(data: Any) -> Any:
        nonlocal parses
        parses += 1
        return real(data)

    monkeypatch.setattr(asgi_module, "parse_json", counting)
    monkeypatch.setattr(connection_module, "parse_json", counting)
    async with running_app() as (_app, client):
        session_id = await client.initialize()
        parses = 0
        answer = await client.call(session_id, 7, "echo", {"text": "once"})
        assert answer["result"]["content"][0]["text"] == "once"
        assert parses == 1


@pytest.mark.parametrize("json_response", [False, True])
async def test_a_posted_request_is_classified_once(
    autojump_clock: trio.abc.Clock, monkeypatch: pytest.MonkeyPatch, json_response: bool
) -> None:
    # Was: twice, by the app and again by the engine's reader.
    seen: list[Any] = []
    real = vars(asgi_module)["classify"]

    def counting(value: Any) -> Any:
        seen.append(value)
        return real(value)

    monkeypatch.setattr(asgi_module, "classify", counting)
    monkeypatch.setattr(connection_module, "classify", counting)
    async with running_app(HttpServerConfig(json_response=json_response)) as (_app, client):
        session_id = await client.initialize()
        seen.clear()
        answer = await client.call(session_id, 7, "echo", {"text": "once"})
        assert answer["result"]["content"][0]["text"] == "once"
        assert len(seen) == 1


async def test_requests_over_max_in_flight_wait_for_room_in_order(
    autojump_clock: trio.abc.Clock,
) -> None:
    # A request the session takes in the POST's own task (Session.receive_now) must leave
    # the limit as the reader keeps it: the requests over it wait, none is refused.
    log = ServerLog()
    config = HttpServerConfig(session_options=SessionOptions(max_in_flight=2))
    async with running_app(config, make_server(log)) as (_app, client):
        session_id = await client.initialize()
        posts = []
        for request_id in range(1, 5):
            posts.append(
                await client.post(tool_call(request_id, "slow"), session_id=session_id, wait=False)
            )
            await trio.testing.wait_all_tasks_blocked()
        assert log.started == [1, 2]
        log.release.set()
        for post in posts:
            with trio.fail_after(WAIT):
                await post.wait_finished()
            assert post.status == 200
            assert [m["result"] for m in post.messages() if "result" in m] == [
                {"content": [{"type": "text", "text": "slow done"}]}
            ]
        assert log.started == [1, 2, 3, 4]


@pytest.mark.parametrize("json_response", [False, True])
async def test_a_client_that_leaves_releases_its_post_and_the_handler_goes_on(
    autojump_clock: trio.abc.Clock, json_response: bool
) -> None:
    log = ServerLog()
    config = HttpServerConfig(json_response=json_response)
    async with running_app(config, make_server(log)) as (app, client):
        session_id = await client.initialize()
        post = await client.post(tool_call(5, "slow"), session_id=session_id, wait=False)
        await trio.testing.wait_all_tasks_blocked()
        assert log.started == [5]
        post.disconnect()
        with trio.fail_after(WAIT):
            await post.wait_returned()  # was: pinned until the handler answered (or forever)
        assert log.finished == []
        log.release.set()
        await trio.testing.wait_all_tasks_blocked()
        assert log.finished == [5]
        assert log.cancelled == []
        assert (await client.call(session_id, 6, "echo", {"text": "x"}))["result"]
        assert len(app.manager) == 1


async def test_a_tool_raising_system_exit_answers_that_call_and_the_server_goes_on(
    autojump_clock: trio.abc.Clock,
) -> None:
    async with running_app() as (app, client):
        session_id = await client.initialize()
        other = await client.initialize()
        answer = await client.call(session_id, 1, "exit")
        assert answer["error"]["code"] == INTERNAL_ERROR
        assert (await client.call(session_id, 2, "echo", {"text": "a"}))["result"]
        assert (await client.call(other, 1, "echo", {"text": "b"}))["result"]
        assert len(app.manager) == 2


async def test_send_now_takes_a_json_answer_and_nothing_else() -> None:
    # The engine hands a JSON-mode POST's answer over without a coroutine (send_now); any
    # other message (an SSE stream's answer, a message answering nothing, an answer whose
    # POST is gone) is declined untouched and goes through send as before.
    transport = HttpSessionTransport(store=None, inbound_queue=4, backlog_size=4, retry_ms=1)
    json_stream = transport.open_stream([1, 2], json_mode=True)
    sse_stream = transport.open_stream([3], json_mode=False)
    assert not transport.send_now(Outgoing(b'{"method":"notifications/x"}'))
    assert not transport.send_now(Outgoing(b"{}", 3, (3,)))
    assert not transport.send_now(Outgoing(b"{}", 9, (9,)))
    assert transport.in_flight(3)
    assert not sse_stream.finished
    assert transport.send_now(Outgoing(b"[1,2]", None, (1, 2)))
    assert json_stream.json_body == b"[1,2]"
    assert json_stream.finished
    assert not transport.in_flight(1)
    assert not transport.in_flight(2)
