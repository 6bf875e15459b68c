"""Interop: the official SDK's client (PyPI ``mcp``) drives a ``trimcp.Server`` over stdio,
including structured output it validates against our generated schema, and a cancel."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

HERE = Path(__file__).resolve().parent
PEER_CLIENT = HERE.parent / "peers" / "sdk_stdio_client.py"


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    log = tmp_path_factory.mktemp("peer") / "peer.log"
    completed = subprocess.run(
        [sys.executable, str(PEER_CLIENT), "--", sys.executable, str(HERE / "sdk_peer_server.py")],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "TRIMCP_PEER_LOG": str(log)},
        check=False,
    )
    assert completed.returncode == 0, completed.stdout + completed.stderr
    result: dict[str, Any] = json.loads(completed.stdout)
    result["log_lines"] = log.read_text().splitlines() if log.exists() else []
    return result


def test_the_sdk_client_uses_every_feature(report: dict[str, Any]) -> None:
    assert report["protocol_version"] == "2025-11-25"
    assert report["server_info"] == {"name": "trimcp-framework-peer", "version": "1.0.0"}
    assert report["tools"] == ["echo", "add", "slow", "progress"]
    assert report["echo"] == "hello from the SDK client"
    assert report["add"] == {"structured": {"sum": 5}, "text": ['{"sum": 5.0}'], "is_error": False}
    assert [n["progress"] for n in report["progress"]["notifications"]] == [1.0, 2.0, 3.0]
    assert report["resources"] == ["memo://hello"]
    assert report["resource_text"] == ["hello from a trimcp resource"]
    assert report["prompts"] == ["greet"]


def test_the_sdk_cancel_reaches_the_tool(report: dict[str, Any]) -> None:
    assert report["cancel_sent"] is True
    request_id = report["cancel"]["request_id"]
    assert report["log_lines"] == [f"started {request_id}", f"cancelled {request_id}"]
    assert report["echo_after_cancel"] == "still alive"
