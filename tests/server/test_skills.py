"""Serving Skills: a skill from a folder and from code, its manifest, skills/list and
skills/get, the files through resources/read, resources/directory/read, refresh with a
list-changed notification, and what the server refuses (traversal, bad skills)."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import pytest
import trio

import trimcp
from trimcp.errors import INVALID_PARAMS, McpError
from trimcp.protocol import skills as wire
from trimcp.server.skills import Skill, Skills
from trimcp.types import TextResourceContents

SKILL_MD = """---
name: greet
description: Greet someone politely
metadata:
  tone: warm
  tags:
    - a
    - b
---
Say hello.
"""


def write_skill(root: Path, body: str = SKILL_MD) -> Path:
    folder = root / "greet"
    (folder / "refs").mkdir(parents=True, exist_ok=True)
    (folder / "SKILL.md").write_text(body)
    (folder / "refs" / "WORDS.md").write_text("hello, hi\n")
    return folder


def sha(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def test_a_folder_skill_has_its_front_matter_and_a_complete_manifest(tmp_path: Path) -> None:
    skill = Skill.from_folder(write_skill(tmp_path))
    entry = skill.entry()
    assert entry["uri"] == "skill://greet/SKILL.md"
    assert entry["frontmatter"] == {
        "name": "greet",
        "description": "Greet someone politely",
        "metadata": {"tone": "warm", "tags": ["a", "b"]},
    }
    assert entry["resources"] == [
        {"uri": "skill://greet/SKILL.md", "digest": sha(SKILL_MD.encode()), "size": len(SKILL_MD)},
        {"uri": "skill://greet/refs/WORDS.md", "digest": sha(b"hello, hi\n"), "size": 10},
    ]


def test_a_folder_skill_skips_links_that_leave_it(tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("do not serve")
    folder = write_skill(tmp_path / "skills")
    (folder / "refs" / "leak.txt").symlink_to(secret)
    paths = [f.path for f in Skill.from_folder(folder).files]
    assert paths == ["SKILL.md", "refs/WORDS.md"]


@pytest.mark.parametrize("path", ["../x", "/etc/passwd", "a/../../b", "a//b", ""])
def test_a_code_skill_refuses_paths_that_leave_it(path: str) -> None:
    with pytest.raises(ValueError, match="relative path"):
        Skill.from_text(SKILL_MD, {path: "x"})


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("no front matter", "open with front matter"),
        ("---\nname: greet\n---\n", "'description'"),
        ("---\nname: Bad_Name\ndescription: d\n---\n", "lowercase"),
        ("---\nname: greet\ndescription: [a, b]\n---\n", "beyond what trimcp reads"),
    ],
)
def test_bad_skills_are_refused_naming_the_fault(text: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        Skill.from_text(text)


async def test_list_get_read_and_directory_read(tmp_path: Path) -> None:
    app = trimcp.Server("skills")
    skills = Skills(app)
    skills.add_folder(write_skill(tmp_path))
    async with trimcp.connect_memory(app, mode="legacy") as client:
        assert client.extension(wire.EXTENSION_ID) == {"directoryRead": True}
        listed = await client.request(wire.LIST_SKILLS, {})
        assert [s["uri"] for s in listed["skills"]] == ["skill://greet/SKILL.md"]
        got = await client.request(wire.GET_SKILL, {"uri": "skill://greet/SKILL.md"})
        assert got == {"skill": listed["skills"][0]}
        with pytest.raises(McpError) as info:
            await client.request(wire.GET_SKILL, {"uri": "skill://nobody/SKILL.md"})
        assert info.value.code == INVALID_PARAMS
        [read] = (await client.read_resource("skill://greet/refs/WORDS.md")).contents
        assert isinstance(read, TextResourceContents)
        assert read.text == "hello, hi\n"
        resources = {r.uri: r for r in (await client.list_resources()).resources}
        assert resources["skill://greet/SKILL.md"].mime_type == "text/markdown"
        assert resources["skill://greet/SKILL.md"].description == "Greet someone politely"
        folder = await client.request(wire.READ_DIRECTORY, {"uri": "skill://greet"})
        children = {c["uri"]: c.get("mimeType") for c in folder["resources"]}
        assert children == {
            "skill://greet/SKILL.md": "text/markdown",
            "skill://greet/refs": "inode/directory",
        }
        for not_a_folder in ("skill://greet/SKILL.md", "skill://greet/../x", "file:///etc"):
            with pytest.raises(McpError) as info:
                await client.request(wire.READ_DIRECTORY, {"uri": not_a_folder})
            assert info.value.code == INVALID_PARAMS
        with pytest.raises(McpError):
            await client.read_resource("skill://greet/../../secret")


async def test_refresh_serves_the_changed_skill_and_tells_clients(tmp_path: Path) -> None:
    app = trimcp.Server("skills")
    skills = Skills(app)
    folder = write_skill(tmp_path)
    skills.add_folder(folder)
    changed = trio.Event()

    async def on_change(*args: Any) -> None:
        changed.set()

    async with trimcp.connect_memory(
        app, mode="legacy", on_resources_list_changed=on_change
    ) as client:
        assert await skills.refresh() == []  # nothing changed: nothing replaced
        (folder / "refs" / "MORE.md").write_text("more")
        assert await skills.refresh() == ["greet"]
        with trio.fail_after(5):
            await changed.wait()
        listed = await client.request(wire.LIST_SKILLS, {})
        uris = [r["uri"] for r in listed["skills"][0]["resources"]]
        assert "skill://greet/refs/MORE.md" in uris
        assert (await client.read_resource("skill://greet/refs/MORE.md")).contents


async def test_the_client_reads_verified_files_and_refuses_tampered_ones() -> None:
    from trimcp.client.skills import SkillVerificationError, list_skills, read_skill_file

    app = trimcp.Server("skills")
    Skills(app).add(Skill.from_text(SKILL_MD, {"refs/WORDS.md": "hello"}))
    async with trimcp.connect_memory(app, mode="legacy") as client:
        [entry] = (await list_skills(client))["skills"]
        assert await read_skill_file(client, entry, entry["uri"]) == SKILL_MD.encode()
        bad_size = {**entry, "resources": [{**r, "size": 1} for r in entry["resources"]]}
        with pytest.raises(SkillVerificationError, match="manifest says 1"):
            await read_skill_file(client, bad_size, entry["uri"])
        bad_digest = {**entry, "resources": [{**r, "digest": sha(b"")} for r in entry["resources"]]}
        with pytest.raises(SkillVerificationError, match="digest"):
            await read_skill_file(client, bad_digest, "skill://greet/refs/WORDS.md")
        other_front = {**entry, "frontmatter": {**entry["frontmatter"], "description": "x"}}
        with pytest.raises(
            SkillVerificationError, match=r"differs from the entry.s \(description\)"
        ):
            await read_skill_file(client, other_front, entry["uri"])
        with pytest.raises(SkillVerificationError, match="not a file of the skill"):
            await read_skill_file(client, entry, "skill://greet/../secret")
