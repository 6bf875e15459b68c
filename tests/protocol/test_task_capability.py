"""The core refuses a task-augmented request (params with ``task``) the peer did not
declare it runs as a task (``capabilities.tasks.requests.<method>``), before sending it."""

from __future__ import annotations

from typing import Any

import pytest

from tests.support import init_params
from trimcp.errors import METHOD_NOT_FOUND, LocalProtocolError
from trimcp.protocol.connection import Connection
from trimcp.protocol.events import RequestReceived
from trimcp.protocol.lifecycle import Role
from trimcp.protocol.methods import task_capability
from trimcp.types import (
    ClientCapabilities,
    ClientTaskRequests,
    ClientTasksCapability,
    ElicitationCapability,
    ElicitationTaskRequests,
    Implementation,
    InitializeResult,
    SamplingCapability,
    SamplingTaskRequests,
    ServerCapabilities,
    ServerTaskRequests,
    ServerTasksCapability,
    ToolsCapability,
    ToolsTaskRequests,
)

SAMPLE = {
    "messages": [{"role": "user", "content": {"type": "text", "text": "hi"}}],
    "maxTokens": 5,
    "task": {"ttl": 1000},
}
ELICIT = {"message": "name?", "requestedSchema": {"type": "object", "properties": {}}}


def pair(
    client_caps: ClientCapabilities, server_caps: ServerCapabilities
) -> tuple[Connection, Connection]:
    """A client and a server core after a 2025-11-25 handshake."""
    client, server = Connection(Role.CLIENT), Connection(Role.SERVER)
    _, data = client.send_request("initialize", init_params("2025-11-25", client_caps))
    event = server.receive(data)
    assert isinstance(event, RequestReceived)
    result = InitializeResult(
        protocol_version="2025-11-25",
        capabilities=server_caps,
        server_info=Implementation(name="s", version="1"),
    )
    client.receive(server.send_result(event.id, result))
    server.receive(client.send_notification("notifications/initialized"))
    return client, server


def test_the_capability_path_of_each_task_method() -> None:
    assert task_capability("tools/call") == ("tasks", "requests", "tools", "call")
    assert task_capability("sampling/createMessage") == (
        "tasks",
        "requests",
        "sampling",
        "createMessage",
    )
    assert task_capability("elicitation/create") == ("tasks", "requests", "elicitation", "create")


def test_client_refuses_task_augmented_tools_call_without_the_capability() -> None:
    client, _ = pair(ClientCapabilities(), ServerCapabilities(tools=ToolsCapability()))
    call: dict[str, Any] = {"name": "slow", "arguments": {}, "task": {"ttl": 60_000}}
    with pytest.raises(LocalProtocolError) as caught:
        client.send_request("tools/call", call, with_progress=True)
    message = str(caught.value)
    assert "tools/call" in message
    assert "tasks.requests.tools.call" in message
    assert caught.value.code == METHOD_NOT_FOUND
    # Nothing was sent or remembered: no request in flight, no id used.
    assert client.outbound_in_flight() == []
    request_id, _ = client.send_request("tools/call", {"name": "slow", "arguments": {}})
    assert request_id == 2  # initialize was 1


def test_client_sends_task_augmented_tools_call_with_the_capability() -> None:
    caps = ServerCapabilities(
        tools=ToolsCapability(),
        tasks=ServerTasksCapability(requests=ServerTaskRequests(tools=ToolsTaskRequests(call={}))),
    )
    client, server = pair(ClientCapabilities(), caps)
    _, data = client.send_request("tools/call", {"name": "slow", "task": {}})
    event = server.receive(data)
    assert isinstance(event, RequestReceived)
    assert event.params.task is not None


def test_server_refuses_task_augmented_sampling_without_the_capability() -> None:
    # The client samples, but not as a task (only elicitation as a task).
    caps = ClientCapabilities(
        sampling=SamplingCapability(),
        elicitation=ElicitationCapability(),
        tasks=ClientTasksCapability(
            requests=ClientTaskRequests(elicitation=ElicitationTaskRequests(create={}))
        ),
    )
    _, server = pair(caps, ServerCapabilities(tools=ToolsCapability()))
    with pytest.raises(LocalProtocolError, match=r"sampling/createMessage.*client did not") as c:
        server.send_request("sampling/createMessage", SAMPLE)
    assert "tasks.requests.sampling.createMessage" in str(c.value)
    assert server.outbound_in_flight() == []
    # The same request without `task` goes; elicitation as a task goes too.
    plain = {key: value for key, value in SAMPLE.items() if key != "task"}
    server.send_request("sampling/createMessage", plain)
    server.send_request("elicitation/create", {**ELICIT, "task": {}})


def test_server_sends_task_augmented_sampling_with_the_capability() -> None:
    caps = ClientCapabilities(
        sampling=SamplingCapability(),
        tasks=ClientTasksCapability(
            requests=ClientTaskRequests(sampling=SamplingTaskRequests(create_message={}))
        ),
    )
    client, server = pair(caps, ServerCapabilities(tools=ToolsCapability()))
    _, data = server.send_request("sampling/createMessage", SAMPLE)
    assert isinstance(client.receive(data), RequestReceived)


def test_a_peer_without_any_tasks_capability() -> None:
    _, server = pair(
        ClientCapabilities(elicitation=ElicitationCapability()),
        ServerCapabilities(tools=ToolsCapability()),
    )
    with pytest.raises(LocalProtocolError, match=r"tasks\.requests\.elicitation\.create"):
        server.send_request("elicitation/create", {**ELICIT, "task": {}})
