"""The official SDK client's 2026-07-28 ``subscriptions/listen`` stream through nginx.

Three ``trimcp run tests/scale/bus_app.py --store redis://...`` replicas behind nginx
(round-robin, no stickiness). The SDK client (a subprocess, importing nothing from
trimcp) opens one listen stream (it lands on one replica) and, round after round, raises
a resource update and a tools list change with calls the balancer spreads over every
replica: the stream hears each, once, whichever replica raised it.
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
ROUNDS = 6


class Cluster:
    def __init__(self, replicas: list[Replica], nginx: Nginx) -> None:
        self.replicas = replicas
        self.nginx = nginx

    def logs(self) -> str:
        return "\n".join(f"--- replica {r.port}:\n{r.output()[-2000:]}" for r in self.replicas)


@pytest.fixture(scope="module")
def cluster(
    scale_tools: dict[str, str],
    redis_server: RedisServer,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Cluster]:
    marks = tmp_path_factory.mktemp("marks")
    replicas: list[Replica] = []
    nginx: Nginx | None = None
    try:
        replicas = [
            Replica(redis_server.url, app=HERE / "bus_app.py", env={"BUS_MARKS": str(marks)})
            for _ in range(3)
        ]
        nginx = Nginx(
            scale_tools["SCALE_NGINX"], tmp_path_factory.mktemp("nginx"), [r.port for r in replicas]
        )
        yield Cluster(replicas, nginx)
    finally:
        if nginx is not None:
            nginx.stop()
        for replica in replicas:
            replica.stop()


def test_the_sdk_listen_stream_hears_changes_raised_on_every_replica(cluster: Cluster) -> None:
    done = subprocess.run(
        [
            sys.executable,
            str(HERE / "sdk_listen_client.py"),
            cluster.nginx.url,
            "--rounds",
            str(ROUNDS),
        ],
        capture_output=True,
        text=True,
        timeout=CLIENT_TIMEOUT,
        check=False,
    )
    report = json.loads(done.stdout or "{}")
    assert done.returncode == 0, f"{report.get('error')}\n{done.stderr[-3000:]}\n{cluster.logs()}"
    assert report["protocol_version"] == "2026-07-28"
    uris = [f"bus://{n}" for n in range(ROUNDS)]
    assert report["honored"] == {"tools": True, "resources": uris}
    rounds = report["rounds"]
    assert [r["updated"] for r in rounds] == [True] * ROUNDS, rounds
    assert [r["list_changed"] for r in rounds] == [True] * ROUNDS, rounds
    assert report["updates"] == dict.fromkeys(uris, 1)  # each heard once
    assert report["list_changes"] == ROUNDS
    # The calls went round the replicas: the one stream heard changes raised on each.
    pids = {str(r.process.pid) for r in cluster.replicas}
    raised = {r["touched_on"] for r in rounds} | {r["grown_on"] for r in rounds}
    assert raised == pids
