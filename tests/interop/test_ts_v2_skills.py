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

import json
import os
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
from tests.support import http_server_url
from trimcp.client import Client, connect_http, connect_stdio
from trimcp.client.skills import (
    SkillVerificationError,
    get_skill,
    list_skills,
    read_skill_file,
)
from trimcp.protocol.skills import digest

ROOT = Path(__file__).resolve().parents[2]
EVERYTHING = ROOT / "examples" / "everything_server.py"
SKILL_DIR = ROOT / "examples" / "skills" / "release-notes"
SKILL_URI = "skill://release-notes/SKILL.md"
STYLE_URI = "skill://release-notes/references/STYLE.md"
TEST_BOUND = 60.0


@pytest.mark.parametrize(("mode", "version"), [("legacy", "2025-11-25"), ("auto", "2026-07-28")])
async def test_ts_host_lists_gets_and_reads_trimcp_skills(
    ts_v2: dict[str, str], mode: str, version: str
) -> None:
    server = [sys.executable, str(EVERYTHING), "--transport", "http", "--port", "0"]
    server_env = {**os.environ, "PYTHONPATH": str(ROOT)}  # this checkout's trimcp
    async with http_server_url(server, server_env) as url:
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


TS_SKILL_URI = "skill://acme/invoice-check/SKILL.md"
TS_SKILL_MD = (
    "---\nname: invoice-check\ndescription: Check an invoice against its purchase order\n"
    "metadata:\n  owner: finance\n---\n\n# Invoice check\n\n"
    "Compare totals, then lines; see [the rules](references/RULES.md).\n"
)
TS_RULES = b"# Rules\n\n- Totals match to the cent.\n- Every line has a PO line.\n"
TS_STAMP = bytes([0, 1, 2, 250, 251, 252, 253, 254, 255])  # not UTF-8: served as a blob


@asynccontextmanager
async def ts_skills_server(
    ts_v2: dict[str, str], transport: str, mode: str
) -> AsyncIterator[Client]:
    with trio.fail_after(TEST_BOUND):
        if transport == "stdio":
            stderr: list[str] = []
            argv = node_argv(ts_v2, "skills_server.cjs")
            async with connect_stdio(
                argv, env=node_env(ts_v2), on_stderr=stderr.append, mode=mode
            ) as client:
                yield client
            assert not [line for line in stderr if "Error" in line], stderr
        else:
            argv = node_argv(ts_v2, "skills_server.cjs", "http")
            async with (
                http_server_url(argv, node_env(ts_v2)) as url,
                connect_http(url, mode=mode) as client,
            ):
                yield client


@pytest.mark.parametrize("transport", ["stdio", "http"])
@pytest.mark.parametrize(("mode", "version"), [("legacy", "2025-11-25"), ("auto", "2026-07-28")])
async def test_trimcp_client_lists_gets_and_reads_ts_skills(
    ts_v2: dict[str, str], transport: str, mode: str, version: str
) -> None:
    async with ts_skills_server(ts_v2, transport, mode) as client:
        assert client.protocol_version == version
        assert client.server_info.name == "ts-v2-skills-peer"
        page = await list_skills(client)
        assert [entry["uri"] for entry in page["skills"]] == [TS_SKILL_URI]
        assert "nextCursor" not in page
        entry = await get_skill(client, TS_SKILL_URI)
        assert entry == page["skills"][0]
        assert entry["frontmatter"] == {
            "name": "invoice-check",
            "description": "Check an invoice against its purchase order",
            "metadata": {"owner": "finance"},
        }
        base = "skill://acme/invoice-check/"
        expected = {
            f"{base}SKILL.md": TS_SKILL_MD.encode(),
            f"{base}references/RULES.md": TS_RULES,
            f"{base}assets/stamp.bin": TS_STAMP,
        }
        listed = {r["uri"]: (r["size"], r["digest"]) for r in entry["resources"]}
        assert listed == {uri: (len(data), digest(data)) for uri, data in expected.items()}
        for uri, data in expected.items():
            assert await read_skill_file(client, entry, uri) == data

        # trimcp's checks are live against this server too: an entry whose manifest
        # disagrees with what the server sends is refused, nothing returned.
        tampered = {
            **entry,
            "resources": [
                {**r, "digest": digest(b"other")} if r["uri"].endswith("RULES.md") else r
                for r in entry["resources"]
            ],
        }
        with pytest.raises(SkillVerificationError, match="digest"):
            await read_skill_file(client, tampered, f"{base}references/RULES.md")
