"""Interop: the official SDK's client (PyPI ``mcp``) runs a trimcp tool as a task
(2025-11-25) with a progress token; trimcp's progress reaches it after the
``CreateTaskResult``, under the original token, and stops at the task's end."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

PEERS = Path(__file__).resolve().parent.parent / "peers"


def test_sdk_client_gets_task_progress_under_the_original_token() -> None:
    completed = subprocess.run(
        [
            sys.executable,
            str(PEERS / "sdk_task_progress_client.py"),
            "--",
            sys.executable,
            str(PEERS / "trimcp_task_server.py"),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert completed.returncode == 0, completed.stdout + completed.stderr
    report = json.loads(completed.stdout)
    assert report["protocol_version"] == "2025-11-25"
    assert report["statuses"][0] == "working"
    assert report["statuses"][-1] == "completed"
    assert report["result"] == ["counted to 3"]
    wire = report["wire_progress"]
    assert [(p["progress"], p["total"], p["message"]) for p in wire] == [
        (1, 3, "step 1"),
        (2, 3, "step 2"),
        (3, 3, "step 3"),
    ]
    # One token, the tools/call's, after the handle came and before the task ended.
    assert len({p["token"] for p in wire}) == 1
    assert {p["phase"] for p in wire} == {"running"}
