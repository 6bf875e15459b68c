"""The two SDK peers work against each other, so interop failures point at trimcp."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def test_sdk_client_drives_sdk_server_and_cancels(tmp_path: Path) -> None:
    log = tmp_path / "peer.log"
    server = [sys.executable, str(HERE / "sdk_stdio_server.py")]
    proc = subprocess.run(
        [sys.executable, str(HERE / "sdk_stdio_client.py"), "--", *server],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "TRIMCP_PEER_LOG": str(log)},
        check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    report = json.loads(proc.stdout)
    assert report["server_info"]["name"] == "sdk-stdio-peer"
    assert report["tools"] == ["echo", "add", "slow", "progress"]
    assert report["echo"] == "hello from the SDK client"
    assert report["add"]["structured"] == {"result": 5}
    assert len(report["progress"]["notifications"]) == 3
    assert report["cancel_sent"] is True
    assert report["echo_after_cancel"] == "still alive"
    slow_id = report["cancel"]["request_id"]
    assert report["peer_log"] == [f"started {slow_id}", f"cancelled {slow_id}"]
