"""The page side of the MCP Apps bridge (app_page's window.mcpApp), run in Node against a
scripted host: the handshake, tool results, tool calls and the host's own requests."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.ci import missing_peer
from trimcp.server.apps import BRIDGE_SCRIPT

HARNESS = Path(__file__).with_name("apps_bridge_harness.js")
NODE = shutil.which("node")


@pytest.fixture
def run_bridge() -> dict[str, Any]:
    if NODE is None:
        missing_peer("node is not on PATH", "CI installs it for the interop tests")
    source = BRIDGE_SCRIPT.replace("__APP_INFO__", json.dumps({"name": "t", "version": "1"}))
    completed = subprocess.run(
        [NODE, str(HARNESS)], input=source, capture_output=True, text=True, timeout=60, check=False
    )
    assert completed.returncode == 0, completed.stderr
    result: dict[str, Any] = json.loads(completed.stdout)
    return result


def test_the_bridge_speaks_the_extensions_protocol(run_bridge: dict[str, Any]) -> None:
    posted = run_bridge["posted"]
    init, initialized, call, failing = posted[:4]
    assert init["method"] == "ui/initialize"
    assert init["params"]["appInfo"] == {"name": "t", "version": "1"}
    assert init["params"]["protocolVersion"] == "2026-01-26"
    assert initialized == {"jsonrpc": "2.0", "method": "ui/notifications/initialized", "params": {}}
    assert call["method"] == "tools/call"
    assert call["params"] == {"name": "record_visit", "arguments": {"n": 1}}
    assert failing["params"] == {"name": "nope", "arguments": {}}
    assert len({init["id"], call["id"], failing["id"]}) == 3
    # The host's requests are answered: ping and teardown with {}, others "not found".
    assert posted[4:] == [
        {"jsonrpc": "2.0", "id": 99, "result": {}},
        {"jsonrpc": "2.0", "id": 100, "result": {}},
        {
            "jsonrpc": "2.0",
            "id": 101,
            "error": {"code": -32601, "message": "Method not found: unknown/method"},
        },
    ]
    # Only the parent's tool result counts; a handler added late still gets it.
    assert run_bridge["seen"] == [["toolresult", {"structuredContent": {"visits": 3}}]]
    assert run_bridge["late"] == [{"structuredContent": {"visits": 3}}]
    assert run_bridge["answered"] == {"structuredContent": {"visits": 4}}
    assert run_bridge["failure"] == {"message": "Unknown tool", "code": -32602}
