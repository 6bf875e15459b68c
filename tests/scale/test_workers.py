"""``trimcp run --transport http --workers N``: N processes on one port, reload, stop.

The supervisor runs as a child process on a free loopback port, with a real Redis store;
the test talks to it over HTTP with trimcp's client (one TCP connection per session, so
the kernel spreads them over the workers' ``SO_REUSEPORT`` sockets).
"""

from __future__ import annotations

import os
import queue
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

import pytest
import trio

import trimcp
from tests.scale.peers import REPLICA_APP, ROOT, RedisServer

LINE_TIMEOUT = 60.0
SESSIONS = 20  # each worker is missed by 20 connections with probability 2**-19


class Supervisor:
    """``trimcp run APP --transport http --workers 2 --store STORE_URL`` (port 0 unless
    ``flags`` give one), its stderr read line by line."""

    def __init__(
        self,
        store_url: str,
        app: Path = REPLICA_APP,
        flags: Sequence[str] = ("--port", "0"),
        env: Mapping[str, str] | None = None,
    ) -> None:
        self.process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "trimcp",
                "run",
                str(app),
                "--transport",
                "http",
                *flags,
                "--workers",
                "2",
                "--store",
                store_url,
            ],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, **(env or {}), "PYTHONPATH": str(ROOT)},
        )
        self.lines: queue.Queue[str] = queue.Queue()
        self.seen: list[str] = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.process.stderr is not None
        for line in self.process.stderr:
            self.lines.put(line.rstrip("\n"))
        self.lines.put("")  # EOF

    def wait_for(self, text: str) -> str:
        """The next stderr line holding ``text`` (bounded wait)."""
        while True:
            line = self.lines.get(timeout=LINE_TIMEOUT)
            self.seen.append(line)
            if text in line:
                return line
            assert line or self.process.poll() is None, "\n".join(self.seen)

    def wait_for_each(self, *texts: str) -> dict[str, str]:
        """For each of ``texts``, the next stderr line holding it, in whatever order the
        lines come (those of two workers may interleave); bounded wait."""
        found: dict[str, str] = {}
        while len(found) < len(texts):
            line = self.lines.get(timeout=LINE_TIMEOUT)
            self.seen.append(line)
            found.update((text, line) for text in texts if text in line and text not in found)
            assert line or self.process.poll() is None, "\n".join(self.seen)
        return found


@pytest.fixture
def supervisor(redis_server: RedisServer) -> Iterator[Supervisor]:
    running = Supervisor(redis_server.url)
    try:
        yield running
    finally:
        if running.process.poll() is None:
            running.process.kill()
            running.process.wait(30)
        assert running.process.stderr is not None
        running.process.stderr.close()


async def pids_serving(url: str) -> set[str]:
    pids: set[str] = set()
    for _ in range(SESSIONS):
        async with trimcp.connect_http(url) as client:
            result = await client.call_tool("whoami", {})
            pids.add(result.content[0].text)  # type: ignore[union-attr]
    return pids


async def test_workers_share_a_port_reload_and_stop(supervisor: Supervisor) -> None:
    line = await trio.to_thread.run_sync(supervisor.wait_for, "with 2 workers")
    url = line.split(" at ", 1)[1].split(" ", 1)[0]
    first = await pids_serving(url)
    assert len(first) == 2  # both workers answer on the one port

    mark = len(supervisor.seen)
    supervisor.process.send_signal(signal.SIGHUP)
    await trio.to_thread.run_sync(supervisor.wait_for, "reloaded")
    # The new workers have new numbers (before: 1 and 2 again, like the ones stopping).
    started = {
        line.split("]", 1)[0] + "]"
        for line in supervisor.seen[mark:]
        if line.startswith("[worker ") and "serving" in line
    }
    assert started == {"[worker 3]", "[worker 4]"}, supervisor.seen
    second = await pids_serving(url)
    assert len(second) == 2
    assert not second & first  # the old workers stopped, new ones serve

    supervisor.process.send_signal(signal.SIGTERM)
    await trio.to_thread.run_sync(supervisor.wait_for, "stopped")
    code = await trio.to_thread.run_sync(supervisor.process.wait, 30)
    assert code == 0
    for pid in first | second:  # no worker outlives the supervisor
        with pytest.raises(ProcessLookupError):
            os.kill(int(pid), 0)


def test_workers_need_the_http_transport() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "trimcp", "run", str(REPLICA_APP), "--workers", "2"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert done.returncode == 2
    assert "--workers apply to the http transport only" in done.stderr
