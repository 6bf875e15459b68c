"""Each server message goes on exactly one stream: its request's POST stream, or the GET one."""

from __future__ import annotations

import trio
import trio.testing

from tests.http_server.helpers import (
    ServerLog,
    init_request,
    make_server,
    running_app,
    tool_call,
)
from trimcp.transports.http_server import HttpServerConfig

GET_HEADERS = [("accept", "text/event-stream")]


async def test_three_concurrent_posts_each_get_their_own_answer(
    autojump_clock: trio.abc.Clock,
) -> None:
    log = ServerLog()
    async with running_app(server=make_server(log)) as (_, client):
        session_id = await client.initialize()
        posts = [
            await client.post(tool_call(1000 + i, "slow"), session_id=session_id, wait=False)
            for i in range(3)
        ]
        for post in posts:
            await post.wait_started()
            assert post.status == 200
        assert not any(p.finished.is_set() for p in posts)
        log.release.set()
        for i, post in enumerate(posts):
            await post.wait_finished()
            [answer] = post.messages()
            assert answer["id"] == 1000 + i
            assert answer["result"]["content"][0]["text"] == "slow done"


async def test_related_notifications_go_on_the_post_stream(autojump_clock: trio.abc.Clock) -> None:
    async with running_app() as (_, client):
        session_id = await client.initialize()
        reply = await client.post(
            tool_call(7, "progress", {"n": 3}, meta={"progressToken": "tok"}),
            session_id=session_id,
        )
        messages = reply.messages()
        assert [m.get("method") for m in messages] == ["notifications/progress"] * 3 + [None]
        assert [m["params"]["progress"] for m in messages[:3]] == [1, 2, 3]
        assert messages[-1]["id"] == 7
        ids = [e.id for e in reply.events]
        assert len(set(ids)) == len(ids)  # unique event ids


async def test_unrelated_messages_go_on_the_get_stream(autojump_clock: trio.abc.Clock) -> None:
    async with running_app() as (_, client):
        session_id = await client.initialize()
        get = client.start("GET", headers=[*GET_HEADERS, ("mcp-session-id", session_id)])
        await get.wait_started()
        assert get.status == 200
        assert get.headers["content-type"] == "text/event-stream"
        reply = await client.post(tool_call(1, "notify", {"n": 3}), session_id=session_id)
        assert [m.get("id") for m in reply.messages()] == [1]  # only the answer
        notes = [await get.next_message() for _ in range(3)]
        assert [n["params"]["data"] for n in notes] == ["note 0", "note 1", "note 2"]
        get.disconnect()
        await get.wait_returned()


async def test_unrelated_messages_wait_in_a_bounded_backlog(autojump_clock: trio.abc.Clock) -> None:
    config = HttpServerConfig(backlog_size=5)
    async with running_app(config) as (app, client):
        session_id = await client.initialize()
        await client.call(session_id, 1, "notify", {"n": 12})
        get = client.start("GET", headers=[*GET_HEADERS, ("mcp-session-id", session_id)])
        notes = [await get.next_message() for _ in range(5)]
        # the newest five were kept
        assert [n["params"]["data"] for n in notes] == [f"note {i}" for i in range(7, 12)]
        entry = next(iter(app.manager._sessions.values()))
        assert entry.transport.dropped == 7
        get.disconnect()


async def test_a_second_get_replaces_the_first(autojump_clock: trio.abc.Clock) -> None:
    async with running_app() as (_, client):
        session_id = await client.initialize()
        first = client.start("GET", headers=[*GET_HEADERS, ("mcp-session-id", session_id)])
        await first.wait_started()
        second = client.start("GET", headers=[*GET_HEADERS, ("mcp-session-id", session_id)])
        await second.wait_started()
        await first.wait_finished()
        await client.call(session_id, 1, "notify", {"n": 1})
        note = await second.next_message()
        assert note["params"]["data"] == "note 0"
        assert first.messages() == []
        second.disconnect()


async def test_server_request_goes_on_the_post_stream_and_the_answer_is_posted(
    autojump_clock: trio.abc.Clock,
) -> None:
    async with running_app() as (_, client):
        session_id = await client.initialize()
        post = await client.post(tool_call(3, "sample"), session_id=session_id, wait=False)
        request = await post.next_message()
        assert request["method"] == "sampling/createMessage"
        answer = await client.post(
            {
                "jsonrpc": "2.0",
                "id": request["id"],
                "result": {
                    "role": "assistant",
                    "content": {"type": "text", "text": "hello"},
                    "model": "m",
                },
            },
            session_id=session_id,
        )
        assert answer.status == 202
        await post.wait_finished()
        final = post.messages()[-1]
        assert final["id"] == 3
        assert final["result"]["content"][0]["text"] == "sampled: hello"


async def test_cancelled_request_ends_its_post_stream(autojump_clock: trio.abc.Clock) -> None:
    log = ServerLog()
    async with running_app(server=make_server(log)) as (_, client):
        session_id = await client.initialize()
        post = await client.post(tool_call(9, "slow"), session_id=session_id, wait=False)
        await post.wait_started()
        await trio.testing.wait_all_tasks_blocked()
        assert log.started == [9]
        cancel = await client.post(
            {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 9}},
            session_id=session_id,
        )
        assert cancel.status == 202
        await post.wait_finished()
        assert post.messages() == []
        await trio.sleep(1)
        assert log.cancelled == [9]
        # the session goes on, and the id can be used again
        assert (await client.call(session_id, 9, "echo", {"text": "again"}))["result"]


async def test_in_flight_id_reuse_is_refused(autojump_clock: trio.abc.Clock) -> None:
    log = ServerLog()
    async with running_app(server=make_server(log)) as (_, client):
        session_id = await client.initialize()
        first = await client.post(tool_call(1, "slow"), session_id=session_id, wait=False)
        await first.wait_started()
        second = await client.post(tool_call(1, "echo"), session_id=session_id)
        assert second.status == 400
        assert second.json()["error"]["code"] == -32600
        log.release.set()
        await first.wait_finished()
        assert first.messages()[-1]["result"]["content"][0]["text"] == "slow done"


async def test_handler_errors_are_answered_on_the_stream(autojump_clock: trio.abc.Clock) -> None:
    async with running_app() as (_, client):
        session_id = await client.initialize()
        answer = await client.call(session_id, 1, "boom")
        assert answer["error"]["code"] == -32603
        unknown = await client.post(
            {"jsonrpc": "2.0", "id": 2, "method": "no/such"}, session_id=session_id
        )
        [error] = unknown.messages()
        assert error["id"] == 2
        assert error["error"]["code"] == -32601


async def test_batches_in_2025_03_26(autojump_clock: trio.abc.Clock) -> None:
    async with running_app() as (_, client):
        session_id = await client.initialize("2025-03-26")
        batch = [
            tool_call(1, "echo", {"text": "a"}),
            {"jsonrpc": "2.0", "method": "notifications/roots/list_changed"},
            tool_call(2, "echo", {"text": "b"}),
        ]
        reply = await client.post(batch, session_id=session_id, version="2025-03-26")
        assert reply.status == 200
        [answers] = reply.messages()
        assert sorted(a["id"] for a in answers) == [1, 2]


async def test_batches_are_refused_after_2025_03_26(autojump_clock: trio.abc.Clock) -> None:
    async with running_app() as (_, client):
        session_id = await client.initialize("2025-06-18")
        reply = await client.post(
            [tool_call(1, "echo")], session_id=session_id, version="2025-06-18"
        )
        assert reply.status == 400
        assert reply.json()["error"]["code"] == -32600


async def test_json_response_mode(autojump_clock: trio.abc.Clock) -> None:
    config = HttpServerConfig(json_response=True)
    async with running_app(config) as (_, client):
        init = await client.post(init_request(), version=None, accept="application/json")
        assert init.status == 200
        assert init.headers["content-type"] == "application/json"
        session_id = init.headers["mcp-session-id"]
        get = client.start("GET", headers=[*GET_HEADERS, ("mcp-session-id", session_id)])
        await get.wait_started()
        reply = await client.post(
            tool_call(4, "progress", {"n": 2}, meta={"progressToken": 1}),
            session_id=session_id,
            accept="application/json",
        )
        assert reply.status == 200
        assert reply.headers["content-type"] == "application/json"
        assert reply.json()["id"] == 4
        # progress cannot ride a JSON body: it went on the GET stream
        progress = [await get.next_message() for _ in range(2)]
        assert [p["method"] for p in progress] == ["notifications/progress"] * 2
        get.disconnect()


async def test_json_mode_batch_gets_one_array(autojump_clock: trio.abc.Clock) -> None:
    config = HttpServerConfig(json_response=True)
    async with running_app(config) as (_, client):
        session_id = await client.initialize("2025-03-26", accept="application/json")
        reply = await client.post(
            [tool_call(1, "echo"), tool_call(2, "echo")],
            session_id=session_id,
            version="2025-03-26",
            accept="application/json",
        )
        assert sorted(a["id"] for a in reply.json()) == [1, 2]
