"""Trace context round-trips between trimcp and the official SDK (mcp 2.3.0), both ways,
over stdio: the trace id current in the server's handler is the client's."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import trio
from opentelemetry.sdk.trace import TracerProvider

import trimcp
from trimcp.telemetry import ClientTracing

PEERS = str(Path(__file__).with_name("peers.py"))


async def test_trimcp_client_to_sdk_server_continues_the_trace() -> None:
    provider = TracerProvider()
    tracer = provider.get_tracer("test")
    with trio.fail_after(60):
        async with trimcp.connect_stdio(
            [sys.executable, PEERS, "sdk-server"], middleware=[ClientTracing(provider)]
        ) as client:
            with tracer.start_as_current_span("root") as root:
                result = await client.call_tool("trace_id")
    seen: Any = result.content[0]
    assert seen.text == format(root.get_span_context().trace_id, "032x")


def test_sdk_client_to_trimcp_server_continues_the_trace() -> None:
    completed = subprocess.run(
        [sys.executable, PEERS, "sdk-client", "--", sys.executable, PEERS, "trimcp-server"],
        capture_output=True,
        text=True,
        timeout=90,
        check=False,
    )
    assert completed.returncode == 0, completed.stderr
    report = json.loads(completed.stdout.strip().splitlines()[-1])
    assert report["seen"] == report["root"]
    assert report["root"] != "0" * 32
