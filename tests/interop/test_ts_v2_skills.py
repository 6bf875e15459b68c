"""Interop, Skills (SEP-2640) with the official TypeScript SDK 2.4.0 (pinned with a lock by
tests/interop/ts_v2/setup.sh), both ways, over Streamable HTTP:

* its Skills host (``@modelcontextprotocol/client/ext/skills``, driven by
  tests/interop/ts_v2/skills_client.cjs) lists, gets and reads the skills of
  ``examples/everything_server.py``, in the 2025 era and in 2026-07-28; the SDK verifies
  every file against the entry (size, digest, ``SKILL.md`` front matter) and throws
  otherwise, so a report at all means trimcp's manifest is right;
* trimcp's client lists, gets and reads (verified) the skill that a server built on the
  SDK's ``@modelcontextprotocol/server/ext/skills`` serves (tests/interop/ts_v2/skills_server.cjs).

Real subprocesses, so the real clock: every wait is bounded.
"""

from __future__ import annotations

import functools
import json
import os
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
import trio

from tests.interop.ts_v2.conftest import (  # the fixture: the tests live one level up
    node_argv,
    node_env,
    ts_v2_fixture,  # noqa: F401
)

ROOT = Path(__file__).resolve().parents[2]
EVERYTHING = ROOT / "examples" / "everything_server.py"
SKILL_DIR = ROOT / "examples" / "skills" / "release-notes"
SKILL_URI = "skill://release-notes/SKILL.md"
STYLE_URI = "skill://release-notes/references/STYLE.md"
TEST_BOUND = 60.0


@asynccontextmanager
async def http_url(argv: list[str], env: dict[str, str]) -> AsyncIterator[str]:
    """Run a server that prints its URL (or its port) as its first line; yield the URL."""
    async with trio.open_nursery() as nursery:
        run = functools.partial(
            trio.run_process, argv, stdout=subprocess.PIPE, env=env, check=False
        )
        process: trio.Process = await nursery.start(run)
        assert process.stdout is not None
        line = b""
        with trio.fail_after(TEST_BOUND):
            while not line.endswith(b"\n"):
                chunk = await process.stdout.receive_some(256)
                assert chunk, f"{argv[-1]} exited before printing where it listens"
                line += chunk
        first = line.decode().strip()
        try:
            yield first if first.startswith("http") else f"http://127.0.0.1:{int(first)}/mcp"
        finally:
            process.terminate()


@pytest.mark.parametrize(("mode", "version"), [("legacy", "2025-11-25"), ("auto", "2026-07-28")])
async def test_ts_host_lists_gets_and_reads_trimcp_skills(
    ts_v2: dict[str, str], mode: str, version: str
) -> None:
    server = [sys.executable, str(EVERYTHING), "--transport", "http", "--port", "0"]
    server_env = {**os.environ, "PYTHONPATH": str(ROOT)}  # this checkout's trimcp
    async with http_url(server, server_env) as url:
        with trio.fail_after(TEST_BOUND):
            done = await trio.run_process(
                node_argv(ts_v2, "skills_client.cjs", url, mode),
                env=node_env(ts_v2),
                capture_stdout=True,
                capture_stderr=True,
                check=False,
            )
    assert done.returncode == 0, done.stderr.decode()[-4000:]
    report: dict[str, Any] = json.loads(done.stdout)
    assert report["protocolVersion"] == version
    assert report["server"]["name"] == "trimcp-everything-server"
    assert report["supported"] is True
    assert report["directoryRead"] is True
    assert report["invalid"] == []
    [skill] = report["skills"]
    assert skill["uri"] == skill["got"] == SKILL_URI
    skill_md = (SKILL_DIR / "SKILL.md").read_text()
    style = (SKILL_DIR / "references" / "STYLE.md").read_text()
    assert skill["skillMd"]["verified"] is True
    assert skill["skillMd"]["frontmatter"] == {
        "name": "release-notes",
        "description": "Draft release notes from a list of merged changes",
        "metadata": {"audience": "maintainers"},
    }
    assert skill_md.endswith(skill["skillMd"]["body"])
    assert skill["files"] == {
        SKILL_URI: {"verified": True, "size": len(skill_md.encode()), "text": skill_md},
        STYLE_URI: {"verified": True, "size": len(style.encode()), "text": style},
    }
