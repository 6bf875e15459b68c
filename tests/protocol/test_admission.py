"""One admission rule for both eras (trimcp.protocol.admission.admit_request).

Unit checks of each refusal, then the same rule seen from outside: a tools-only server
refuses ``prompts/list`` with ``-32601`` in 2026-07-28 (over stdio and HTTP) as in a
session, and a session refuses a method its negotiated revision does not have even when
the capability for it is declared (so the revision check, not the capability, decides).
"""

from __future__ import annotations

import json
import sys
from typing import Any

import pytest

import trimcp
from tests.http_server.helpers import running_app
from tests.http_server.test_modern_http import post
from tests.support import raw_client
from tests.tasks.helpers import make_app
from trimcp.errors import INVALID_PARAMS, METHOD_NOT_FOUND, RemoteProtocolError
from trimcp.protocol.admission import admit_request, has_capability
from trimcp.testing import open_test_client
from trimcp.types import CallToolRequestParams

V2026 = "2026-07-28"


def _refusal(**kwargs: Any) -> RemoteProtocolError:
    with pytest.raises(RemoteProtocolError) as refused:
        admit_request(**kwargs)
    return refused.value


@pytest.mark.parametrize("version", ["2025-11-25", V2026])
def test_typed_params_in_both_eras(version: str) -> None:
    params = admit_request(
        "tools/call",
        {"name": "echo", "arguments": {"x": 1}},
        peer="client",
        version=version,
        capabilities={"tools": {}},
    )
    assert params == CallToolRequestParams(name="echo", arguments={"x": 1})


@pytest.mark.parametrize("version", ["2025-11-25", V2026])
def test_capability_gating_in_both_eras(version: str) -> None:
    refused = _refusal(
        method="prompts/list",
        params={},
        peer="client",
        version=version,
        capabilities={"tools": {}},
    )
    assert refused.code == METHOD_NOT_FOUND
    assert "capability prompts was not declared" in refused.message


def test_the_revision_decides_before_the_capability() -> None:
    refused = _refusal(
        method="tasks/list",
        params={},
        peer="client",
        version="2025-06-18",
        capabilities={"tasks": {"list": {}}},
    )
    assert refused.code == METHOD_NOT_FOUND
    assert refused.message.endswith("does not exist in protocol version 2025-06-18")


def test_a_removed_method_names_its_replacement() -> None:
    refused = _refusal(
        method="resources/subscribe",
        params={"uri": "x://y"},
        peer="client",
        version=V2026,
        capabilities={"resources": {"subscribe": True}},
    )
    assert refused.code == METHOD_NOT_FOUND
    assert "subscriptions/listen" in refused.message


@pytest.mark.parametrize(
    ("method", "capabilities"),
    [
        ("sampling/createMessage", {"sampling": {}}),  # a server's request
        ("elicitation/create", {"elicitation": {}}),
        ("notifications/initialized", {}),  # not a request at all
    ],
)
def test_a_method_of_the_other_side_is_refused(method: str, capabilities: Any) -> None:
    refused = _refusal(
        method=method,
        params={},
        peer="client",
        version="2025-11-25",
        capabilities=capabilities,
    )
    assert refused.code == METHOD_NOT_FOUND
    assert refused.message.endswith(f"{method} is not a request a client may send")


@pytest.mark.parametrize(
    ("capabilities", "path", "declared"),
    [
        ({"tools": {}}, ("tools",), True),
        ({"resources": {"subscribe": True}}, ("resources", "subscribe"), True),
        ({"resources": {"subscribe": False}}, ("resources", "subscribe"), False),
        ({"resources": {"subscribe": None}}, ("resources", "subscribe"), False),
        ({"resources": {}}, ("resources", "subscribe"), False),
        ({"resources": True}, ("resources", "subscribe"), False),  # not an object
        ({"resources": ["subscribe"]}, ("resources", "subscribe"), False),
        ({"prompts": False}, ("prompts",), False),
        ({}, ("prompts",), False),
        (None, ("prompts",), False),
    ],
)
def test_has_capability_reads_only_objects_and_declared_values(
    capabilities: Any, path: tuple[str, ...], declared: bool
) -> None:
    assert has_capability(capabilities, path) is declared


def test_no_capability_check_before_capabilities_are_declared() -> None:
    params = admit_request(
        "prompts/list", {}, peer="client", version="2025-11-25", capabilities=None
    )
    assert params is not None


def test_a_2026_tasks_extension_request_passes_to_its_handler_untouched() -> None:
    raw = {"taskId": 7, "extra": [1]}  # its handler checks its params
    for method in ("tasks/get", "tasks/update", "tasks/cancel"):
        assert admit_request(method, raw, peer="client", version=V2026, capabilities={}) is raw


@pytest.mark.parametrize(
    ("responses", "path", "says"),
    [
        ("yes", "params.inputResponses", "inputResponses must be an object mapping"),
        (["yes"], "params.inputResponses", "inputResponses must be an object mapping"),
        ({"k": "yes"}, "params.inputResponses.k", "inputResponses['k'] must be a response object"),
        ({"ok": {}, "k": None}, "params.inputResponses.k", "must be a response object"),
    ],
)
@pytest.mark.parametrize("method", ["tools/call", "prompts/get", "resources/read"])
def test_2026_input_responses_must_be_objects(
    method: str, responses: Any, path: str, says: str
) -> None:
    params = {"name": "x", "uri": "x://y", "inputResponses": responses}
    refused = _refusal(
        method=method,
        params=params,
        peer="client",
        version=V2026,
        capabilities={"tools": {}, "prompts": {}, "resources": {}},
    )
    assert refused.code == INVALID_PARAMS
    assert says in refused.message
    assert refused.data["path"] == path


def test_2026_input_responses_of_objects_pass_and_other_requests_ignore_them() -> None:
    good = {"name": "x", "inputResponses": {"k": {"action": "accept"}}}
    params = admit_request("tools/call", good, peer="client", version=V2026, capabilities=None)
    assert params.input_responses == {"k": {"action": "accept"}}
    listed = {"inputResponses": "not for tools/list"}
    assert admit_request("tools/list", listed, peer="client", version=V2026, capabilities=None)
    refused = _refusal(
        method="tools/call", params=None, peer="client", version=V2026, capabilities=None
    )
    assert refused.code == INVALID_PARAMS  # no params at all: the missing name, not a crash


@pytest.mark.parametrize("version", ["2025-11-25", V2026])
def test_bad_params_name_the_field(version: str) -> None:
    refused = _refusal(
        method="tools/call",
        params={"name": 7},
        peer="client",
        version=version,
        capabilities={"tools": {}},
    )
    assert refused.code == INVALID_PARAMS
    assert refused.data["path"] == "name"


def test_unknown_methods_and_relays_pass_untouched() -> None:
    raw = {"anything": [1, 2]}
    assert admit_request("x/custom", raw, peer="client", version=V2026, capabilities={}) is raw
    passed = admit_request(
        "tools/call",
        {"name": 7},
        peer="client",
        version="2025-11-25",
        capabilities={"tools": {}},
        structure=False,
    )
    assert passed == {"name": 7}


def _tools_only() -> trimcp.Server:
    app = trimcp.Server("tools-only", "1.0")

    @app.tool()
    def echo(text: str) -> str:
        return text

    return app


async def test_a_tools_only_server_refuses_prompts_list_in_a_session() -> None:
    async with open_test_client(_tools_only()) as client:
        with pytest.raises(trimcp.McpError) as refused:
            await client.session.send_request("prompts/list", {})
        assert refused.value.code == METHOD_NOT_FOUND


async def test_a_tools_only_server_refuses_prompts_list_in_2026_over_http() -> None:
    # With the capability check gone from the 2026 path, this answered an empty list.
    async with running_app(None, _tools_only()) as (_, client):
        reply = await post(client, "prompts/list")
        assert reply.status == 404
        assert reply.json()["error"]["code"] == METHOD_NOT_FOUND
        listed = await post(client, "tools/list")
        assert [tool["name"] for tool in listed.json()["result"]["tools"]] == ["echo"]


async def test_a_tools_only_server_refuses_prompts_list_in_2026_over_stdio(tmp_path: Any) -> None:
    import trio

    server = tmp_path / "tools_only.py"
    server.write_text(
        "import trimcp\n"
        "app = trimcp.Server('tools-only', '1.0')\n"
        "@app.tool()\n"
        "def echo(text: str) -> str:\n"
        "    return text\n"
        "app.run()\n"
    )
    meta = {
        "io.modelcontextprotocol/protocolVersion": V2026,
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"},
    }
    request = {"jsonrpc": "2.0", "id": 1, "method": "prompts/list", "params": {"_meta": meta}}
    with trio.fail_after(30):
        done = await trio.run_process(
            [sys.executable, str(server)],
            stdin=(json.dumps(request) + "\n").encode(),
            capture_stdout=True,
            capture_stderr=True,
        )
    answer = json.loads(done.stdout.splitlines()[0])
    assert answer["error"]["code"] == METHOD_NOT_FOUND


async def test_a_session_refuses_a_method_its_revision_lacks() -> None:
    # The server declares tasks (it has a task tool), but 2025-06-18 has no tasks/list;
    # in 2025-11-25 the same request is served.
    async with raw_client(make_app(), version="2025-06-18") as (peer, _):
        reply = await peer.request(1, "tasks/list", {})
        assert reply["error"]["code"] == METHOD_NOT_FOUND
        assert reply["error"]["message"].endswith("does not exist in protocol version 2025-06-18")
    async with raw_client(make_app(), version="2025-11-25") as (peer, _):
        assert (await peer.request(1, "tasks/list", {}))["result"]["tasks"] == []


def test_a_2026_request_is_typed_and_checked_the_same_when_its_method_was_admitted_before() -> None:
    # prepare() keeps each method's admission and params type per agreement: the second
    # request of a method is typed by the kept type, and bad params are still refused.
    from trimcp.protocol import modern
    from trimcp.protocol.jsonrpc import Request
    from trimcp.protocol.stateless import RequestRefused, prepare
    from trimcp.server.lowlevel import LowLevelServer
    from trimcp.types import Implementation, ServerCapabilities, ToolsCapability

    server = LowLevelServer(
        Implementation(name="s", version="1"),
        capabilities=ServerCapabilities(tools=ToolsCapability()),
    )
    meta = {modern.META_PROTOCOL_VERSION: V2026, modern.META_CLIENT_CAPABILITIES: {}}
    for request_id in (1, 2):
        params = {"name": "echo", "arguments": {"n": request_id}, "_meta": meta}
        prepared = prepare(server, Request(request_id, "tools/call", params))
        assert prepared.params == CallToolRequestParams(
            name="echo", arguments={"n": request_id}, meta=meta
        )
    with pytest.raises(RequestRefused) as refused:
        prepare(server, Request(3, "tools/call", {"name": 7, "_meta": meta}))
    assert refused.value.error.code == INVALID_PARAMS


@pytest.mark.parametrize(
    "params",
    [
        {"name": 7},
        {"arguments": {}},
        {"name": "x", "arguments": []},
        {"name": "x", "inputResponses": "yes"},
        {"name": "x", "inputResponses": {"k": None}},
        {"name": "x", "inputResponses": {"k": {"action": "accept"}}},
        {"name": "x", "arguments": {"n": 1}},
    ],
)
def test_prepare_types_and_refuses_2026_params_as_admit_request_does(params: Any) -> None:
    # prepare() structures params itself when there are no input responses to check; the
    # typed params and every refusal (code, message, data) are admit_request's.
    from trimcp.protocol import modern
    from trimcp.protocol.jsonrpc import Request
    from trimcp.protocol.stateless import RequestRefused, prepare
    from trimcp.server.lowlevel import LowLevelServer
    from trimcp.types import Implementation, ServerCapabilities, ToolsCapability

    server = LowLevelServer(
        Implementation(name="s", version="1"),
        capabilities=ServerCapabilities(tools=ToolsCapability()),
    )
    meta = {modern.META_PROTOCOL_VERSION: V2026, modern.META_CLIENT_CAPABILITIES: {}}
    sent = {**params, "_meta": meta}
    expected: Any = None
    refusal: RemoteProtocolError | None = None
    try:
        expected = admit_request(
            "tools/call", sent, peer="client", version=V2026, capabilities={"tools": {}}
        )
    except RemoteProtocolError as exc:
        refusal = exc
    for request_id in (1, 2):  # the method's first request and a kept admission
        if refusal is None:
            assert prepare(server, Request(request_id, "tools/call", sent)).params == expected
            continue
        with pytest.raises(RequestRefused) as refused:
            prepare(server, Request(request_id, "tools/call", sent))
        got = refused.value.error
        assert (got.code, got.message, got.data) == (refusal.code, refusal.message, refusal.data)


def _server_past_handshake(server_caps: dict[str, Any]) -> Any:
    # A sans-IO server core through a 2025-03-26 handshake declaring ``server_caps``.
    from trimcp.protocol.connection import Connection
    from trimcp.protocol.lifecycle import Role

    conn = Connection(Role.SERVER)
    init = {
        "protocolVersion": "2025-03-26",
        "capabilities": {},
        "clientInfo": {"name": "t", "version": "0"},
    }
    conn.receive(
        json.dumps({"jsonrpc": "2.0", "id": "init", "method": "initialize", "params": init})
    )
    answer = {
        "protocolVersion": "2025-03-26",
        "capabilities": server_caps,
        "serverInfo": {"name": "s", "version": "0"},
    }
    conn.send_result("init", answer)
    conn.receive('{"jsonrpc":"2.0","method":"notifications/initialized"}')
    return conn


def _request(request_id: int, method: str, params: dict[str, Any]) -> str:
    return json.dumps({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})


def test_a_repeated_method_is_admitted_against_the_agreement_in_force() -> None:
    # A session admits a method the peer repeats once (Connection._admitted): its params
    # are still checked per request, another method is checked on its own, and an agreement
    # restored with other capabilities is checked again.
    conn = _server_past_handshake({"tools": {}, "prompts": {}})
    call = {"name": "echo", "arguments": {"x": 1}}
    for request_id in (1, 2):
        event = conn.receive(_request(request_id, "tools/call", call))
        assert type(event).__name__ == "RequestReceived"
        assert event.params == CallToolRequestParams(name="echo", arguments={"x": 1})
    bad = conn.receive(_request(3, "tools/call", {"arguments": {}}))
    assert type(bad).__name__ == "MessageRejected"
    assert bad.error.code == INVALID_PARAMS
    listed = conn.receive(_request(4, "prompts/list", {}))
    assert type(listed).__name__ == "RequestReceived"
    conn.restore(_server_past_handshake({"tools": {}}).resting_state())
    refused = conn.receive(_request(5, "prompts/list", {}))
    assert type(refused).__name__ == "MessageRejected"
    assert refused.error.code == METHOD_NOT_FOUND
    assert type(conn.receive(_request(6, "tools/call", call))).__name__ == "RequestReceived"
