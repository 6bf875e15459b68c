"""The lifespan is entered exactly once per worker process, however many sessions each
serves (``trimcp run --transport http --workers 2``), and closed once at the stop."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from collections import Counter
from pathlib import Path

import trio

import trimcp
from tests.cli.support import read_line, stop

APP = """\
import os
from contextlib import asynccontextmanager
from trimcp import Context, Server

LOG = {log!r}


@asynccontextmanager
async def lifespan(app):
    with open(LOG, "a") as out:
        out.write(f"entered {{os.getpid()}}\\n")
    try:
        yield os.getpid()
    finally:
        with open(LOG, "a") as out:
            out.write(f"exited {{os.getpid()}}\\n")


app = Server("workers", lifespan=lifespan)


@app.tool()
def whoami(ctx: Context) -> str:
    return str(ctx.lifespan)
"""


async def _call_whoami(url: str, times: int) -> list[str]:
    answered: list[str] = []
    with trio.fail_after(60):
        for _ in range(times):
            async with trimcp.connect_http(url) as client:
                result = await client.call_tool("whoami")
                answered.append(result.content[0].text)  # type: ignore[union-attr]
    return answered


def test_once_per_worker(tmp_path: Path) -> None:
    log = tmp_path / "lifespan.log"
    app = tmp_path / "workers_app.py"
    app.write_text(APP.format(log=str(log)))
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "trimcp",
            "run",
            str(app),
            "--transport",
            "http",
            "--port",
            "0",
            "--workers",
            "2",
        ],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env=dict(os.environ),
    )
    try:
        url = None
        while url is None:
            found = re.search(r"(http://127\.0\.0\.1:\d+/mcp)", read_line(process.stderr, 60))
            url = found.group(1) if found else None
        answered = trio.run(_call_whoami, url, 12)
        process.send_signal(signal.SIGINT)
        assert stop(process, 60) == 0
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        assert process.stderr is not None
        process.stderr.close()
    lines = log.read_text().split()
    entered = Counter(lines[i + 1] for i in range(0, len(lines), 2) if lines[i] == "entered")
    exited = Counter(lines[i + 1] for i in range(0, len(lines), 2) if lines[i] == "exited")
    assert set(answered) <= set(entered)  # every answer came from a worker's own lifespan
    assert len(entered) == 2
    assert all(count == 1 for count in entered.values())
    assert exited == entered
