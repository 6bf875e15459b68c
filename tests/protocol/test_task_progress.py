"""Sans-IO: the progress token of a task-augmented request stays valid after its
``CreateTaskResult`` until the requester sees the task end (a terminal status in
``notifications/tasks/status``, ``tasks/get`` or ``tasks/cancel``; any answer to
``tasks/result``; ``-32602`` for the task), bounded in number."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.protocol.test_task_capability import pair
from trimcp.protocol import connection as connection_module
from trimcp.protocol.connection import Connection
from trimcp.protocol.events import (
    ErrorReceived,
    MessageIgnored,
    NotificationReceived,
    ProgressReceived,
    ResponseReceived,
)
from trimcp.protocol.jsonrpc import RequestId
from trimcp.types import (
    ClientCapabilities,
    CreateTaskResult,
    ServerCapabilities,
    ServerTaskRequests,
    ServerTasksCapability,
    ToolsCapability,
    ToolsTaskRequests,
)

TASK_SERVER = ServerCapabilities(
    tools=ToolsCapability(),
    tasks=ServerTasksCapability(
        cancel={}, requests=ServerTaskRequests(tools=ToolsTaskRequests(call={}))
    ),
)


def task(task_id: str, status: str = "working") -> dict[str, Any]:
    return {
        "taskId": task_id,
        "status": status,
        "createdAt": "2025-11-25T10:00:00Z",
        "lastUpdatedAt": "2025-11-25T10:00:00Z",
        "ttl": 60_000,
    }


def answer(request_id: RequestId, result: dict[str, Any]) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": request_id, "result": result}).encode()


def progress(token: Any, value: float) -> bytes:
    params = {"progressToken": token, "progress": value}
    note = {"jsonrpc": "2.0", "method": "notifications/progress", "params": params}
    return json.dumps(note).encode()


def start_task(client: Connection, task_id: str) -> RequestId:
    """Send a task-augmented tools/call with progress; answer it with task ``task_id``."""
    request_id, data = client.send_request(
        "tools/call", {"name": "slow", "task": {}}, with_progress=True
    )
    assert json.loads(data)["params"]["_meta"]["progressToken"] == request_id
    event = client.receive(answer(request_id, {"task": task(task_id)}))
    assert isinstance(event, ResponseReceived)
    assert isinstance(event.result, CreateTaskResult)
    return request_id


def test_the_token_outlives_the_create_task_result() -> None:
    client, _ = pair(ClientCapabilities(), TASK_SERVER)
    request_id = start_task(client, "t1")
    assert client.follows_task(request_id)
    event = client.receive(progress(request_id, 0.5))
    assert isinstance(event, ProgressReceived)
    assert (event.request_id, event.progress) == (request_id, 0.5)
    # A plain (not task-augmented) request's token still ends with its answer.
    plain_id, _ = client.send_request("tools/call", {"name": "quick"}, with_progress=True)
    client.receive(answer(plain_id, {"content": []}))
    assert not client.follows_task(plain_id)
    assert isinstance(client.receive(progress(plain_id, 1)), MessageIgnored)


def test_a_terminal_status_notification_ends_the_token() -> None:
    client, _ = pair(ClientCapabilities(), TASK_SERVER)
    request_id = start_task(client, "t1")
    working = {"jsonrpc": "2.0", "method": "notifications/tasks/status", "params": task("t1")}
    assert isinstance(client.receive(json.dumps(working)), NotificationReceived)
    assert isinstance(client.receive(progress(request_id, 1)), ProgressReceived)
    done = {**working, "params": task("t1", "completed")}
    assert isinstance(client.receive(json.dumps(done)), NotificationReceived)
    assert not client.follows_task(request_id)
    assert client.followed_count() == 0
    late = client.receive(progress(request_id, 2))
    assert isinstance(late, MessageIgnored)
    assert "unknown or finished token" in late.reason


@pytest.mark.parametrize("status", ["completed", "failed", "cancelled"])
def test_a_terminal_tasks_get_ends_the_token(status: str) -> None:
    client, _ = pair(ClientCapabilities(), TASK_SERVER)
    request_id = start_task(client, "t1")
    poll_id, _ = client.send_request("tasks/get", {"taskId": "t1"})
    client.receive(answer(poll_id, task("t1", "input_required")))
    assert client.follows_task(request_id)
    poll_id, _ = client.send_request("tasks/get", {"taskId": "t1"})
    client.receive(answer(poll_id, task("t1", status)))
    assert isinstance(client.receive(progress(request_id, 1)), MessageIgnored)


def test_tasks_cancel_and_tasks_result_end_the_token() -> None:
    client, _ = pair(ClientCapabilities(), TASK_SERVER)
    first, second = start_task(client, "t1"), start_task(client, "t2")
    cancel_id, _ = client.send_request("tasks/cancel", {"taskId": "t1"})
    client.receive(answer(cancel_id, task("t1", "cancelled")))
    assert not client.follows_task(first)
    assert client.follows_task(second)
    result_id, _ = client.send_request("tasks/result", {"taskId": "t2"})
    assert isinstance(client.receive(answer(result_id, {"content": []})), ResponseReceived)
    assert not client.follows_task(second)


def test_an_error_about_the_task_ends_the_token() -> None:
    client, _ = pair(ClientCapabilities(), TASK_SERVER)
    request_id = start_task(client, "t1")
    poll_id, _ = client.send_request("tasks/get", {"taskId": "t1"})
    transient = {"code": -32603, "message": "store down"}
    client.receive(json.dumps({"jsonrpc": "2.0", "id": poll_id, "error": transient}))
    assert client.follows_task(request_id)  # not an answer about the task's end
    poll_id, _ = client.send_request("tasks/get", {"taskId": "t1"})
    expired = {"code": -32602, "message": "Failed to retrieve task: Task has expired"}
    event = client.receive(json.dumps({"jsonrpc": "2.0", "id": poll_id, "error": expired}))
    assert isinstance(event, ErrorReceived)
    assert not client.follows_task(request_id)


def test_a_failed_creation_keeps_no_token() -> None:
    client, _ = pair(ClientCapabilities(), TASK_SERVER)
    request_id, _ = client.send_request("tools/call", {"name": "x", "task": {}}, with_progress=True)
    refused = {"code": -32601, "message": "cannot run as a task"}
    client.receive(json.dumps({"jsonrpc": "2.0", "id": request_id, "error": refused}))
    assert not client.follows_task(request_id)
    assert isinstance(client.receive(progress(request_id, 1)), MessageIgnored)


def test_followed_tasks_are_bounded_and_cleared_on_close(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(connection_module, "MAX_FOLLOWED_TASKS", 3)
    client, _ = pair(ClientCapabilities(), TASK_SERVER)
    ids = [start_task(client, f"t{n}") for n in range(5)]
    assert client.followed_count() == 3
    assert [client.follows_task(i) for i in ids] == [False, False, True, True, True]
    assert isinstance(client.receive(progress(ids[0], 1)), MessageIgnored)
    client.close()
    assert client.followed_count() == 0
    assert not client.follows_task(ids[-1])
