"""Resumability (event ids, Last-Event-ID, SSE polling), stateless mode, legacy HTTP+SSE."""

from __future__ import annotations

import trio
import trio.testing

from tests.http_server.helpers import (
    ServerLog,
    init_request,
    make_server,
    post_headers,
    running_app,
    tool_call,
)
from trimcp.transports.http_server import HttpServerConfig, InMemoryEventStore

GET = [("accept", "text/event-stream")]

# --- event store ------------------------------------------------------------------------------


async def test_in_memory_store_replays_one_stream_after_an_id() -> None:
    store = InMemoryEventStore()
    a1 = await store.store("1", b"a1")
    await store.store("2", b"b1")
    prime = await store.store("1", b"")
    a2 = await store.store("1", b"a2")
    assert await store.replay_after(a1) == ("1", [(a2, b"a2")])
    assert await store.replay_after(prime) == ("1", [(a2, b"a2")])
    assert await store.replay_after(a2) == ("1", [])
    for bad in ("", "x", "1_", "_3", "1_99", "1_-1", "1_" + "9" * 40):
        assert await store.replay_after(bad) is None


async def test_in_memory_store_knows_only_the_ids_it_issued() -> None:
    # Every part of a Last-Event-ID is input: the stream must be the one the event was
    # issued for, and the number written as the store writes it. Before: any stream name
    # was accepted (a 10 KB one answered with an empty stream of that name), and a
    # non-ASCII digit raised ValueError.
    store = InMemoryEventStore(max_events=4)
    a1 = await store.store("1", b"a1")
    b1 = await store.store("2", b"b1")
    assert await store.replay_after(b1) == ("2", [])
    for forged in ("1_2", "3_2", "x" * 10_000 + "_2", "2_02", "2_+2", "2_\u00b2", "2_2 "):
        assert await store.replay_after(forged) is None, forged
    for _ in range(4):
        await store.store("1", b"a")  # a1 and b1 are evicted now
    assert (await store.replay_after(a1) or ("", []))[0] == "1"  # lost events of stream 1
    assert await store.replay_after(b1.replace("2_", "9_")) is None  # no stream 9


async def test_in_memory_store_is_bounded() -> None:
    store = InMemoryEventStore(max_events=10, max_bytes=100)
    first = await store.store("1", b"x" * 10)
    for _ in range(100):
        await store.store("1", b"y" * 10)
    assert store.size == (10, 100)
    stream, events = await store.replay_after(first) or ("", [])
    assert stream == "1"
    assert len(events) == 10
    await store.store("1", b"z" * 1000)  # the newest event is kept whatever its size
    assert store.size == (1, 1000)


# --- resumption -------------------------------------------------------------------------------


async def test_get_stream_resumes_after_the_last_event_id(autojump_clock: trio.abc.Clock) -> None:
    async with running_app() as (_, client):
        session_id = await client.initialize()
        get = client.start("GET", headers=[*GET, ("mcp-session-id", session_id)])
        priming = await get.next_event()
        assert priming.id is not None
        assert priming.data == ""
        assert priming.retry_ms == 1000
        await client.call(session_id, 1, "notify", {"n": 2})
        await get.next_message()
        second = await get.next_event()
        get.disconnect()
        await get.wait_returned()
        await client.call(session_id, 2, "notify", {"n": 3})
        resumed = client.start(
            "GET",
            headers=[*GET, ("mcp-session-id", session_id), ("last-event-id", second.id or "")],
        )
        notes = [await resumed.next_message() for _ in range(3)]
        assert [n["params"]["data"] for n in notes] == ["note 0", "note 1", "note 2"]
        # live messages follow the replay, and nothing came twice
        await client.call(session_id, 3, "notify", {"n": 1})
        assert (await resumed.next_message())["params"]["data"] == "note 0"
        assert len(resumed.messages()) == 4
        resumed.disconnect()


async def test_sse_polling_the_server_closes_and_the_client_resumes(
    autojump_clock: trio.abc.Clock,
) -> None:
    async with running_app() as (_, client):
        session_id = await client.initialize()
        # What the conformance suite sends: a 2025-03-26 header inside a 2025-11-25 session.
        post = await client.post(tool_call(1, "poll"), session_id=session_id, version="2025-03-26")
        events = post.events
        assert events[0].id is not None
        assert events[0].data == ""
        assert post.messages() == []  # closed before anything was sent
        assert events[-1].retry_ms == 1000 or post.body.endswith(b"retry: 1000\n\n")
        resumed = await client.request(
            "GET",
            headers=[
                *GET,
                ("mcp-session-id", session_id),
                ("mcp-protocol-version", "2025-03-26"),
                ("last-event-id", events[0].id),
            ],
        )
        assert resumed.status == 200
        note, answer = resumed.messages()
        assert note["params"]["data"] == "closed=True"
        assert answer == {
            "jsonrpc": "2.0",
            "id": 1,
            "result": {"content": [{"type": "text", "text": "polled"}]},
        }


async def test_resume_while_the_request_is_still_running(autojump_clock: trio.abc.Clock) -> None:
    log = ServerLog()
    async with running_app(server=make_server(log)) as (_, client):
        session_id = await client.initialize()
        post = await client.post(tool_call(1, "slow"), session_id=session_id, wait=False)
        priming = await post.next_event()
        post.disconnect()
        resumed = client.start(
            "GET",
            headers=[*GET, ("mcp-session-id", session_id), ("last-event-id", priming.id or "")],
        )
        await resumed.wait_started()
        log.release.set()
        answer = await resumed.next_message()
        assert answer["id"] == 1
        await resumed.wait_finished()  # the stream ends with its last answer
        assert post.messages() == []  # each message on exactly one stream


async def test_unknown_last_event_id_is_400(autojump_clock: trio.abc.Clock) -> None:
    async with running_app() as (_, client):
        session_id = await client.initialize()
        reply = await client.request(
            "GET", headers=[*GET, ("mcp-session-id", session_id), ("last-event-id", "9_999")]
        )
        assert reply.status == 400


async def test_without_an_event_store_there_are_no_ids(autojump_clock: trio.abc.Clock) -> None:
    async with running_app(HttpServerConfig(event_store_factory=None)) as (_, client):
        session_id = await client.initialize()
        reply = await client.post(tool_call(1, "poll"), session_id=session_id)
        assert all(e.id is None for e in reply.events)
        assert reply.messages()[0]["params"]["data"] == "closed=False"
        assert reply.messages()[-1]["id"] == 1


async def test_a_session_cannot_replay_another_sessions_events(
    autojump_clock: trio.abc.Clock,
) -> None:
    async with running_app() as (_, client):
        alice = await client.initialize()
        bob = await client.initialize()
        reply = await client.post(tool_call(1, "echo", {"text": "secret"}), session_id=alice)
        last = reply.events[-1].id or ""
        stolen = client.start(
            "GET", headers=[*GET, ("mcp-session-id", bob), ("last-event-id", last)]
        )
        await stolen.wait_started()
        await trio.testing.wait_all_tasks_blocked()
        assert b"secret" not in stolen.body
        stolen.disconnect()


# --- stateless ------------------------------------------------------------------------------


async def test_stateless_requests_need_no_handshake(autojump_clock: trio.abc.Clock) -> None:
    log = ServerLog()
    config = HttpServerConfig(stateless=True)
    async with running_app(config, make_server(log)) as (app, client):
        for i in range(3):
            reply = await client.post(tool_call(i, "echo", {"text": f"t{i}"}), version=None)
            assert reply.status == 200
            assert "mcp-session-id" not in reply.headers
            assert reply.messages()[-1]["result"]["content"][0]["text"] == f"t{i}"
        progress = await client.post(
            tool_call(9, "progress", {"n": 2}, meta={"progressToken": "p"}), version="2025-06-18"
        )
        assert [m.get("method") for m in progress.messages()] == [
            "notifications/progress",
            "notifications/progress",
            None,
        ]
        await progress.wait_returned()
        assert len({id(s) for s in log.sessions}) == 4  # a fresh session for each POST
        assert len(app.manager) == 0
        assert app.manager.alive == 0


async def test_stateless_initialize_and_notifications(autojump_clock: trio.abc.Clock) -> None:
    async with running_app(HttpServerConfig(stateless=True)) as (_, client):
        init = await client.post(init_request(), version=None)
        assert init.status == 200
        assert "mcp-session-id" not in init.headers
        assert init.messages()[0]["result"]["serverInfo"]["name"] == "http-test"
        note = await client.post({"jsonrpc": "2.0", "method": "notifications/initialized"})
        assert note.status == 202


async def test_stateless_server_cannot_ask_the_client(autojump_clock: trio.abc.Clock) -> None:
    async with running_app(HttpServerConfig(stateless=True)) as (_, client):
        reply = await client.post(tool_call(1, "sample"))
        [answer] = reply.messages()
        assert answer["id"] == 1
        assert answer["error"]["code"] == -32603


async def test_stateless_get_and_delete_are_405(autojump_clock: trio.abc.Clock) -> None:
    async with running_app(HttpServerConfig(stateless=True)) as (_, client):
        get = await client.request("GET", headers=GET)
        assert get.status == 405
        assert get.headers["allow"] == "POST"
        delete = await client.request("DELETE")
        assert delete.status == 405


async def test_stateless_json_mode(autojump_clock: trio.abc.Clock) -> None:
    config = HttpServerConfig(stateless=True, json_response=True)
    async with running_app(config) as (_, client):
        reply = await client.post(tool_call(1, "echo", {"text": "j"}), accept="application/json")
        assert reply.json()["result"]["content"][0]["text"] == "j"


# --- legacy HTTP+SSE (2024-11-05) -------------------------------------------------------------


async def test_legacy_sse_session(autojump_clock: trio.abc.Clock) -> None:
    async with running_app() as (app, client):
        sse = client.start("GET", "/sse", headers=GET)
        endpoint = await sse.next_event()
        assert endpoint.event == "endpoint"
        path, _, query = endpoint.data.partition("?")
        assert path == "/messages"
        assert query.startswith("session_id=")

        async def post(message: object) -> int:
            reply = await client.request(
                "POST",
                "/messages",
                headers=post_headers(version=None),
                body=message,
                query=query.encode(),
            )
            return reply.status or 0

        assert await post(init_request("2024-11-05")) == 202
        init = await sse.next_message()
        assert init["result"]["protocolVersion"] == "2024-11-05"
        assert await post({"jsonrpc": "2.0", "method": "notifications/initialized"}) == 202
        assert await post(tool_call(1, "echo", {"text": "old"})) == 202
        answer = await sse.next_message()
        assert answer["result"]["content"][0]["text"] == "old"
        assert len(app.manager) == 1
        sse.disconnect()
        await sse.wait_returned()
        assert len(app.manager) == 0
        assert await post(tool_call(2, "echo")) == 404


async def test_legacy_post_errors(autojump_clock: trio.abc.Clock) -> None:
    async with running_app() as (_, client):
        sse = client.start("GET", "/sse", headers=GET)
        endpoint = await sse.next_event()
        query = endpoint.data.partition("?")[2].encode()
        missing = await client.request("POST", "/messages", headers=post_headers(), body=b"{}")
        assert missing.status == 400
        unknown = await client.request(
            "POST", "/messages", headers=post_headers(), body=b"{}", query=b"session_id=nope"
        )
        assert unknown.status == 404
        wrong_type = await client.request(
            "POST",
            "/messages",
            headers=[("content-type", "text/plain")],
            body=b"{}",
            query=query,
        )
        assert wrong_type.status == 415
        bad_json = await client.request(
            "POST", "/messages", headers=post_headers(), body=b"{oops", query=query
        )
        assert bad_json.status == 400
        # a Streamable HTTP session id is not a legacy one, and vice versa
        session_id = query.decode().partition("=")[2]
        cross = await client.post(tool_call(1, "echo"), session_id=session_id)
        assert cross.status == 404
        sse.disconnect()


async def test_legacy_can_be_turned_off(autojump_clock: trio.abc.Clock) -> None:
    async with running_app(HttpServerConfig(legacy_sse=False)) as (_, client):
        reply = await client.request("GET", "/sse", headers=GET)
        assert reply.status == 404


class _BadIds(InMemoryEventStore):
    async def store(self, stream_id: str, message: bytes) -> str:
        return "bad\nid: injected"


async def test_event_ids_that_would_break_the_stream_are_dropped(
    autojump_clock: trio.abc.Clock,
) -> None:
    config = HttpServerConfig(event_store_factory=lambda _: _BadIds())
    async with running_app(config) as (_, client):
        session_id = await client.initialize()
        reply = await client.post(tool_call(1, "echo", {"text": "x"}), session_id=session_id)
        assert b"injected" not in reply.body
        [event] = reply.events
        assert event.id is None
        assert reply.messages()[0]["id"] == 1


async def test_legacy_client_that_does_not_read_loses_its_session(
    autojump_clock: trio.abc.Clock,
) -> None:
    config = HttpServerConfig(stream_max_bytes=4096)
    async with running_app(config) as (app, client):
        sse = client.start("GET", "/sse", headers=GET, blocking=True)
        await sse.wait_started()
        await trio.testing.wait_all_tasks_blocked()
        entry = next(iter(app.manager._sessions.values()))
        query = f"session_id={entry.session_id}".encode()

        async def post(message: object) -> int:
            reply = await client.request(
                "POST",
                "/messages",
                headers=post_headers(version=None),
                body=message,
                query=query,
            )
            return reply.status or 0

        assert await post(init_request("2024-11-05")) == 202
        assert await post({"jsonrpc": "2.0", "method": "notifications/initialized"}) == 202
        assert await post(tool_call(1, "notify", {"n": 1000})) == 202
        await trio.testing.wait_all_tasks_blocked()
        assert len(app.manager) == 0  # the session was closed, memory stayed bounded
        assert await post(tool_call(2, "echo")) == 404
        sse.unblock()
        await sse.wait_returned()
        assert len(sse.body) < 4096 + 1024
