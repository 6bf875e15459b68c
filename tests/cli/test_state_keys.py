"""2026-07-28 ``requestState`` outlives the process that sealed it, over real processes.

``trimcp run --workers 2`` without a store: the supervisor hands every worker, and every
worker a reload starts, one secret (in the environment, never on the command line), so a
retry opens on whichever worker the kernel gives its connection. ``TRIMCP_STATE_SECRET``
keeps states across a restart of a single process; without it, a replica sharing its port
(``--reuse-port``) warns, one process alone does not.

Each retry is a fresh TCP connection (``SO_REUSEPORT`` picks the worker from it, and no
test can choose): the test keeps retrying the same state until both workers have
answered it, so it passes only when the worker that did not seal it opened it too.
"""

from __future__ import annotations

import http.client
import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.cli.support import read_line, stop
from trimcp.protocol import modern

APP = """\
import os
from trimcp import Context, Server

app = Server("keys")


@app.tool()
async def ask(ctx: Context) -> str:
    answer = await ctx.elicit(
        "Your name?", {"type": "object", "properties": {"name": {"type": "string"}}}
    )
    assert answer.data is not None
    return f"{answer.data['name']} {os.getpid()}"
"""
V = "2026-07-28"
SECRET = "TRIMCP_STATE_SECRET"
HTTP = ("--transport", "http", "--port", "0")
#: Fresh connections tried until both workers have answered (each one reaches a given
#: worker with probability 1/2: missing one of two in 60 tries is 2**-59).
TRIES = 60
ANSWER = {"elicitation-1": {"action": "accept", "content": {"name": "Bo"}}}


def ask(port: int, state: str | None = None) -> dict[str, Any]:
    """One ``tools/call ask`` over a fresh connection: the JSON-RPC answer."""
    params: dict[str, Any] = {
        "name": "ask",
        "arguments": {},
        "_meta": {
            modern.META_PROTOCOL_VERSION: V,
            modern.META_CLIENT_CAPABILITIES: {"elicitation": {}},
            modern.META_CLIENT_INFO: {"name": "keys-test", "version": "1"},
        },
    }
    if state is not None:
        params.update(requestState=state, inputResponses=ANSWER)
    headers = {
        "content-type": "application/json",
        "accept": "application/json, text/event-stream",
        **modern.standard_headers("tools/call", params, V),
    }
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        connection.request("POST", "/mcp", json.dumps(body), headers)
        response = connection.getresponse()
        text = response.read().decode()
        kind = response.getheader("content-type") or ""
    finally:
        connection.close()
    if kind.startswith("text/event-stream"):
        text = [line[5:] for line in text.splitlines() if line.startswith("data:")][-1]
    answer: dict[str, Any] = json.loads(text)
    return answer


def first_state(port: int) -> str:
    result = ask(port)["result"]
    assert result["resultType"] == "input_required"
    assert list(result["inputRequests"]) == ["elicitation-1"]
    state: str = result["requestState"]
    return state


def answering_pids(port: int, state: str, *, want: int) -> set[str]:
    """Retry ``state`` over fresh connections until ``want`` processes answered it; every
    retry must succeed."""
    pids: set[str] = set()
    for _ in range(TRIES):
        answer = ask(port, state)
        assert "result" in answer, answer  # e.g. -32602 'sealed with key ..., never held'
        name, pid = answer["result"]["content"][0]["text"].split()
        assert name == "Bo"
        pids.add(pid)
        if len(pids) == want:
            break
    return pids


class Running:
    """A ``trimcp run`` process, its stderr read line by line (every wait bounded)."""

    def __init__(self, tmp_path: Path, *args: str, env: dict[str, str]) -> None:
        target = tmp_path / "keys_app.py"
        target.write_text(APP)
        environ = {k: v for k, v in os.environ.items() if k != SECRET}
        self.process = subprocess.Popen(
            [sys.executable, "-m", "trimcp", "run", str(target), *HTTP, *args],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            env={**environ, **env},
        )
        self.seen: list[str] = []
        self.port_seen = 0

    def wait_for(self, text: str) -> str:
        while True:
            assert self.process.stderr is not None
            line = read_line(self.process.stderr, 60)
            assert line, "\n".join(self.seen)  # exited
            self.seen.append(line)
            if text in line:
                return line

    def port(self, startup: str = "trimcp: serving") -> int:
        found = re.search(r"http://127\.0\.0\.1:(\d+)/mcp", self.wait_for(startup))
        assert found
        self.port_seen = int(found.group(1))
        return self.port_seen

    def stop(self) -> None:
        self.process.send_signal(signal.SIGINT)
        assert stop(self.process, 60) == 0

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()
        assert self.process.stderr is not None
        self.process.stderr.close()


def _environ_of(pid: str) -> dict[str, str]:
    raw = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    pairs = (item.decode().split("=", 1) for item in raw if b"=" in item)
    return dict(pairs)


@pytest.mark.skipif(not Path("/proc/self/environ").exists(), reason="reads /proc")
def test_workers_and_reloaded_workers_open_each_others_states(tmp_path: Path) -> None:
    supervisor = Running(tmp_path, "--workers", "2", env={})
    try:
        port = supervisor.port("with 2 workers")  # once both listen
        assert any(SECRET in line and "warning" in line for line in supervisor.seen)
        state = first_state(port)
        # Both workers open it: the one that sealed it, and the other.
        first = answering_pids(port, state, want=2)
        assert len(first) == 2
        # One secret, in each worker's environment and on no command line.
        (secret,) = {_environ_of(pid)[SECRET] for pid in first}
        for pid in first:
            assert secret not in Path(f"/proc/{pid}/cmdline").read_text()

        supervisor.process.send_signal(signal.SIGHUP)
        supervisor.wait_for("reloaded")
        # A state sealed before the reload opens on the new workers, both of them.
        second = answering_pids(port, state, want=2)
        assert len(second) == 2
        assert not second & first
        supervisor.stop()
    finally:
        supervisor.close()


def test_a_state_secret_keeps_states_across_a_restart(tmp_path: Path) -> None:
    env = {SECRET: "a deployment secret, long enough"}
    before = Running(tmp_path, env=env)
    try:
        state = first_state(before.port())
        before.stop()
        assert not any("warning" in line for line in before.seen)
    finally:
        before.close()
    after = Running(tmp_path, env=env)
    try:
        assert answering_pids(after.port(), state, want=1) == {str(after.process.pid)}
        after.stop()
    finally:
        after.close()


def test_one_process_says_nothing_of_its_random_key(tmp_path: Path) -> None:
    """One process (and so each restart of ``trimcp dev``) loses its states only when it
    stops, as it loses its sessions: nothing to warn of (issue 35)."""
    running = Running(tmp_path, env={})
    try:
        state = first_state(running.port())
        assert answering_pids(running.port_seen, state, want=1)
        running.stop()
        assert running.process.stderr is not None
        said = "\n".join(running.seen) + running.process.stderr.read()
        assert "requestState" not in said
        assert "warning" not in said
    finally:
        running.close()


def test_a_replica_sharing_its_port_with_a_random_key_warns_naming_the_setting(
    tmp_path: Path,
) -> None:
    """``--reuse-port`` (replicas on one port) without a shared secret: another replica
    cannot open this one's states."""
    running = Running(tmp_path, "--reuse-port", env={})
    try:
        running.port()
        line = running.wait_for("warning")
        assert "requestState" in line
        assert f"set {SECRET}" in line
        running.stop()
    finally:
        running.close()


@pytest.mark.parametrize("workers", [(), ("--workers", "2")], ids=["one", "workers"])
def test_a_short_state_secret_is_one_clear_line(tmp_path: Path, workers: tuple[str, ...]) -> None:
    running = Running(tmp_path, *workers, env={SECRET: "too short"})
    try:
        assert stop(running.process, 60) == 1
        assert running.process.stderr is not None
        text = running.process.stderr.read()
        assert f"{SECRET}: a requestState secret needs at least 16 bytes" in text
        assert "Traceback" not in text
    finally:
        running.close()
