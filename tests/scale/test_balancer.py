"""Replicas behind nginx (round-robin, no stickiness) sharing state in a real Redis.

Three ``trimcp run tests/scale/replica_app.py --store redis://...`` processes on loopback
ports, nginx in front with examples/deploy/nginx-mcp-location.conf. The official SDK
client runs in a subprocess (it imports nothing from trimcp).
"""

from __future__ import annotations

import http.client
import json
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

from tests.scale.peers import Cluster, cluster_fixture

HERE = Path(__file__).resolve().parent
CLIENT_TIMEOUT = 180


cluster = cluster_fixture()


def run_sdk_client(cluster: Cluster, *args: str) -> dict[str, object]:
    done = subprocess.run(
        [sys.executable, str(HERE / "sdk_balanced_client.py"), cluster.nginx.url, *args],
        capture_output=True,
        text=True,
        timeout=CLIENT_TIMEOUT,
        check=False,
    )
    report: dict[str, object] = json.loads(done.stdout or "{}")
    replicas = "\n".join(f"--- replica {r.port}:\n{r.output()[-2000:]}" for r in cluster.replicas)
    assert done.returncode == 0, f"{report.get('error')}\n{done.stderr[-3000:]}\n{replicas}"
    return report


def test_sdk_session_is_served_by_every_replica(cluster: Cluster) -> None:
    report = run_sdk_client(cluster, "--calls", "12")
    assert report["protocol_version"] == "2025-11-25"
    assert report["tools"] == ["echo", "job", "slow", "whoami"]
    pids = report["pids"]
    assert isinstance(pids, list)
    assert len(pids) == 12
    # Round-robin without stickiness: one session's calls were answered by several replicas.
    replica_pids = {str(r.process.pid) for r in cluster.replicas}
    assert set(pids) <= replica_pids
    assert len(set(pids)) >= 2
    assert report["slow"] == "done p"
    assert report["progress"] == [1.0, 2.0, 3.0]
    assert report["resources"] == ["scale://info"]
    assert report["read"] == "replicated"
    assert report["prompts"] == ["greet"]
    assert report["prompt"] == "Hello, Ann!"


def post(
    port: int, message: Mapping[str, object], session: str | None = None
) -> tuple[int, str, str]:
    """One POST straight to a replica: (status, session id header, body text)."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    headers = {
        "content-type": "application/json",
        "accept": "application/json, text/event-stream",
        "mcp-protocol-version": "2025-11-25",
    }
    if session is not None:
        headers["mcp-session-id"] = session
    try:
        connection.request("POST", "/mcp", json.dumps(message), headers)
        response = connection.getresponse()
        return response.status, response.getheader("mcp-session-id") or "", response.read().decode()
    finally:
        connection.close()


def delete(port: int, session: str) -> int:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        connection.request(
            "DELETE",
            "/mcp",
            headers={"mcp-session-id": session, "mcp-protocol-version": "2025-11-25"},
        )
        return connection.getresponse().status
    finally:
        connection.close()


INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 0,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "raw", "version": "1"},
    },
}
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}


def whoami(port: int, session: str, request_id: int) -> tuple[int, str]:
    status, _, body = post(
        port,
        {
            "jsonrpc": "2.0",
            "id": request_id,
            "method": "tools/call",
            "params": {"name": "whoami", "arguments": {}},
        },
        session,
    )
    return status, body


def test_a_session_moves_between_replicas_and_ends_on_all(cluster: Cluster) -> None:
    a, b, c = (r.port for r in cluster.replicas)
    status, session, _ = post(a, INITIALIZE)
    assert status == 200
    assert session
    assert post(b, INITIALIZED, session)[0] == 202
    status, body = whoami(c, session, 1)
    assert status == 200
    assert str(cluster.replicas[2].process.pid) in body
    assert whoami(b, session, 2)[0] == 200  # b holds a copy now
    assert delete(a, session) == 204
    # Ended on a: 404 on b and c from the moment a answered the DELETE (b held a copy it
    # had confirmed a moment ago; it asks the store on every request).
    assert whoami(b, session, 3)[0] == 404
    assert whoami(c, session, 4)[0] == 404
    assert whoami(a, session, 5)[0] == 404


def test_a_held_session_survives_redis_losing_its_data(cluster: Cluster) -> None:
    a, b, c = (r.port for r in cluster.replicas)
    status, session, _ = post(a, INITIALIZE)
    assert status == 200
    assert post(b, INITIALIZED, session)[0] == 202
    done = subprocess.run(
        ["redis-cli", "-p", str(cluster.redis.port), "FLUSHALL"],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert done.stdout.strip() == "OK", done.stderr
    # Held by b: served, and saved again as b asks the store (on every request), so c
    # can take it over.
    assert whoami(b, session, 1)[0] == 200
    assert whoami(c, session, 2)[0] == 200
