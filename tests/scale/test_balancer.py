"""Replicas behind nginx (round-robin, no stickiness) sharing state in a real Redis.

Three ``trimcp run tests/scale/replica_app.py --store redis://...`` processes on loopback
ports, nginx in front with examples/deploy/nginx-mcp-location.conf. The official SDK
client runs in a subprocess (it imports nothing from trimcp).
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.scale.peers import Nginx, RedisServer, Replica

HERE = Path(__file__).resolve().parent
CLIENT_TIMEOUT = 180


class Cluster:
    def __init__(self, redis: RedisServer, replicas: list[Replica], nginx: Nginx) -> None:
        self.redis = redis
        self.replicas = replicas
        self.nginx = nginx


@pytest.fixture(scope="module")
def cluster(
    scale_tools: dict[str, str],
    redis_server: RedisServer,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Cluster]:
    replicas: list[Replica] = []
    nginx: Nginx | None = None
    try:
        replicas = [Replica(redis_server.url) for _ in range(3)]
        nginx = Nginx(
            scale_tools["SCALE_NGINX"], tmp_path_factory.mktemp("nginx"),
            [r.port for r in replicas],
        )
        yield Cluster(redis_server, replicas, nginx)
    finally:
        if nginx is not None:
            nginx.stop()
        for replica in replicas:
            replica.stop()


def run_sdk_client(cluster: Cluster, *args: str) -> dict[str, object]:
    done = subprocess.run(
        [sys.executable, str(HERE / "sdk_balanced_client.py"), cluster.nginx.url, *args],
        capture_output=True, text=True, timeout=CLIENT_TIMEOUT, check=False,
    )
    report: dict[str, object] = json.loads(done.stdout or "{}")
    replicas = "\n".join(f"--- replica {r.port}:\n{r.output()[-2000:]}" for r in cluster.replicas)
    assert done.returncode == 0, f"{report.get('error')}\n{done.stderr[-3000:]}\n{replicas}"
    return report


def test_sdk_session_is_served_by_every_replica(cluster: Cluster) -> None:
    report = run_sdk_client(cluster, "--calls", "12")
    assert report["protocol_version"] == "2025-11-25"
    assert report["tools"] == ["slow", "whoami"]
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
