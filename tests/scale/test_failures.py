"""Faults with replicas behind nginx: replicas killed mid-call, Redis restarted mid-run.

The official SDK client (subprocess) runs 1,000 progress-reporting calls (20 at a time) in
one 2025-11-25 session while the test SIGKILLs replicas 12 times at random moments and
starts them again (a typical run: ~40 s, ~960 answered, ~35 cut by a kill, a few refused).
Every call must end exactly once, with its answer or an error, never a hang or a
duplicate; a call that ends with its answer has seen each of its progress events exactly
once; a call cut by a kill has seen the events stored before the kill at most once each,
in order, and then ended with the error of the replica that resumed its stream, naming
the dead one. A call refused before its stream began (nginx answers 502 when the replica
died with the POST in hand; the SDK says "Server returned an error response") saw no
event.

The SDK gives up on a call after two resumes in a row fail ("reconnection attempts were
exhausted"): a resume that ends cleanly resets its count, one cut midway counts. A kill
cuts the resumed streams its replica was serving, so a call can end that way only when
three kills landed within its life: one cut its POST stream, two more each cut the
stream it had resumed. The test allows exactly that: a call that ended so with fewer
kills in its life fails it, and so does any resume trimcp answered with an error status
(nginx's access log).
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
#: How the SDK ends a call after two resumes in a row failed (see the module docstring).
EXHAUSTED = "MCPError: SSE stream ended and reconnection attempts were exhausted"
#: Kills a call must have lived through to end EXHAUSTED: its POST stream's, two resumes'.
KILLS_TO_EXHAUST = 3


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


def check_every_call_ended_once(
    calls: list[dict[str, object]], kill_times: list[float] | None = None
) -> dict[str, int]:
    """Counts of how the calls ended: answered, cut (the dead replica named), refused
    (before any event), exhausted (the SDK gave up after kills cut its resumes: allowed
    only for a call that lived through ``KILLS_TO_EXHAUST`` of ``kill_times``), other."""
    tags = sorted(str(c["tag"]) for c in calls)
    assert len(tags) == CALLS
    assert len(set(tags)) == CALLS  # no call twice
    ends = dict.fromkeys(("answered", "cut", "refused", "exhausted", "other"), 0)
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
        elif error == EXHAUSTED and kills_within(call, kill_times or []) >= KILLS_TO_EXHAUST:
            ends["exhausted"] += 1
        else:
            ends["other"] += 1
    return ends


def kills_within(call: dict[str, object], kill_times: list[float]) -> int:
    """How many of ``kill_times`` (wall clock) fell within ``call``'s life, as its client
    timed it (the client and this test share the machine's clock)."""
    started, seconds = call["started_at"], call["seconds"]
    assert isinstance(started, float)
    assert isinstance(seconds, float)
    return sum(1 for t in kill_times if started <= t <= started + seconds)


def refused_resumes(access_log: Path) -> list[str]:
    """nginx's lines for resumes (GETs) answered with anything but 200: trimcp refusing
    a resume (an unknown event id, a budget, no session) shows here, not as a cut."""
    return [
        line
        for line in access_log.read_text().splitlines()
        if line.split()[:2] != ["GET", "200"] and line.startswith("GET ")
    ]


def test_replicas_killed_mid_call(cluster: Cluster) -> None:
    seed = int(os.environ.get("TRIMCP_KILL_SEED", time.time()))
    rng = random.Random(seed)
    client = start_client(cluster.nginx.url)
    kill_times: list[float] = []
    try:
        while len(kill_times) < KILLS and client.poll() is None:
            time.sleep(rng.uniform(0.3, 1.5))  # a random moment: nothing to wait for
            victim = rng.randrange(len(cluster.replicas))
            kill_times.append(time.time())
            cluster.replicas[victim].kill()
            cluster.replicas[victim] = cluster.replicas[victim].respawn()
        calls = finish(client)
    finally:
        if client.poll() is None:
            client.kill()
            client.communicate(timeout=30)
    ends = check_every_call_ended_once(calls, kill_times)
    print(f"seed {seed}: {len(kill_times)} kills, {ends}")
    assert ends["answered"] > 0
    # Every call a kill cut ended with the error naming the dead replica, or was refused
    # before its stream began, or (three kills in its life) its client gave up resuming.
    assert ends["other"] == 0, f"seed {seed}: {ends}"
    assert refused_resumes(cluster.nginx.access_log) == []


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
