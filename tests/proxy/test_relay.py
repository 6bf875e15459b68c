"""The proxy's raw pass-through: requests go on as decoded JSON with the id (and progress
token) remapped, answers come back the same way, never through typed classes.

Both ends are raw JSON-RPC written by the test (memory transports): what the client sends
is compared with what the backend receives, byte for byte in meaning, and back.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest
import trio

from trimcp.proxy import ProxyServer
from trimcp.session import SessionOptions, serve_session
from trimcp.session.transport import Outgoing, Transport
from trimcp.transports.memory import MemoryTransport, memory_transport_pair

Message = dict[str, Any]
VERSION = "2025-11-25"
INIT_PARAMS: Message = {
    "protocolVersion": VERSION,
    "capabilities": {},
    "clientInfo": {"name": "raw", "version": "1"},
}
INIT_RESULT: Message = {
    "protocolVersion": VERSION,
    "capabilities": {"tools": {}},
    "serverInfo": {"name": "backend", "version": "1"},
}


class Wire:
    """One raw end: send dicts, receive dicts."""

    def __init__(self, transport: MemoryTransport) -> None:
        self.transport = transport

    async def send(self, message: Message) -> None:
        await self.transport.send([Outgoing(json.dumps(message).encode())])

    async def receive(self) -> Message:
        with trio.fail_after(30):  # past the shutdown grace (autojump clock: instant)
            data = await self.transport.receive()
        message: Message = json.loads(data)
        return message

    async def request(self, request_id: Any, method: str, params: Message | None = None) -> None:
        message: Message = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if params is not None:
            message["params"] = params
        await self.send(message)


@asynccontextmanager
async def proxied(
    version: str = VERSION, backend_caps: Message | None = None
) -> AsyncIterator[tuple[Wire, Wire]]:
    """A proxy between two raw ends, past the handshake: (client end, backend end)."""
    back_proxy, back_test = memory_transport_pair()

    @asynccontextmanager
    async def connect() -> AsyncIterator[Transport]:
        yield back_proxy

    proxy = ProxyServer(connect)
    front_test, front_proxy = memory_transport_pair()
    client, backend = Wire(front_test), Wire(back_test)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(serve_session, front_proxy, proxy)
        await client.request(
            0,
            "initialize",
            {
                "protocolVersion": version,
                "capabilities": {"roots": {"listChanged": True}},
                "clientInfo": {"name": "raw", "version": "1"},
            },
        )
        init = await backend.receive()
        assert init["method"] == "initialize"
        await backend.send(
            {
                "jsonrpc": "2.0",
                "id": init["id"],
                "result": {
                    "protocolVersion": version,
                    "capabilities": backend_caps or {"tools": {}, "logging": {}},
                    "serverInfo": {"name": "backend", "version": "1"},
                },
            }
        )
        assert (await backend.receive())["method"] == "notifications/initialized"
        answer = await client.receive()
        assert answer["result"]["serverInfo"]["name"] == "backend"
        await client.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        yield client, backend
        nursery.cancel_scope.cancel()


def call(name: str, **extra: Any) -> Message:
    # Fields no typed class knows: a typed round trip would drop them.
    return {"name": name, "arguments": {"n": name}, "x-vendor": {"deep": [1, {"a": None}]}, **extra}


async def test_requests_and_answers_pass_untouched_with_ids_remapped_under_concurrency(
    autojump_clock: trio.abc.Clock,
) -> None:
    async with proxied() as (client, backend):
        client_ids: list[Any] = [5, "5", "x", 6]
        for request_id in client_ids:
            await client.request(request_id, "tools/call", call(f"t{request_id}"))
        received = [await backend.receive() for _ in client_ids]
        # Unchanged params; new, distinct ids of the proxy's own.
        assert [m["params"] for m in received] == [call(f"t{i}") for i in client_ids]
        backend_ids = [m["id"] for m in received]
        assert len(set(backend_ids)) == len(client_ids)
        assert all(type(i) is int for i in backend_ids)
        # Answered in reverse order, each with fields no typed result class has.
        for message in reversed(received):
            result = {
                "content": [{"type": "text", "text": message["params"]["name"]}],
                "x-vendor": {"kept": True},
            }
            await backend.send({"jsonrpc": "2.0", "id": message["id"], "result": result})
        answers = {}
        for _ in client_ids:
            answer = await client.receive()
            answers[json.dumps(answer["id"])] = answer
        for request_id in client_ids:
            answer = answers[json.dumps(request_id)]
            assert answer["result"] == {
                "content": [{"type": "text", "text": f"t{request_id}"}],
                "x-vendor": {"kept": True},
            }


async def test_progress_is_mapped_to_the_clients_token_and_kept_increasing(
    autojump_clock: trio.abc.Clock,
) -> None:
    async with proxied() as (client, backend):
        await client.request(1, "tools/call", call("slow", _meta={"progressToken": "tok", "k": 1}))
        request = await backend.receive()
        meta = request["params"]["_meta"]
        token = meta["progressToken"]
        assert token != "tok"  # the proxy's own token
        assert meta["k"] == 1  # the rest of _meta goes on
        for value in (1, 0.5, 2):  # 0.5 goes backwards: not passed on
            await backend.send(
                {
                    "jsonrpc": "2.0",
                    "method": "notifications/progress",
                    "params": {"progressToken": token, "progress": value, "total": 2},
                }
            )
        await backend.send({"jsonrpc": "2.0", "id": request["id"], "result": {"content": []}})
        seen = [await client.receive() for _ in range(3)]
        assert [m.get("params") for m in seen[:2]] == [
            {"progressToken": "tok", "progress": 1, "total": 2},
            {"progressToken": "tok", "progress": 2, "total": 2},
        ]
        assert seen[2] == {"jsonrpc": "2.0", "id": 1, "result": {"content": []}}


async def test_a_client_cancel_reaches_the_backend_with_its_id_and_a_late_answer_is_dropped(
    autojump_clock: trio.abc.Clock,
) -> None:
    async with proxied() as (client, backend):
        await client.request("c", "tools/call", call("slow"))
        request = await backend.receive()
        await client.send(
            {
                "jsonrpc": "2.0",
                "method": "notifications/cancelled",
                "params": {"requestId": "c", "reason": "user"},
            }
        )
        cancel = await backend.receive()
        assert cancel["method"] == "notifications/cancelled"
        assert cancel["params"]["requestId"] == request["id"]
        await backend.send({"jsonrpc": "2.0", "id": request["id"], "result": {"content": []}})
        await client.request("p", "ping")
        assert await client.receive() == {"jsonrpc": "2.0", "id": "p", "result": {}}


async def test_backend_errors_pass_through_unchanged(autojump_clock: trio.abc.Clock) -> None:
    async with proxied() as (client, backend):
        await client.request(3, "tools/call", call("bad"))
        request = await backend.receive()
        error = {"code": -32050, "message": "Vendor failure", "data": {"why": ["x", 1]}}
        await backend.send({"jsonrpc": "2.0", "id": request["id"], "error": error})
        assert await client.receive() == {"jsonrpc": "2.0", "id": 3, "error": error}


@pytest.mark.parametrize("bad_result", [[1], "text", 5])
async def test_a_malformed_backend_answer_is_a_clear_error(
    autojump_clock: trio.abc.Clock, bad_result: Any
) -> None:
    async with proxied() as (client, backend):
        await client.request(4, "tools/call", call("odd"))
        request = await backend.receive()
        await backend.send({"jsonrpc": "2.0", "id": request["id"], "result": bad_result})
        answer = await client.receive()
        assert answer["id"] == 4
        assert answer["error"]["code"] == -32603
        message = answer["error"]["message"]
        assert "upstream" in message
        assert "invalid answer to tools/call" in message
        assert '"result" must be an object' in message
        # The session goes on.
        await client.request(5, "tools/call", call("fine"))
        again = await backend.receive()
        await backend.send({"jsonrpc": "2.0", "id": again["id"], "result": {"content": []}})
        assert (await client.receive())["result"] == {"content": []}


async def test_the_backend_going_away_fails_relayed_requests_clearly(
    autojump_clock: trio.abc.Clock,
) -> None:
    async with proxied() as (client, backend):
        await client.request(7, "tools/call", call("slow"))
        await backend.receive()
        await backend.transport.aclose()
        answer = await client.receive()
        assert answer["id"] == 7
        assert answer["error"]["code"] == -32603
        assert "closed before answering tools/call" in answer["error"]["message"]


async def test_the_client_going_away_cancels_its_relayed_requests_at_the_backend(
    autojump_clock: trio.abc.Clock,
) -> None:
    async with proxied() as (client, backend):
        await client.request(8, "tools/call", call("slow"))
        request = await backend.receive()
        await client.transport.aclose()
        cancel = await backend.receive()
        assert cancel["method"] == "notifications/cancelled"
        assert cancel["params"]["requestId"] == request["id"]


async def test_notifications_keep_their_place_among_relayed_requests_both_ways(
    autojump_clock: trio.abc.Clock,
) -> None:
    async with proxied() as (client, backend):
        changed: Message = {"jsonrpc": "2.0", "method": "notifications/roots/list_changed"}
        for round_ in range(3):
            await client.send(changed)
            await client.request(round_, "tools/call", call("after"))
            assert (await backend.receive())["method"] == "notifications/roots/list_changed"
            request = await backend.receive()
            assert request["method"] == "tools/call"
            log: Message = {
                "jsonrpc": "2.0",
                "method": "notifications/message",
                "params": {"level": "info", "data": {"round": round_}, "x-vendor": 1},
            }
            await backend.send(log)
            await backend.send({"jsonrpc": "2.0", "id": request["id"], "result": {"content": []}})
            assert await client.receive() == log  # untouched, and before the answer
            assert (await client.receive())["id"] == round_


async def test_a_2025_03_26_batch_is_forwarded_and_answered_as_one_array(
    autojump_clock: trio.abc.Clock,
) -> None:
    # Batches take the handler path (answered together), with the params still raw.
    async with proxied("2025-03-26") as (client, backend):
        await client.transport.send(
            [
                Outgoing(
                    json.dumps(
                        [
                            {
                                "jsonrpc": "2.0",
                                "id": 1,
                                "method": "tools/call",
                                "params": call("a"),
                            },
                            {
                                "jsonrpc": "2.0",
                                "id": 2,
                                "method": "tools/call",
                                "params": call("b"),
                            },
                        ]
                    ).encode()
                )
            ]
        )
        received = [await backend.receive() for _ in range(2)]
        assert sorted(m["params"]["name"] for m in received) == ["a", "b"]
        assert all(m["params"]["x-vendor"] == {"deep": [1, {"a": None}]} for m in received)
        for message in received:
            text = message["params"]["name"]
            result = {"content": [{"type": "text", "text": text}]}
            await backend.send({"jsonrpc": "2.0", "id": message["id"], "result": result})
        with trio.fail_after(30):
            answer = json.loads(await client.transport.receive())
        assert isinstance(answer, list)
        texts = {item["id"]: item["result"]["content"][0]["text"] for item in answer}
        assert texts == {1: "a", 2: "b"}


async def test_a_backend_that_stops_reading_holds_the_client_back_and_closing_stays_bounded(
    autojump_clock: trio.abc.Clock,
) -> None:
    # Backpressure, not buffering: with the backend's outbox full, the proxy stops
    # reading the client; closing the client still ends everything within the bounds.
    back_proxy, back_test = memory_transport_pair(max_buffered=1)

    @asynccontextmanager
    async def connect() -> AsyncIterator[Transport]:
        yield back_proxy

    options = SessionOptions(outbox_size=1)
    proxy = ProxyServer(connect, backend_options=options)
    front_test, front_proxy = memory_transport_pair(max_buffered=1)
    client, backend = Wire(front_test), Wire(back_test)
    with trio.fail_after(600):
        async with trio.open_nursery() as nursery:
            done = trio.Event()

            async def serve() -> None:
                await serve_session(front_proxy, proxy)
                done.set()

            nursery.start_soon(serve)
            await client.request(0, "initialize", INIT_PARAMS)
            init = await backend.receive()
            await backend.send({"jsonrpc": "2.0", "id": init["id"], "result": INIT_RESULT})
            await backend.receive()  # notifications/initialized
            await client.receive()
            await client.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
            sent = 0
            with trio.move_on_after(5):
                while True:  # the backend reads nothing from here on
                    await client.request(sent + 1, "tools/call", call("x"))
                    sent += 1
            assert 0 < sent < 10  # held back after a few messages
            # The request the proxy's reader is stuck on fails after the backend's
            # request_timeout, naming why; then the reader sees the client leave.
            with trio.fail_after(120):
                refused = json.loads(await client.transport.receive())
            assert refused["error"]["code"] == -32603
            assert "the peer read nothing for 60s" in refused["error"]["message"]
            await front_test.aclose()
            await done.wait()  # the proxy's session closed within its bounds
            nursery.cancel_scope.cancel()


TASK_CAPS: Message = {"tools": {}, "tasks": {"requests": {"tools": {"call": {}}}}}


def progress(token: Any, value: float) -> Message:
    params = {"progressToken": token, "progress": value}
    return {"jsonrpc": "2.0", "method": "notifications/progress", "params": params}


async def test_a_tasks_progress_is_relayed_after_its_answer_until_it_ends(
    autojump_clock: trio.abc.Clock,
) -> None:
    # 2025-11-25: the token of a task-augmented call lives until the task ends.
    task = {
        "taskId": "t1",
        "status": "working",
        "createdAt": "2025-11-25T10:00:00Z",
        "lastUpdatedAt": "2025-11-25T10:00:00Z",
        "ttl": 60000,
    }
    async with proxied(backend_caps=TASK_CAPS) as (client, backend):
        params = call("slow", task={"ttl": 60000}, _meta={"progressToken": "tok"})
        await client.request(1, "tools/call", params)
        request = await backend.receive()
        token = request["params"]["_meta"]["progressToken"]
        await backend.send({"jsonrpc": "2.0", "id": request["id"], "result": {"task": task}})
        assert (await client.receive())["result"] == {"task": task}
        await backend.send(progress(token, 1))
        assert (await client.receive())["params"] == {"progressToken": "tok", "progress": 1}
        done = {**task, "status": "completed"}
        note = {"jsonrpc": "2.0", "method": "notifications/tasks/status", "params": done}
        await backend.send(note)
        assert (await client.receive())["params"] == done
        await backend.send(progress(token, 2))  # after the end: not passed on
        await client.request("p", "ping")
        assert await client.receive() == {"jsonrpc": "2.0", "id": "p", "result": {}}


async def test_a_task_the_backend_does_not_run_is_refused_by_the_proxy(
    autojump_clock: trio.abc.Clock,
) -> None:
    async with proxied() as (client, _backend):
        await client.request(1, "tools/call", call("slow", task={}))
        answer = await client.receive()
        assert answer["id"] == 1
        assert "tasks.requests.tools.call" in answer["error"]["message"]


async def test_a_stray_task_on_a_request_that_never_runs_as_a_task_passes_as_it_came(
    autojump_clock: trio.abc.Clock,
) -> None:
    # TypeScript SDK v1 sends ``task: {}`` on tasks/get; the spec augments only tools/call,
    # sampling and elicitation, so the proxy has nothing to judge: the backend answers.
    async with proxied(backend_caps=TASK_CAPS) as (client, backend):
        params = {"taskId": "t1", "task": {}}
        await client.request(1, "tasks/get", params)
        request = await backend.receive()
        assert (request["method"], request["params"]) == ("tasks/get", params)
        error = {"code": -32602, "message": "Failed to retrieve task: Task not found"}
        await backend.send({"jsonrpc": "2.0", "id": request["id"], "error": error})
        assert await client.receive() == {"jsonrpc": "2.0", "id": 1, "error": error}
