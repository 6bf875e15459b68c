"""``trimcp skills list|get``: the Skills (SEP-2640) a server serves, read from the shell.

``list`` shows every skill (all pages, at most the client's ``max_pages``): its name,
description and number of files.
``get NAME [FILE]`` prints a file of the skill (its ``SKILL.md`` by default) once verified
against the skill's manifest (size, SHA-256 digest, front matter), so what is printed is
what the server listed; ``--json`` prints the wire entries instead. A skill is named by
its name (``release-notes``) or its URI (``skill://release-notes/SKILL.md``).
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from trimcp.cli import output
from trimcp.cli.client import emit, err
from trimcp.cli.errors import EXIT_OK
from trimcp.cli.mistakes import answered, unknown
from trimcp.client import Client
from trimcp.client.skills import get_skill, iter_skills, read_skill_file
from trimcp.errors import McpError
from trimcp.protocol import skills as wire

SKILLS_COMMANDS = ("list", "get")


async def cmd_skills(client: Client, args: argparse.Namespace) -> int:
    """Run ``trimcp skills list|get``. Cancellation: as the requests it sends."""
    if args.skills_command == "list":
        return await _list(client, args)
    return await _get(client, args)


async def _all_skills(client: Client) -> list[dict[str, Any]]:
    # Bounded like every listing: past the client's max_pages, a PaginationError (one line).
    return [entry async for entry in iter_skills(client)]


def _name(entry: dict[str, Any]) -> str:
    front = entry.get("frontmatter")
    name = front.get("name") if isinstance(front, dict) else None
    return str(name) if name else str(entry.get("uri", "?"))


async def _list(client: Client, args: argparse.Namespace) -> int:
    entries = await _all_skills(client)
    if args.json:
        emit(output.to_json({"skills": entries}))
    elif entries:
        emit(output.format_skills(entries))
    else:
        err("trimcp: the server lists no skills")
    return EXIT_OK


async def _get(client: Client, args: argparse.Namespace) -> int:
    skill: str = args.skill
    uri = skill if "://" in skill else wire.skill_uri(skill)
    try:
        entry = await get_skill(client, uri)
    except McpError as exc:
        if answered(exc):
            names = [_name(e) for e in await _all_skills(client)]
            if skill not in names and uri not in {wire.skill_uri(n) for n in names}:
                raise unknown("skill", skill, names, listing="trimcp skills list") from None
        raise
    if args.json:
        emit(output.to_json({"skill": entry}))
        return EXIT_OK
    name = _name(entry)
    file_uri = entry["uri"] if args.file is None else wire.skill_uri(name, args.file)
    listed = entry.get("resources")
    if isinstance(listed, list) and file_uri not in {r.get("uri") for r in listed}:
        files = [str(r["uri"]).removeprefix(wire.skill_uri(name, "")) for r in listed]
        raise unknown(
            "file",
            args.file,
            files,
            owner=f"the skill {name!r}",
            listing=f"trimcp skills get {name} --json",
        )
    data = await read_skill_file(client, entry, file_uri)
    try:
        emit(data.decode())
    except UnicodeDecodeError:
        sys.stdout.buffer.write(data)  # a binary file goes out as it is, for a pipe
        sys.stdout.flush()
    return EXIT_OK
