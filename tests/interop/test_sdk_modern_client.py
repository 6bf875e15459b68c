"""Interop: the official SDK's client (PyPI ``mcp`` 2.x) in ``mode="auto"`` negotiates
2026-07-28 with ``examples/everything_server.py`` over stdio and over Streamable HTTP, and
every feature works in that era (tests/peers/sdk_modern_client.py prints the report).
The same holds through trimcp's proxy (``tests/peers/proxy_peer.py``, over stdio and over
Streamable HTTP, in front of the server over stdio): the client sees what it sees direct.

One peer run per transport; each test checks one feature in the SDK's own view of it."""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
PEER = ROOT / "tests" / "peers" / "sdk_modern_client.py"
PROXY = ROOT / "tests" / "peers" / "proxy_peer.py"
SERVER = ROOT / "examples" / "everything_server.py"
TIMEOUT = 150


def run_peer(*args: str) -> dict[str, Any]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT)  # the server child imports this checkout's trimcp
    done = subprocess.run(
        [sys.executable, str(PEER), *args],
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        env=env,
        check=False,
    )
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
    report: dict[str, Any] = json.loads(done.stdout)
    return report


@pytest.fixture(scope="module", params=["stdio", "http", "proxy-stdio", "proxy-http"])
def report(request: pytest.FixtureRequest) -> Iterator[dict[str, Any]]:
    server = [sys.executable, str(SERVER)]
    proxied = request.param.startswith("proxy-")
    transport = request.param.removeprefix("proxy-")
    if transport == "stdio":
        in_front = [sys.executable, str(PROXY), "--"] if proxied else []
        found = run_peer("--", *in_front, *server)
        found["transport"] = "stdio"
        yield found
        return
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    command = (
        [sys.executable, str(PROXY), "--http", "--", *server]
        if proxied
        else [*server, "--transport", "http", "--port", "0"]
    )
    process = subprocess.Popen(
        command,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
    )
    assert process.stdout is not None
    try:
        ready, _, _ = select.select([process.stdout], [], [], 30)
        url = process.stdout.readline().decode().strip() if ready else ""
        assert url.startswith("http://127.0.0.1:"), url
        found = run_peer("--url", url)
        found["transport"] = "http"
        yield found
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=30) == 0
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(timeout=30)
        process.stdout.close()
        if process.stderr is not None:
            process.stderr.close()


def test_auto_mode_negotiates_2026(report: dict[str, Any]) -> None:
    assert report["protocol_version"] == "2026-07-28"
    assert report["server_info"] == {"name": "trimcp-everything-server", "version": "1.0.0"}
    assert report["done"] is True
    assert "test_simple_text" in report["tools"]


def test_tools_progress_and_opted_in_logs(report: dict[str, Any]) -> None:
    calls = report["calls"]
    assert calls["test_simple_text"] == "This is a simple text response for testing."
    assert report["progress"] == [0, 50, 100]
    assert [log["data"] for log in report["logs"]] == [
        "Tool execution started",
        "Tool processing data",
        "Tool execution completed",
    ]


def test_sampling_elicitation_and_roots_through_input_required(report: dict[str, Any]) -> None:
    calls = report["calls"]
    assert calls["test_sampling"] == "LLM response: This is a test response from the client"
    assert '"username": "testuser"' in calls["test_elicitation"]
    assert calls["test_input_required_result_list_roots"] == "Found 1 root(s)"
    assert calls["test_input_required_result_multiple_inputs"] == (
        "Name: sdk; Greeting: This is a test response from the client; Roots: 1"
    )
    assert calls["test_input_required_result_multi_round"] == (
        "Multi-round complete for sdk who likes sdk"
    )
    # Each question reached the client once per round it was asked in.
    assert report["elicitations"] == [
        "Please provide your information",
        "What is your name?",
        "Step 1: What is your name?",
        "Step 2: What is your favorite color?",
    ]
    assert report["roots_requests"] == 2


def test_resources_templates_prompts_and_completion(report: dict[str, Any]) -> None:
    # The conformance fixtures, and the Skills fixture's files (examples/skills).
    assert [uri for uri in report["resources"] if not uri.startswith("skill://")] == [
        "test://static-binary",
        "test://static-text",
        "test://watched-resource",
    ]
    assert any(uri.startswith("skill://release-notes/") for uri in report["resources"])
    assert report["templates"] == ["test://template/{id}/data"]
    assert report["read"][0]["text"] == "This is the content of the static text resource."
    assert json.loads(report["templated"][0]["text"])["id"] == "42"
    assert "test_prompt_with_arguments" in report["prompts"]
    assert report["prompt"][0]["content"]["text"] == "Prompt with arguments: arg1='a', arg2='b'"
    assert report["prompt_after_input"][0]["content"]["text"] == "Prompt with context: sdk"
    assert report["completion"] == ["test", "testing", "tested"]


def test_listen_sees_a_tools_list_change(report: dict[str, Any]) -> None:
    assert report["listen_honored"] == {"toolsListChanged": True}
    assert report["listen_event"] == "ToolsListChanged"


def test_parameters_mirrored_into_headers(report: dict[str, Any]) -> None:
    """HTTP only (stdio has no headers): the SDK mirrors x-mcp-header arguments into
    Mcp-Param-* (Base64 for the non-ASCII one) and trimcp checks them against the body."""
    if report["transport"] == "http":
        assert report["calls"]["test_custom_headers"] == "region=eu-west\u00e9 priority=7 query="
    else:
        assert "test_custom_headers" not in report["calls"]
