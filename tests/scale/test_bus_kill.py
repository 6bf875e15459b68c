"""SIGKILL of replicas (the one holding a session's GET stream among them) while the official
SDK client hears resource updates raised on every replica: once its GET stream is back on
another replica (the SDK resumes it with ``Last-Event-ID``), updates reach it again, each
exactly once.
"""

from __future__ import annotations

import selectors
import subprocess
import sys
from pathlib import Path

from tests.scale.peers import BUS_APP, Cluster, cluster_fixture

HERE = Path(__file__).resolve().parent
LINE_TIMEOUT = 120.0


class Client:
    """The SDK client subprocess, driven one line at a time (every read bounded)."""

    def __init__(self, url: str) -> None:
        self.process = subprocess.Popen(
            [sys.executable, str(HERE / "sdk_bus_kill_client.py"), url],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )

    def line(self) -> str:
        assert self.process.stdout is not None
        with selectors.DefaultSelector() as selector:
            selector.register(self.process.stdout, selectors.EVENT_READ)
            if not selector.select(LINE_TIMEOUT):
                raise AssertionError(f"the SDK client said nothing for {LINE_TIMEOUT}s")
        return self.process.stdout.readline().strip()

    def command(self, text: str) -> str:
        assert self.process.stdin is not None
        self.process.stdin.write(text + "\n")
        self.process.stdin.flush()
        return self.line()

    def close(self) -> None:
        if self.process.poll() is None:
            try:
                assert self.process.stdin is not None
                self.process.stdin.write("quit\n")
                self.process.stdin.flush()
                self.process.wait(20)
            except (OSError, subprocess.TimeoutExpired):
                self.process.kill()
                self.process.wait(20)
        for pipe in (self.process.stdin, self.process.stdout):
            if pipe is not None:
                pipe.close()


cluster = cluster_fixture(app=BUS_APP, marks_variable="BUS_MARKS", scope="function")


def test_updates_reach_the_client_again_after_each_replica_is_killed(
    cluster: Cluster,
) -> None:
    replicas, nginx = cluster.replicas, cluster.nginx
    client = Client(nginx.url)
    outcomes: list[str] = []
    try:
        assert client.line() == "ready"
        outcomes.append(client.command("probe"))
        for index in range(len(replicas)):
            replicas[index].kill()  # one of them holds the GET stream
            replicas[index] = replicas[index].respawn()
            outcomes.append(client.command("probe"))
    finally:
        client.close()
    print(outcomes)  # attempts: touches until the GET stream was back (shown with -s)
    for outcome in outcomes:
        word, attempts, steady, duplicates = outcome.split(" ")[:4]
        assert word == "ok", outcome
        assert steady == "5/5", outcomes
        assert duplicates == "0", outcomes
        assert int(attempts) >= 1
