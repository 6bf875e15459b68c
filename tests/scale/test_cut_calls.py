"""A call whose replica stopped mid-call ends with a clear error naming that replica.

Two ``trimcp run tests/scale/replica_app.py --store redis://...`` replicas behind nginx
(round-robin, no stickiness); the official SDK client (a subprocess, importing nothing
from trimcp) in one 2025-11-25 session runs one long progress-reporting call. Once its
first progress event arrived, the test stops the replica running the call: SIGKILL
(its heartbeat lapses) or SIGTERM (it shuts down, and says so). The client's resume
lands on the other replica, which replays the stored events and then answers the call
with a JSON-RPC error (-32603) naming the stopped replica and why, instead of ending the
stream silently (the SDK would say "reconnection attempts were exhausted"). The call ends
once, each stored progress event arrives once, and the session goes on.
"""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import trio

from tests.scale.peers import Cluster, cluster_fixture, stop
from trimcp import connect_http
from trimcp.errors import McpError
from trimcp.stores import RedisStore

HERE = Path(__file__).resolve().parent
CLIENT_TIMEOUT = 150
CUT = re.compile(
    r"replica ([0-9a-f]{12}) that was running this request stopped \((.+)\); the request "
    r"may or may not have taken effect; retry it if it is safe to"
)


cluster = cluster_fixture(count=2)


def heartbeat(redis_url: str, replica: str) -> bytes | None:
    """What the replica's heartbeat key in Redis holds now."""

    async def read() -> bytes | None:
        store = RedisStore(redis_url)
        try:
            value = await store.client.execute("GET", store.key("replica", replica))
        finally:
            await store.aclose()
        assert value is None or isinstance(value, bytes)
        return value

    return trio.run(read)


def cut_call(cluster: Cluster, tag: str, sig: signal.Signals) -> dict[str, object]:
    """Run the client; stop the replica running its call with ``sig`` at its first
    progress event; restart that replica; return the client's report."""
    client = subprocess.Popen(
        [sys.executable, str(HERE / "sdk_cut_client.py"), cluster.nginx.url, tag],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert client.stderr is not None
        seen = []
        while (line := client.stderr.readline()) and line.strip() != "progress":
            seen.append(line)  # (EOF if it exited; its own limit bounds the wait)
        assert line.strip() == "progress", "".join(seen)
        pid = int((cluster.marks / f"{tag}.pid").read_text())
        victim = next(n for n, r in enumerate(cluster.replicas) if r.process.pid == pid)
        stop(cluster.replicas[victim].process, sig)
        cluster.replicas[victim] = cluster.replicas[victim].respawn()
        out, err = client.communicate(timeout=CLIENT_TIMEOUT)
    finally:
        if client.poll() is None:
            client.kill()
            client.communicate(timeout=30)
    report: dict[str, object] = json.loads(out or "{}")
    assert client.returncode == 0, f"{report.get('failure')}\n{err[-3000:]}"
    return report


def check_cut(report: dict[str, object]) -> tuple[str, str]:
    """The call ended once, with the error; its stored events arrived once each, in
    order. Returns the replica the error names, and why it says it stopped."""
    assert report["ends"] == 1
    assert "result" not in report, report
    error = report["error"]
    assert isinstance(error, str)
    named = CUT.fullmatch(error)
    assert named is not None, report
    assert report["code"] == -32603
    assert report["data"] == {"replica": named[1], "reason": named[2]}
    progress = report["progress"]
    assert isinstance(progress, list)
    assert progress == [float(n) for n in range(1, len(progress) + 1)]  # once each, in order
    assert 1 <= len(progress) < 20
    assert report["pinged"] is True  # the session goes on
    return named[1], named[2]


def test_a_call_whose_replica_was_killed_ends_with_an_error_naming_it(cluster: Cluster) -> None:
    replica, reason = check_cut(cut_call(cluster, "killed", signal.SIGKILL))
    assert reason == "it has not said it is alive for 3 s: killed, crashed, or cut off from Redis"
    assert heartbeat(cluster.redis.url, replica) is None


def test_a_call_whose_replica_shut_down_ends_with_an_error_saying_so(cluster: Cluster) -> None:
    replica, reason = check_cut(cut_call(cluster, "stopped", signal.SIGTERM))
    assert reason == "it shut down"
    assert heartbeat(cluster.redis.url, replica) == b"stopped"


async def test_trimcps_client_gets_the_same_error(cluster: Cluster) -> None:
    started = trio.Event()
    progress: list[float] = []

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        progress.append(value)
        started.set()

    async def cut_when_started() -> None:
        await started.wait()
        pid = int((cluster.marks / "own-client.pid").read_text())
        victim = next(n for n, r in enumerate(cluster.replicas) if r.process.pid == pid)
        await trio.to_thread.run_sync(stop, cluster.replicas[victim].process, signal.SIGKILL)
        cluster.replicas[victim] = await trio.to_thread.run_sync(cluster.replicas[victim].respawn)

    with trio.fail_after(60):
        async with (
            connect_http(cluster.nginx.url, mode="legacy") as client,
            trio.open_nursery() as nursery,
        ):
            nursery.start_soon(cut_when_started)
            with pytest.raises(McpError) as raised:
                await client.call_tool(
                    "slow",
                    {"tag": "own-client", "steps": 20, "delay": 0.5},
                    on_progress=on_progress,
                )
            assert raised.value.code == -32603
            assert CUT.fullmatch(raised.value.message), raised.value.message
            assert progress == [float(n) for n in range(1, len(progress) + 1)]
            await client.ping()  # the session goes on
