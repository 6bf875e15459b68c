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
from pathlib import Path

from tests.scale.peers import BUS_APP, Cluster, cluster_fixture

HERE = Path(__file__).resolve().parent
CLIENT_TIMEOUT = 180
ROUNDS = 6


cluster = cluster_fixture(app=BUS_APP, marks_variable="BUS_MARKS")


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
