"""No secret on a command line: ``trimcp run --workers N`` hands its workers the store URL
(and every other setting) in their environment, never in their argv (issue 30, defect 5).

A real redis-server that requires a password, a real supervisor started with
``--store redis://:PASSWORD@...``, and each of its real worker processes: their
``/proc/PID/cmdline`` (what ``ps`` shows every user of the machine) must not hold the
password, while the workers still serve through that store (a call succeeds, and the
session it made is in Redis, which the workers could reach only with the password).
"""

from __future__ import annotations

import os
import secrets
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import attrs
import pytest
import trio

import trimcp
from tests.cli.support import APP, cli, read_line, reap, stop
from tests.scale.peers import REPLICA_APP, ROOT, RedisServer
from trimcp.cli.workers import supervised_settings, worker_argv, worker_environment
from trimcp.server.serving import ServeSettings
from trimcp.stores.redis_client import RedisClient, RedisReplyError
from trimcp.types import TextContent

PASSWORD = "s3cret-" + secrets.token_hex(8)


@pytest.fixture
def locked_redis(scale_tools: dict[str, str], tmp_path: Path) -> Iterator[RedisServer]:
    server = RedisServer(scale_tools["SCALE_REDIS"], tmp_path, password=PASSWORD)
    server.start()
    try:
        yield server
    finally:
        server.stop()


def children(pid: int) -> list[int]:
    """The processes whose parent is ``pid`` (from /proc)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            status = (entry / "status").read_text()
        except OSError:  # gone meanwhile
            continue
        for line in status.splitlines():
            if line.startswith("PPid:") and int(line.split()[1]) == pid:
                found.append(int(entry.name))
    return found


def command_line(pid: int) -> str:
    return (Path("/proc") / str(pid) / "cmdline").read_bytes().replace(b"\0", b" ").decode()


@pytest.fixture
def supervisor(locked_redis: RedisServer) -> Iterator[subprocess.Popen[str]]:
    """``trimcp run --workers 2 --store redis://:PASSWORD@...`` (stderr piped)."""
    running = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "trimcp",
            "run",
            str(REPLICA_APP),
            "--transport",
            "http",
            "--port",
            "0",
            "--workers",
            "2",
            "--store",
            locked_redis.url,
        ],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    try:
        yield running
    finally:
        reap(running)


async def test_workers_get_the_store_password_in_their_environment_only(
    locked_redis: RedisServer, supervisor: subprocess.Popen[str]
) -> None:
    assert PASSWORD in locked_redis.url
    seen: list[str] = []
    while True:  # the supervisor's line naming the URL comes once both workers listen
        assert supervisor.stderr is not None
        line = await trio.to_thread.run_sync(read_line, supervisor.stderr)
        assert line, "\n".join(seen)
        seen.append(line)
        if "with 2 workers" in line:
            break
    url = line.split(" at ", 1)[1].split(" ", 1)[0]
    workers = children(supervisor.pid)
    assert len(workers) == 2, workers
    for pid in workers:
        shown = command_line(pid)
        assert "trimcp" in shown  # it is a worker
        assert PASSWORD not in shown, shown
        assert "redis://" not in shown, shown
    # They still work, through the store the password opens.
    with trio.fail_after(60):
        async with trimcp.connect_http(url) as client:
            answer = await client.call_tool("whoami", {})
    block = answer.content[0]
    assert isinstance(block, TextContent)
    assert int(block.text) in workers  # one of them answered
    locked = RedisClient(locked_redis.url.replace(f":{PASSWORD}@", ""))
    try:
        with pytest.raises(RedisReplyError, match="NOAUTH"):
            await locked.execute("DBSIZE")
    finally:
        await locked.aclose()
    opened = RedisClient(locked_redis.url)
    try:
        assert int(str(await opened.execute("DBSIZE"))) > 0  # the session the call made
    finally:
        await opened.aclose()
    assert not any(PASSWORD in line for line in seen)  # nor in what the workers said
    supervisor.send_signal(signal.SIGTERM)
    assert await trio.to_thread.run_sync(stop, supervisor) == 0


def test_every_setting_reaches_the_worker_and_none_is_on_its_command_line() -> None:
    settings = ServeSettings(
        transport="http",
        host="127.0.0.2",
        path="/p",
        stateless=True,
        json_response=True,
        log_level="info",
        allowed_hosts=("a.example",),
        allowed_origins=("https://o.example",),
        store=f"redis://:{PASSWORD}@redis.example:6380/2",
        auth_issuer=f"https://user:{PASSWORD}@issuer.example",
        auth_resource="https://mcp.example/p",
        auth_scopes=("read", "write"),
        auth_dpop="require",
    )
    env = worker_environment(settings, 4242)
    back = ServeSettings(**supervised_settings(env))
    assert back == attrs.evolve(settings, port=4242, reuse_port=True)
    assert worker_argv("server.py")[1:] == ["-m", "trimcp", "run", "server.py"]


def test_a_bad_worker_settings_variable_is_one_clear_line() -> None:
    done = cli("run", APP, "--check", env={"TRIMCP_WORKER_SETTINGS": '{"port": 1, "nope": 2}'})
    assert done.returncode != 0
    assert "TRIMCP_WORKER_SETTINGS does not hold a worker's settings" in done.stderr
    assert "Traceback" not in done.stderr
