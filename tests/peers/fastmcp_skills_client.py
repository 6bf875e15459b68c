"""Read a server's Skills (SEP-2640) with FastMCP's client (PyPI ``fastmcp``, pinned in the
``test`` extra) and print a JSON report; the peer of tests/interop/test_fastmcp_skills.py.

Usage::

    python tests/peers/fastmcp_skills_client.py --url http://127.0.0.1:PORT/mcp

The client opts into the extension (``SkillsClientExtension``), connects in
``mode="auto"`` (FastMCP serves Skills only on 2026-07-28), lists every skill, gets each by
its URI, and reads each with ``read_skill``, which fetches every file of the manifest and
checks sizes, SHA-256 digests, the front matter against the entry, and the name against
the folder; it raises on any difference, so a report means every check passed. Imports
nothing from trimcp. Exit status 0 when every step ran, 1 otherwise (the traceback on
stderr).
"""

from __future__ import annotations

import argparse
import base64
import json
import sys
from typing import Any

import anyio
from fastmcp import Client
from fastmcp.skills import SkillsClientExtension


async def report(url: str) -> dict[str, Any]:
    client = Client(url, mode="auto", extensions=[SkillsClientExtension()])
    async with client:
        found: dict[str, Any] = {"protocol_version": client.protocol_version, "skills": []}
        for entry in await client.list_skills():
            got = await client.get_skill(entry.uri)
            skill = await client.read_skill(entry.uri)
            found["skills"].append(
                {
                    "uri": entry.uri,
                    "got": got.uri,
                    "frontmatter": entry.frontmatter.root,
                    "resources": (
                        entry.resources
                        if isinstance(entry.resources, str)
                        else [r.model_dump(mode="json") for r in entry.resources]
                    ),
                    "name": skill.name,
                    "description": skill.description,
                    # Relative path -> the bytes read and verified, base64 for JSON.
                    "files": {
                        path: base64.b64encode(data).decode()
                        for path, data in sorted(skill.files.items())
                    },
                }
            )
        return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", required=True, help="the server's Streamable HTTP endpoint")
    args = parser.parse_args()
    found = anyio.run(report, args.url)
    json.dump(found, sys.stdout)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
