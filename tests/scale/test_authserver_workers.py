"""trimcp's own authorization server under ``trimcp run --workers 2 --store redis://``.

A login is several requests (registration, the consent page and its form, the upstream's
callback, the token); each is sent here over a new connection, so the kernel hands each
to either worker. Every login completes, among them logins whose registration one worker
served and whose callback the other did (their log lines say which), and the token works
for an MCP call on either worker. The supervisor hands its workers one sealing secret (in
their environment) and says so. Without a shared store, ``--workers`` refuses such a
server, naming the flag to add.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import trio

from tests.authserver.fake_github import running_fake_github
from tests.authserver.harness import call_whoami, free_port
from tests.authserver.spec_client import TIMEOUT, Browser, OneConnectionEach, SpecClient
from tests.scale.peers import ROOT, RedisServer
from tests.scale.test_workers import Supervisor

APP = Path(__file__).with_name("authserver_app.py")
#: Logins tried at most until one spans both workers (each does with probability 1/2).
ATTEMPTS = 30


def worker_of(line: str) -> str:
    assert line.startswith("[worker "), line
    return line.split("]", 1)[0]


async def test_a_login_started_on_one_worker_completes_on_another(
    redis_server: RedisServer,
) -> None:
    with trio.fail_after(300):
        async with running_fake_github() as github:
            port = free_port()
            env = {"FAKE_GITHUB": github.base, "TRIMCP_AUTHSERVER_SECRET": ""}
            flags = ("--port", str(port), "--log-level", "info")
            supervisor = Supervisor(redis_server.url, APP, flags, env)
            try:
                await trio.to_thread.run_sync(supervisor.wait_for, "TRIMCP_AUTHSERVER_SECRET")
                await trio.to_thread.run_sync(supervisor.wait_for, "with 2 workers")
                url = f"http://127.0.0.1:{port}/mcp"
                client = SpecClient(url, OneConnectionEach(timeout=TIMEOUT))
                crossed, pids = [], set()
                try:
                    await client.discover()
                    for attempt in range(ATTEMPTS):
                        browser = Browser(OneConnectionEach(timeout=TIMEOUT))
                        try:
                            client_id, tokens = await client.login(browser, f"user{attempt}")
                        finally:
                            await browser.aclose()
                        who = await call_whoami(url, f"Bearer {tokens['access_token']}")
                        assert who["login"] == f"user{attempt}"
                        pids.add(who["pid"])
                        steps = await trio.to_thread.run_sync(
                            supervisor.wait_for_each,
                            f"registered client {client_id}",
                            f"logged in for client {client_id}",
                        )
                        if len({worker_of(line) for line in steps.values()}) == 2:
                            crossed.append(client_id)
                        if crossed and len(pids) == 2:
                            break
                finally:
                    await client.aclose()
                assert crossed, "no login spanned both workers"
                assert len(pids) == 2  # the tokens worked on both workers
                supervisor.process.send_signal(signal.SIGTERM)
                await trio.to_thread.run_sync(supervisor.wait_for, "stopped")
            finally:
                if supervisor.process.poll() is None:
                    supervisor.process.kill()
                await trio.to_thread.run_sync(supervisor.process.wait, 30)
                assert supervisor.process.stderr is not None
                supervisor.process.stderr.close()


def test_workers_without_a_shared_store_are_refused() -> None:
    done = subprocess.run(
        [
            *(sys.executable, "-m", "trimcp", "run", str(APP), "--transport", "http"),
            *("--port", str(free_port()), "--workers", "2"),
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env={**os.environ, "PYTHONPATH": str(ROOT), "FAKE_GITHUB": "http://127.0.0.1:9"},
    )
    assert done.returncode == 2, done.stderr
    assert "a login started on one worker would fail on another" in done.stderr
    assert "add --store redis://HOST:PORT/DB (or TRIMCP_STORE)" in done.stderr
