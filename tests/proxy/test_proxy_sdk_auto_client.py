"""The official SDK's client (PyPI ``mcp`` 2.x) in ``mode="auto"`` through the proxy, over
stdio and over Streamable HTTP: it negotiates 2026-07-28 with the proxy, which passes its
requests on as they came to trimcp's everything server (``examples/everything_server.py``,
which speaks 2026 too) through its shared backend connection, ``input_required`` rounds
included (tests/peers/sdk_auto_client_basic.py prints the report)."""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
PEER = ROOT / "tests" / "peers" / "sdk_auto_client_basic.py"
PROXY = ROOT / "tests" / "peers" / "proxy_peer.py"
SERVER = ROOT / "examples" / "everything_server.py"
ENV = dict(os.environ, PYTHONPATH=str(ROOT))  # the children import this checkout


def run_peer(*args: str) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, str(PEER), *args],
        capture_output=True,
        text=True,
        timeout=150,
        env=ENV,
        check=False,
    )
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
    report: dict[str, Any] = json.loads(done.stdout)
    return report


def over_stdio() -> dict[str, Any]:
    return run_peer("--", sys.executable, str(PROXY), "--", sys.executable, str(SERVER))


def over_http() -> dict[str, Any]:
    process = subprocess.Popen(
        [sys.executable, str(PROXY), "--http", "--", sys.executable, str(SERVER)],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=ENV,
    )
    assert process.stdout is not None
    try:
        ready, _, _ = select.select([process.stdout], [], [], 30)
        url = process.stdout.readline().decode().strip() if ready else ""
        assert url.startswith("http://127.0.0.1:"), url
        report = run_peer("--url", url)
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=30) == 0
        return report
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(timeout=30)
        process.stdout.close()


@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_the_sdk_client_in_auto_mode_speaks_2026_through_the_proxy(transport: str) -> None:
    report = over_stdio() if transport == "stdio" else over_http()
    assert report["protocol_version"] == "2026-07-28"
    assert report["server_info"]["name"] == "trimcp-everything-server"
    assert {"test_simple_text", "test_tool_with_progress"} <= set(report["tools"])
    assert report["simple_text"] == "This is a simple text response for testing."
    assert report["with_progress"] == "Tool with progress executed successfully"
    assert report["progress"] == [0, 50, 100]
    assert "sampled" in report["sampling"]
    assert report["resource"] == ["This is the content of the static text resource."]
    assert report["prompt"] == ["This is a simple prompt for testing."]
    assert report["done"] is True
