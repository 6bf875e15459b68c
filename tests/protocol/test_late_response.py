"""Sans-IO: an answer to a request of ours that is no longer awaited (cancelled, timed out)
is reported as a fact, :class:`LateResponseReceived`, with its result as decoded JSON; the
engine decides what to do with it (trimcp.session.late). An answer to an id we never
issued is still ignored."""

from __future__ import annotations

import json
from typing import Any

from tests.protocol.test_task_capability import pair
from trimcp.protocol.events import LateResponseReceived, MessageIgnored, ResponseReceived
from trimcp.types import ClientCapabilities, ServerCapabilities, ToolsCapability


def test_an_answer_after_the_cancel_is_reported_late_and_once_only_ours() -> None:
    client, _server = pair(ClientCapabilities(), ServerCapabilities(tools=ToolsCapability()))
    request_id, _ = client.send_request("tools/call", {"name": "t"})
    assert client.cancel_outbound(request_id, "cancelled") is not None
    task = {"resultType": "task", "taskId": "abc", "status": "working"}
    answer: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "result": task}
    event = client.receive(json.dumps(answer).encode())
    assert isinstance(event, LateResponseReceived)
    assert event.id == request_id
    assert event.result == task  # not structured: the engine's caller reads it
    assert type(request_id) is int
    for never_issued in (request_id + 1, 0, "x"):
        stray: dict[str, Any] = {"jsonrpc": "2.0", "id": never_issued, "result": {}}
        assert isinstance(client.receive(json.dumps(stray).encode()), MessageIgnored)
    awaited, _ = client.send_request("tools/list")
    listed: dict[str, Any] = {"jsonrpc": "2.0", "id": awaited, "result": {"tools": []}}
    assert isinstance(client.receive(json.dumps(listed).encode()), ResponseReceived)
