"""Hypothesis on the sans-IO core: arbitrary input never raises, and a lifecycle state machine
of a client and a server core keeps its invariants (at most one answer per request id, no
answer after a cancel, in-flight bookkeeping in step on both sides)."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from tests.support import init_params
from trimcp import serde
from trimcp.errors import McpError
from trimcp.protocol.connection import Connection
from trimcp.protocol.events import (
    BatchReceived,
    CancelReceived,
    ErrorReceived,
    LateResponseReceived,
    MessageIgnored,
    MessageRejected,
    RequestReceived,
    ResponseReceived,
)
from trimcp.protocol.lifecycle import Role, State
from trimcp.server.lowlevel import LowLevelServer
from trimcp.types import Implementation, ServerCapabilities, ToolsCapability

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner),
    max_leaves=20,
)
message_like = st.fixed_dictionaries(
    {},
    optional={
        "jsonrpc": st.sampled_from(["2.0", "1.0", 2]),
        "id": st.one_of(st.integers(), st.text(max_size=3), st.none(), st.booleans()),
        "method": st.sampled_from(
            [
                "ping",
                "initialize",
                "tools/list",
                "tools/call",
                "notifications/cancelled",
                "notifications/progress",
                "x/y",
                "",
            ]
        )
        | st.integers(),
        "params": json_values,
        "result": json_values,
        "error": json_values,
    },
)


def operating_server() -> Connection:
    conn = Connection(Role.SERVER)
    conn.receive(
        json.dumps(
            {
                "jsonrpc": "2.0",
                "id": 0,
                "method": "initialize",
                "params": serde.unstructure(init_params("2025-03-26")),
            }
        ).encode()
    )
    server = LowLevelServer(
        Implementation(name="s", version="1"),
        capabilities=ServerCapabilities(tools=ToolsCapability()),
    )
    conn.send_result(0, server.initialize_result(init_params("2025-03-26")))
    return conn


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(st.binary(max_size=200))
def test_arbitrary_bytes_never_raise(data: bytes) -> None:
    for conn in (Connection(Role.SERVER), Connection(Role.CLIENT), operating_server()):
        conn.receive(data)


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(message_like, st.lists(message_like, max_size=3), json_values))
def test_arbitrary_json_never_raises(value: Any) -> None:
    for conn in (Connection(Role.SERVER), Connection(Role.CLIENT), operating_server()):
        event = conn.receive(json.dumps(value).encode())
        events = event.events if isinstance(event, BatchReceived) else (event,)
        for item in events:
            if isinstance(item, MessageRejected) and item.reply is not None:
                reply = json.loads(item.reply)
                assert reply["jsonrpc"] == "2.0"
                assert "error" in reply


class LifecycleMachine(RuleBasedStateMachine):
    """A client core and a server core wired by hand, driven in random orders."""

    def __init__(self) -> None:
        super().__init__()
        self.client = Connection(Role.CLIENT)
        self.server = Connection(Role.SERVER)
        self.lowlevel = LowLevelServer(
            Implementation(name="s", version="1"),
            capabilities=ServerCapabilities(tools=ToolsCapability()),
        )
        self.to_server: list[bytes] = []
        self.to_client: list[bytes] = []
        self.server_inflight: set[Any] = set()
        self.server_methods: dict[Any, str] = {}
        self.answered: dict[Any, int] = {}
        self.cancelled: set[Any] = set()
        self.pending_client: set[Any] = set()

    @rule(version=st.sampled_from(["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"]))
    @precondition(lambda self: self.client.state is State.NEW)
    def client_initializes(self, version: str) -> None:
        request_id, data = self.client.send_request("initialize", init_params(version))
        self.pending_client.add(request_id)
        self.to_server.append(data)

    @rule(method=st.sampled_from(["ping", "tools/list", "prompts/list", "x/custom"]))
    def client_requests(self, method: str) -> None:
        try:
            request_id, data = self.client.send_request(method)
        except McpError:
            return  # not allowed now: a local error, nothing sent
        self.pending_client.add(request_id)
        self.to_server.append(data)

    @rule(data=st.data())
    @precondition(lambda self: self.pending_client)
    def client_cancels(self, data: st.DataObject) -> None:
        request_id = data.draw(st.sampled_from(sorted(self.pending_client)))
        self.pending_client.discard(request_id)
        note = self.client.cancel_outbound(request_id, "test")
        if note is not None:
            self.to_server.append(note)

    @rule()
    @precondition(lambda self: self.to_server)
    def server_reads(self) -> None:
        event = self.server.receive(self.to_server.pop(0))
        if isinstance(event, RequestReceived):
            assert event.id not in self.server_inflight
            self.server_inflight.add(event.id)
            self.server_methods[event.id] = event.method
        elif isinstance(event, CancelReceived):
            assert event.request_id in self.server_inflight
            self.server_inflight.discard(event.request_id)
            self.cancelled.add(event.request_id)
            self.server.forget_inbound(event.request_id)
        elif isinstance(event, MessageRejected) and event.reply is not None:
            self.to_client.append(event.reply)

    @rule(data=st.data(), fail=st.booleans())
    @precondition(lambda self: self.server_inflight)
    def server_answers(self, data: st.DataObject, fail: bool) -> None:
        request_id = data.draw(st.sampled_from(sorted(self.server_inflight, key=str)))
        self.server_inflight.discard(request_id)
        assert request_id not in self.cancelled
        self.answered[request_id] = self.answered.get(request_id, 0) + 1
        inbound = dict.fromkeys(self.server.inbound_in_flight())
        assert request_id in inbound
        if fail:
            reply = self.server.send_error(request_id, McpError(-32000, "no"))
        elif self.server_methods[request_id] == "initialize":
            result = self.lowlevel.initialize_result(init_params("2025-11-25"))
            reply = self.server.send_result(request_id, result)
        else:
            reply = self.server.send_result(request_id, {"tools": []})
        self.to_client.append(reply)

    @rule()
    @precondition(lambda self: self.to_client)
    def client_reads(self) -> None:
        event = self.client.receive(self.to_client.pop(0))
        if isinstance(event, ResponseReceived | ErrorReceived) and event.id is not None:
            assert event.id in self.pending_client
            self.pending_client.discard(event.id)
        else:
            assert isinstance(
                event, MessageIgnored | LateResponseReceived | ErrorReceived | ResponseReceived
            )

    @invariant()
    def at_most_one_answer_per_id(self) -> None:
        assert all(count == 1 for count in self.answered.values())

    @invariant()
    def bookkeeping_in_step(self) -> None:
        assert set(self.server.inbound_in_flight()) == self.server_inflight
        assert set(self.client.outbound_in_flight()) == self.pending_client

    @invariant()
    def states_agree_once_operating(self) -> None:
        if self.client.state is State.OPERATING:
            assert self.client.negotiated is not None
            assert self.client.negotiated.protocol_version in (
                "2024-11-05",
                "2025-03-26",
                "2025-06-18",
                "2025-11-25",
            )


TestLifecycle = LifecycleMachine.TestCase
TestLifecycle.settings = settings(max_examples=150, stateful_step_count=30, deadline=None)
