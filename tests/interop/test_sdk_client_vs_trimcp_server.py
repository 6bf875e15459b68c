"""Interop: the official SDK's client (PyPI ``mcp``) drives a trimcp server over stdio."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

PEERS = Path(__file__).resolve().parent.parent / "peers"


@pytest.fixture
def report(tmp_path: Path) -> dict[str, object]:
    log = tmp_path / "peer.log"
    completed = subprocess.run(
        [
            sys.executable,
            str(PEERS / "sdk_stdio_client.py"),
            "--",
            sys.executable,
            str(PEERS / "trimcp_stdio_server.py"),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        env={**__import__("os").environ, "TRIMCP_PEER_LOG": str(log)},
        check=False,
    )
    assert completed.returncode == 0, completed.stdout + completed.stderr
    result: dict[str, object] = json.loads(completed.stdout)
    result["log_lines"] = log.read_text().splitlines() if log.exists() else []
    return result


def test_sdk_client_runs_every_step_against_trimcp(report: dict[str, object]) -> None:
    assert report["protocol_version"] == "2025-11-25"
    assert report["server_info"] == {"name": "trimcp-peer", "version": "1.0.0"}
    assert report["ping"] is True
    assert report["tools"] == ["echo", "add", "slow", "progress"]
    assert report["echo"] == "hello from the SDK client"
    assert report["add"] == {"structured": {"sum": 5}, "text": ["5"], "is_error": False}
    progress = report["progress"]
    assert isinstance(progress, dict)
    assert [n["progress"] for n in progress["notifications"]] == [1.0, 2.0, 3.0]


def test_sdk_cancel_reaches_the_trimcp_handler(report: dict[str, object]) -> None:
    assert report["cancel_sent"] is True
    cancel = report["cancel"]
    assert isinstance(cancel, dict)
    request_id = cancel["request_id"]
    # The server's handler observed the cancellation (its except/finally ran) ...
    assert report["log_lines"] == [f"started {request_id}", f"cancelled {request_id}"]
    # ... and the session went on.
    assert report["echo_after_cancel"] == "still alive"
