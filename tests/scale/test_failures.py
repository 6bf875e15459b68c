"""Faults with replicas behind nginx: replicas killed mid-call, Redis restarted mid-run.

The official SDK client (subprocess) runs 1,000 progress-reporting calls (20 at a time) in
one 2025-11-25 session while the test SIGKILLs replicas 12 times at random moments and
starts them again (a typical run: ~40 s, ~960 answered, ~35 cut by a kill, a few refused).
Every call must end exactly once, with its answer or an error, never a hang or a
duplicate; a call that ends with its answer has seen each of its progress events exactly
once; a call cut by a kill has seen the events stored before the kill at most once each,
in order, and then ended with the error of the replica that resumed its stream, naming
the dead one (never the SDK's "reconnection attempts were exhausted"). A call refused
before its stream began (nginx answers 502 when the replica died with the POST in hand;
the SDK says "Server returned an error response") saw no event.
"""

from __future__ import annotations

import json
import os
import random
import re
import subprocess
import sys
import time
from pathlib import Path

from tests.scale.peers import Cluster, cluster_fixture

HERE = Path(__file__).resolve().parent
CALLS = 1000
LANES = 20
KILLS = 12
CLIENT_TIMEOUT = 300
#: How a call cut by its replica's death ends (see trimcp.stores.redis_events).
CUT = re.compile(
    r"MCPError: replica [0-9a-f]{12} that was running this request stopped \(.+\); the "
    r"request may or may not have taken effect; retry it if it is safe to"
)
#: How the SDK reports a POST refused with an HTTP error (nginx's 502, no JSON-RPC body).
REFUSED = "MCPError: Server returned an error response"


cluster = cluster_fixture(scope="function")


def start_client(url: str) -> subprocess.Popen[str]:
    """The SDK client, once its session is initialized (faults start after that: a
    client whose handshake fails has no session to resume)."""
    client = subprocess.Popen(
        [
            sys.executable,
            str(HERE / "sdk_kill_client.py"),
            url,
            "--calls",
            str(CALLS),
            "--lanes",
            str(LANES),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert client.stderr is not None
    seen = []
    while (line := client.stderr.readline()) and line.strip() != "ready":
        seen.append(line)  # (EOF when it exited; its own limit bounds the wait)
    assert line.strip() == "ready", "".join(seen)
    return client


def finish(client: subprocess.Popen[str]) -> list[dict[str, object]]:
    out, err = client.communicate(timeout=CLIENT_TIMEOUT)
    report = json.loads(out or "{}")
    assert client.returncode == 0, f"{report.get('error')}\n{err[-3000:]}"
    calls: list[dict[str, object]] = report["calls"]
    return calls


def check_every_call_ended_once(calls: list[dict[str, object]]) -> dict[str, int]:
    """Counts of how the calls ended: answered, cut (the dead replica named), refused
    (before any event), other."""
    tags = sorted(str(c["tag"]) for c in calls)
    assert len(tags) == CALLS
    assert len(set(tags)) == CALLS  # no call twice
    ends = dict.fromkeys(("answered", "cut", "refused", "other"), 0)
    for call in calls:
        assert call["ends"] == 1
        progress = call["progress"]
        assert isinstance(progress, list)
        assert progress == sorted(set(progress)), f"an event twice or out of order: {call}"
        if "result" in call:
            assert "error" not in call
            assert call["result"] == f"done {call['tag']}"
            assert progress == [1.0, 2.0, 3.0, 4.0, 5.0, 6.0], call  # each event once
            ends["answered"] += 1
            continue
        error = call["error"]
        assert isinstance(error, str)
        assert error, call
        print("failed:", call)
        if CUT.fullmatch(error):
            ends["cut"] += 1
        elif error == REFUSED and not progress:
            ends["refused"] += 1
        else:
            ends["other"] += 1
    return ends


def test_replicas_killed_mid_call(cluster: Cluster) -> None:
    seed = int(os.environ.get("TRIMCP_KILL_SEED", time.time()))
    rng = random.Random(seed)
    client = start_client(cluster.nginx.url)
    kills = 0
    try:
        while kills < KILLS and client.poll() is None:
            time.sleep(rng.uniform(0.3, 1.5))  # a random moment: nothing to wait for
            victim = rng.randrange(len(cluster.replicas))
            cluster.replicas[victim].kill()
            kills += 1
            cluster.replicas[victim] = cluster.replicas[victim].respawn()
        calls = finish(client)
    finally:
        if client.poll() is None:
            client.kill()
            client.communicate(timeout=30)
    ends = check_every_call_ended_once(calls)
    print(f"seed {seed}: {kills} kills, {ends}")
    assert ends["answered"] > 0
    # Every call a kill cut ended with the error naming the dead replica, or was refused
    # before its stream began: none ended silently ("reconnection attempts exhausted").
    assert ends["other"] == 0, f"seed {seed}: {ends}"


def test_redis_restarted_mid_run(cluster: Cluster) -> None:
    client = start_client(cluster.nginx.url)
    try:
        time.sleep(0.5)  # calls under way: nothing to wait for
        cluster.redis.stop()
        time.sleep(1.0)
        cluster.redis.start()  # empty: what was stored is gone
        calls = finish(client)
    finally:
        if client.poll() is None:
            client.kill()
            client.communicate(timeout=30)
    ends = check_every_call_ended_once(calls)
    print(f"redis restarted: {ends}")
    assert ends["answered"] > 0
