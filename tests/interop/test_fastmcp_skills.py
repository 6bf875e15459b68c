"""Interop, Skills (SEP-2640): FastMCP's client (PyPI ``fastmcp`` 4.2.3, pinned in the
``test`` extra; tests/peers/fastmcp_skills_client.py) reads the skills of
``examples/everything_server.py`` over Streamable HTTP, in 2026-07-28 (FastMCP's client
sends Skills requests only on a 2026 connection). Its ``read_skill`` fetches every file of
the manifest and raises on a size, digest, front matter or name that differs, so a report
means trimcp's entries and files passed FastMCP's checks; the test then compares what it
read with the files on disk.

Real subprocesses, so the real clock: every wait is bounded.
"""

from __future__ import annotations

import base64
import importlib.util
import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest
import trio

from tests.ci import missing_peer
from tests.support import http_server_url
from trimcp.protocol.skills import digest

ROOT = Path(__file__).resolve().parents[2]
PEER = ROOT / "tests" / "peers" / "fastmcp_skills_client.py"
EVERYTHING = ROOT / "examples" / "everything_server.py"
SKILL_DIR = ROOT / "examples" / "skills" / "release-notes"
TEST_BOUND = 60.0


@pytest.fixture
def fastmcp_installed() -> None:
    """Skips without fastmcp, but fails under CI (the ``test`` extra pins it)."""
    if importlib.util.find_spec("fastmcp") is None:
        reason = "fastmcp is not installed: install the test extra (pip install -e '.[test]')"
        missing_peer(reason, "CI must install it")


@pytest.mark.usefixtures("fastmcp_installed")
async def test_fastmcp_client_reads_trimcp_skills() -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}  # the server child imports this checkout
    server = [sys.executable, str(EVERYTHING), "--transport", "http", "--port", "0"]
    async with http_server_url(server, env) as url:
        with trio.fail_after(TEST_BOUND):
            done = await trio.run_process(
                [sys.executable, str(PEER), "--url", url],
                env=env,
                capture_stdout=True,
                capture_stderr=True,
                check=False,
            )
    assert done.returncode == 0, done.stderr.decode()[-4000:]
    report: dict[str, Any] = json.loads(done.stdout)
    assert report["protocol_version"] == "2026-07-28"
    [skill] = report["skills"]
    assert skill["uri"] == skill["got"] == "skill://release-notes/SKILL.md"
    assert skill["name"] == "release-notes"
    assert skill["description"] == "Draft release notes from a list of merged changes"
    assert skill["frontmatter"]["metadata"] == {"audience": "maintainers"}
    on_disk = {
        "SKILL.md": (SKILL_DIR / "SKILL.md").read_bytes(),
        "references/STYLE.md": (SKILL_DIR / "references" / "STYLE.md").read_bytes(),
    }
    assert {path: base64.b64decode(data) for path, data in skill["files"].items()} == on_disk
    assert skill["resources"] == [
        {"uri": f"skill://release-notes/{path}", "digest": digest(data), "size": len(data)}
        for path, data in on_disk.items()
    ]
