"""What crosses replicas, through nginx (round-robin, no stickiness) and a real Redis.

Three ``trimcp run tests/scale/bus_app.py --store redis://...`` processes behind nginx; the
official SDK client (a subprocess, importing nothing from trimcp) in one 2025-11-25
session: its answers to elicitation and sampling requests, and its cancels, are POSTed
through the balancer and reach the replica waiting for them; resource updates and list
changes raised on any replica reach its GET stream, each once.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.scale.peers import BUS_APP, Cluster, cluster_fixture

HERE = Path(__file__).resolve().parent
CLIENT_TIMEOUT = 240
ROUNDS = 6


cluster = cluster_fixture(app=BUS_APP, marks_variable="BUS_MARKS")


@pytest.fixture(scope="module")
def report(cluster: Cluster) -> dict[str, object]:
    done = subprocess.run(
        [
            sys.executable,
            str(HERE / "sdk_bus_client.py"),
            cluster.nginx.url,
            "--rounds",
            str(ROUNDS),
        ],
        capture_output=True,
        text=True,
        timeout=CLIENT_TIMEOUT,
        check=False,
    )
    result: dict[str, object] = json.loads(done.stdout or "{}")
    assert done.returncode == 0, f"{result.get('error')}\n{done.stderr[-3000:]}\n{cluster.logs()}"
    return result


def _pids(values: object) -> set[str]:
    assert isinstance(values, list)
    return {str(v).rsplit(" ", 1)[-1] for v in values}


def test_elicitation_and_sampling_answers_reach_the_replica_that_asked(
    cluster: Cluster, report: dict[str, object]
) -> None:
    assert report["protocol_version"] == "2025-11-25"
    asked, summarized = report["asked"], report["summarized"]
    assert isinstance(asked, list)
    assert isinstance(summarized, list)
    assert [a.rsplit(" ", 1)[0] for a in asked] == ["hello Ann"] * ROUNDS
    assert [s.rsplit(" ", 1)[0] for s in summarized] == ["sdk-model"] * ROUNDS
    assert report["elicited"] == ROUNDS
    assert report["sampled"] == ROUNDS
    # The calls ran on several replicas: with three behind round-robin, most answers were
    # POSTed to a replica other than the one waiting (relayed through the bus).
    replica_pids = {str(r.process.pid) for r in cluster.replicas}
    assert _pids(asked) | _pids(summarized) <= replica_pids
    assert len(_pids(asked) | _pids(summarized)) >= 2


def test_resource_updates_from_every_replica_reach_the_get_stream_once(
    report: dict[str, object],
) -> None:
    assert report["all_updated"] is True
    assert len(_pids(report["touched_pids"])) >= 2  # raised on several replicas
    # Each once: bus://0 was touched again after its unsubscribe, and not heard again.
    assert report["updated"] == {f"bus://{n}": 1 for n in range(ROUNDS)}
    assert report["errors"] == []


def test_list_changes_from_other_replicas_reach_the_get_stream(
    report: dict[str, object],
) -> None:
    assert report["list_changed"] is True
    assert len(_pids(report["grown_pids"])) >= 2
    notifications = report["notifications"]
    assert isinstance(notifications, dict)
    # Changes close together may merge into one notification, never more than one each.
    assert 1 <= notifications["notifications/tools/list_changed"] <= ROUNDS


def test_a_cancel_reaches_the_replica_running_the_call(
    cluster: Cluster, report: dict[str, object]
) -> None:
    tags = report["cancelled_tags"]
    assert isinstance(tags, list)
    assert len(tags) == ROUNDS
    deadline = time.monotonic() + 10
    missing = list(tags)
    while missing and time.monotonic() < deadline:
        # The replicas write their marks as the cancel lands: poll the files (bounded).
        missing = [t for t in tags if not (cluster.marks / f"{t}.cancelled").exists()]
        time.sleep(0.05)
    assert not missing, f"never cancelled: {missing}\n{cluster.logs()}"
    for tag in tags:
        started = (cluster.marks / f"{tag}.started").read_text()
        assert (cluster.marks / f"{tag}.cancelled").read_text() == started  # same replica


def test_server_requests_from_any_replica_reach_the_get_stream(
    cluster: Cluster, report: dict[str, object]
) -> None:
    # Each roots/list_changed reached some replica; its handler's roots/list went to the
    # replica holding the GET stream, and the answer came back to it through the bus.
    assert report["rooted"] is True
    assert report["roots_requests"] == ROUNDS
    deadline = time.monotonic() + 10
    marks: list[Path] = []
    while len(marks) < ROUNDS and time.monotonic() < deadline:
        marks = list(cluster.marks.glob("roots-*"))
        time.sleep(0.05)  # the replicas write the marks as the answers land: poll (bounded)
    assert len(marks) == ROUNDS, cluster.logs()
    pids = {m.read_text().split()[0] for m in marks}
    assert pids <= {str(r.process.pid) for r in cluster.replicas}
    assert len(pids) >= 2  # handled on several replicas, not only the GET stream's
    assert {m.read_text().split()[1] for m in marks} == {"1"}


def test_the_log_level_set_through_one_replica_holds_on_every_replica(
    report: dict[str, object],
) -> None:
    pids = report["chatter_pids"]
    assert isinstance(pids, list)
    assert len(set(pids)) >= 2  # the calls ran on several replicas
    # Each call logged at info and at error; the client asked for error and above.
    logs = report["logs"]
    assert isinstance(logs, list)
    assert sorted(logs) == sorted(f"error loud {pid}" for pid in pids)
