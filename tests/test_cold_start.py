"""Guards of a stdio server's cold start (issue 15; measured by benchmarks/cold_start.py).

Timings never go in tests, so these check what the time is made of instead, in a fresh
process: a ``trimcp.Server`` with a tool, served over stdio, answers ``initialize``
without importing the HTTP, WebSocket, client, CLI, proxy, auth or Redis stacks, nor the
wire types of features it never uses (sampling, elicitation, roots, completion,
subscriptions); and a second start compiles none of the generated code (attrs methods,
cattrs hooks: trimcp/_attrs_cache.py).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]

SERVER = """
import atexit, json, sys
from trimcp import Server
import trimcp._attrs_cache as cache

app = Server("cold")


@app.tool()
def echo(text: str) -> str:
    return text


def report():
    loaded = sorted(
        m for m in sys.modules if any(m == n or m.startswith(n + ".") for n in NAMES)
    )
    sys.stderr.write("REPORT " + json.dumps({"loaded": loaded, **cache.stats()}) + "\\n")


NAMES = NAMES_HERE
atexit.register(report)
app.run()
"""

#: Whole stacks a stdio server has no use for (a prefix matches its submodules).
NOT_FOR_STDIO = [
    "h11",
    "hypercorn",
    "trio_websocket",
    "wsproto",
    "redis",
    "hiredis",
    "cryptography",
    "jwt",
    "asyncio",
    "anyio",
    "email",
    "http.client",
    "trimcp.transports.http_server",
    "trimcp.transports.http_client",
    "trimcp.transports.websocket",
    "trimcp.transports.sse_legacy",
    "trimcp.client",
    "trimcp.cli",
    "trimcp.proxy",
    "trimcp.auth.jwt",
    "trimcp.auth.resource",
    "trimcp.stores.redis",
    "trimcp.stores.redis_bus",
    # wire types and framework parts loaded on first use (a server that never asks its
    # client for sampling, elicitation or roots, nor completes, never loads them)
    "trimcp.types.elicitation",
    "trimcp.types.sampling",
    "trimcp.types.roots",
    "trimcp.types.completion",
    "trimcp.types.subscriptions",
    "trimcp.server.elicitation",
]

INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "cold", "version": "1"},
    },
}


def start(tmp_path: Path) -> dict[str, Any]:
    app = tmp_path / "cold_app.py"
    app.write_text(SERVER.replace("NAMES_HERE", repr(NOT_FOR_STDIO)))
    env = {
        **{k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"},
        "PYTHONPATH": str(ROOT),
        "TRIMCP_ATTRS_CACHE": str(tmp_path / "attrs.marshal"),
    }
    done = subprocess.run(
        [sys.executable, str(app)],
        input=json.dumps(INITIALIZE) + "\n",
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    answer = json.loads(done.stdout.splitlines()[0])
    assert answer["result"]["serverInfo"]["name"] == "cold"
    line = next(x for x in done.stderr.splitlines() if x.startswith("REPORT "))
    report: dict[str, Any] = json.loads(line.removeprefix("REPORT "))
    return report


def test_a_stdio_server_loads_only_what_stdio_needs(tmp_path: Path) -> None:
    report = start(tmp_path)
    assert report["loaded"] == []


def test_a_second_start_compiles_no_generated_code(tmp_path: Path) -> None:
    first = start(tmp_path)
    assert first["misses"] > 100
    second = start(tmp_path)
    assert second["misses"] == 0
    assert second["hits"] == first["hits"] + first["misses"]
