"""Serving Skills: a skill from a folder and from code, its manifest, skills/list and
skills/get, the files through resources/read, resources/directory/read, refresh with a
list-changed notification, and what the server refuses (traversal, bad skills)."""

from __future__ import annotations

import argparse
import hashlib
import os
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import trio

import trimcp
from tests.server.test_providers import Outlet
from trimcp.auth import AuthInfo
from trimcp.errors import INVALID_PARAMS, McpError
from trimcp.protocol import modern
from trimcp.protocol import skills as wire
from trimcp.protocol.jsonrpc import Request
from trimcp.protocol.stateless import prepare
from trimcp.server.context import Context
from trimcp.server.extensions import Extension
from trimcp.server.skills import MAX_FOLDER_ENTRIES, Skill, Skills, read_bounded
from trimcp.session.stateless import run_request
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


def test_a_folder_skill_skips_linked_folders_and_special_files(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.md").write_text("do not serve")
    folder = write_skill(tmp_path / "skills")
    (folder / "linked").symlink_to(outside, target_is_directory=True)
    os.mkfifo(folder / "refs" / "pipe")  # opening it would block: it is never opened
    paths = [f.path for f in Skill.from_folder(folder).files]
    assert paths == ["SKILL.md", "refs/WORDS.md"]


def _peak_bytes_of(action: Callable[[], object]) -> int:
    tracemalloc.start()
    try:
        action()
    finally:
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
    return peak


def _refused(folder: Path, message: str) -> Callable[[], object]:
    def action() -> None:
        with pytest.raises(ValueError, match=message):
            Skill.from_folder(folder)

    return action


def test_a_huge_file_is_refused_before_it_is_read(tmp_path: Path) -> None:
    folder = write_skill(tmp_path)
    with open(folder / "refs" / "huge.bin", "wb") as huge:
        huge.truncate(256 * 1024 * 1024)  # sparse: costs nothing on disk
    # Its size is known from stat: nothing of it is read (the old code read all 256 MiB).
    peak = _peak_bytes_of(_refused(folder, "larger than 16 MiB"))
    assert peak < 4 * 1024 * 1024


def test_too_many_files_are_refused_before_any_is_read(tmp_path: Path) -> None:
    folder = write_skill(tmp_path)
    for index in range(wire.MAX_FILES):
        (folder / "refs" / f"{index}.md").write_text("x")
    with open(folder / "refs" / "big.bin", "wb") as big:
        big.truncate(8 * 1024 * 1024)
    # 514 files: refused on the count, before the 8 MiB file (or any other) is read.
    peak = _peak_bytes_of(_refused(folder, r"files.*512"))
    assert peak < 4 * 1024 * 1024


def test_a_folder_with_too_many_entries_is_refused_while_walked(tmp_path: Path) -> None:
    folder = write_skill(tmp_path)
    hidden = folder / "refs"
    for index in range(MAX_FOLDER_ENTRIES):
        (hidden / f".{index}").write_text("")  # skipped, but looked at
    with pytest.raises(ValueError, match=f"more than {MAX_FOLDER_ENTRIES} entries"):
        Skill.from_folder(folder)


def test_a_file_is_read_with_a_bound(tmp_path: Path) -> None:
    """A file that grew after its size was taken is read no further than the budget."""
    path = tmp_path / "grown.bin"
    path.write_bytes(b"x" * 100)
    assert read_bounded(path, 100) == b"x" * 100
    with pytest.raises(ValueError, match="grew"):
        read_bounded(path, 99)
    link = tmp_path / "link.bin"
    link.symlink_to(path)
    # A file swapped for a link is not followed (O_NOFOLLOW: ELOOP).
    with pytest.raises(OSError, match="symbolic links"):
        read_bounded(link, 100)


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
    skills.add(Skill.from_text(SKILL_MD.replace("name: greet", "name: coded")))  # no folder
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
        (greet,) = [e for e in listed["skills"] if e["uri"] == "skill://greet/SKILL.md"]
        uris = [r["uri"] for r in greet["resources"]]
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


def endless_skills() -> tuple[trimcp.Server, list[str | None]]:
    """A server whose ``skills/list`` hands out a new cursor on every page; it gives up
    (an error) after 1000 pages, so an unbounded client fails quickly."""
    app = trimcp.Server("endless")
    extension = Extension(wire.EXTENSION_ID, {}, schemes=(wire.SCHEME,))
    cursors: list[str | None] = []

    async def endless(ctx: Context) -> dict[str, Any]:
        params = ctx.request_context.params
        cursors.append(params.get("cursor") if isinstance(params, dict) else None)
        if len(cursors) > 1000:
            raise McpError(INVALID_PARAMS, "gave up")
        n = len(cursors)
        entry = {"uri": f"skill://s{n}/SKILL.md", "frontmatter": {"name": f"s{n}"}}
        return {"skills": [entry], "nextCursor": f"c{n}"}

    extension.add_named(wire.LIST_SKILLS.name, endless)
    app.add_extension(extension)
    return app, cursors


@pytest.mark.parametrize("max_pages", [None, 3])
async def test_every_skills_listing_stops_at_the_page_bound(max_pages: int | None) -> None:
    from trimcp.cli.skills import cmd_skills
    from trimcp.client import PaginationError
    from trimcp.client.skills import iter_skills

    app, cursors = endless_skills()
    bound = 100 if max_pages is None else max_pages
    async with trimcp.connect_memory(app, mode="legacy") as client:
        names: list[str] = []

        async def collect() -> None:
            async for entry in iter_skills(client, max_pages=max_pages):
                names.append(entry["frontmatter"]["name"])

        with pytest.raises(PaginationError, match=f"within {bound} pages"):
            await collect()
        assert names == [f"s{n}" for n in range(1, bound + 1)]  # every page received
        assert cursors == [None, *(f"c{n}" for n in range(1, bound))]
        # `trimcp skills list` stops at the client's bound too (it paged for ever).
        cursors.clear()
        args = argparse.Namespace(skills_command="list", json=True)
        with pytest.raises(PaginationError, match=f"within {client.max_pages} pages"):
            await cmd_skills(client, args)
        assert len(cursors) == client.max_pages


def test_a_code_skill_holds_at_most_512_files() -> None:
    files = {f"refs/{index}.md": "x" for index in range(wire.MAX_FILES - 1)}
    assert len(Skill.from_text(SKILL_MD, files).files) == wire.MAX_FILES  # SKILL.md too
    files["refs/one-more.md"] = "x"
    with pytest.raises(ValueError, match="has 513 files \\(at most 512\\)"):
        Skill.from_text(SKILL_MD, files)


def test_a_code_skill_holds_at_most_16_mib() -> None:
    room = wire.MAX_TOTAL_BYTES - len(SKILL_MD.encode())
    assert Skill.from_text(SKILL_MD, {"big.bin": bytes(room)})
    with pytest.raises(ValueError, match="'greet' is larger than 16 MiB"):
        Skill.from_text(SKILL_MD, {"big.bin": bytes(room + 1)})


def test_a_skill_md_that_is_not_utf8_is_refused() -> None:
    folder_less = {"SKILL.md": b"---\nname: greet\ndescription: \xff\n---\n"}
    with pytest.raises(ValueError, match=r"SKILL\.md must be UTF-8 text"):
        Skill.from_text("ignored", folder_less)


def test_a_folder_needs_its_skill_md_and_the_skills_name(tmp_path: Path) -> None:
    empty = tmp_path / "greet"
    empty.mkdir()
    (empty / "notes.md").write_text("x")
    with pytest.raises(ValueError, match=r"holds no SKILL\.md: a skill folder needs one"):
        Skill.from_folder(empty)
    renamed = write_skill(tmp_path / "other").rename(tmp_path / "other" / "hello")
    with pytest.raises(ValueError, match="must be named after its skill 'greet'"):
        Skill.from_folder(renamed)


def test_a_folder_of_exactly_the_most_entries_is_walked(tmp_path: Path) -> None:
    folder = write_skill(tmp_path)
    # SKILL.md, refs/ and refs/WORDS.md are three entries; hidden ones fill the rest.
    for index in range(MAX_FOLDER_ENTRIES - 3):
        (folder / "refs" / f".{index}").write_text("")
    assert len(Skill.from_folder(folder).files) == 2
    (folder / "refs" / ".one-more").write_text("")
    with pytest.raises(ValueError, match=f"more than {MAX_FOLDER_ENTRIES} entries"):
        Skill.from_folder(folder)


def test_a_folder_of_exactly_512_files_and_16_mib_is_read(tmp_path: Path) -> None:
    folder = write_skill(tmp_path)  # SKILL.md and refs/WORDS.md
    for index in range(wire.MAX_FILES - 3):
        (folder / "refs" / f"{index}.md").write_text("")
    used = len(SKILL_MD.encode()) + len(b"hello, hi\n")
    with open(folder / "refs" / "big.bin", "wb") as big:
        big.truncate(wire.MAX_TOTAL_BYTES - used)  # sparse
    skill = Skill.from_folder(folder)
    assert len(skill.files) == wire.MAX_FILES
    assert sum(len(file.data) for file in skill.files) == wire.MAX_TOTAL_BYTES


def test_a_special_file_is_not_read(tmp_path: Path) -> None:
    pipe = tmp_path / "pipe"
    os.mkfifo(pipe)  # opened without blocking, then refused: not a regular file
    with pytest.raises(ValueError, match="is no longer a regular file"):
        read_bounded(pipe, 100)


async def _as(app: trimcp.Server, method: str, params: dict[str, Any], caller: Any) -> Any:
    """``method`` as one 2026 request of ``caller``, with the skills extension declared."""
    caps: dict[str, Any] = {"extensions": {wire.EXTENSION_ID: {}}}
    meta = {modern.META_PROTOCOL_VERSION: "2026-07-28", modern.META_CLIENT_CAPABILITIES: caps}
    prepared = prepare(app, Request(id=1, method=method, params={"_meta": meta, **params}))
    return await run_request(app, prepared, Outlet(), principal=caller)


async def test_a_skill_hidden_from_a_caller_is_not_listed_got_or_browsed() -> None:
    app = trimcp.Server("skills")
    skills = Skills(app)
    skills.add(Skill.from_text(SKILL_MD))
    skills.add(Skill.from_text(SKILL_MD.replace("name: greet", "name: admin-only")))

    def rules(method: str, name: str) -> frozenset[str]:
        return frozenset({"admin"}) if "admin-only" in name else frozenset()

    hidden = AuthInfo(subject="u", rules=rules, hide_unauthorized=True)
    shown = AuthInfo(subject="u", rules=rules)  # hide_unauthorized off: listed
    admin = AuthInfo(subject="a", scopes="admin", rules=rules, hide_unauthorized=True)
    for caller, names in [(hidden, ["greet"]), (shown, ["admin-only", "greet"]), (admin, None)]:
        listed = (await _as(app, wire.LIST_SKILLS.name, {}, caller)).result
        got = [entry["uri"].split("/")[2] for entry in listed["skills"]]
        assert got == (names or ["admin-only", "greet"])
        assert "nextCursor" not in listed  # one page: no cursor at all, not a null one
    uri = "skill://admin-only/SKILL.md"
    refused = await _as(app, wire.GET_SKILL.name, {"uri": uri}, hidden)
    assert refused.error is not None
    assert (await _as(app, wire.GET_SKILL.name, {"uri": uri}, admin)).error is None
    folder = "skill://admin-only"
    refused = await _as(app, wire.READ_DIRECTORY.name, {"uri": folder}, hidden)
    assert refused.error is not None
    assert (await _as(app, wire.READ_DIRECTORY.name, {"uri": folder}, admin)).error is None
    unknown = await _as(app, wire.READ_DIRECTORY.name, {"uri": "skill://nobody"}, admin)
    assert unknown.error is not None


async def test_the_client_asks_no_skills_of_a_server_without_them() -> None:
    from trimcp.client.skills import get_skill, iter_skills, list_skills
    from trimcp.errors import LocalProtocolError

    app = trimcp.Server("plain")
    async with trimcp.connect_memory(app, mode="legacy") as client:
        with pytest.raises(LocalProtocolError, match="skills"):
            await list_skills(client)
        with pytest.raises(LocalProtocolError, match="skills"):
            await get_skill(client, "skill://greet/SKILL.md")
        with pytest.raises(LocalProtocolError, match="skills"):
            iter_skills(client)


async def test_a_dynamic_skill_reads_any_file_and_junk_in_a_manifest_is_skipped() -> None:
    from trimcp.client.skills import list_skills, read_skill_file

    app = trimcp.Server("skills")
    Skills(app).add(Skill.from_text(SKILL_MD, {"refs/WORDS.md": "hello"}))
    async with trimcp.connect_memory(app, mode="legacy") as client:
        [entry] = (await list_skills(client))["skills"]
        words = "skill://greet/refs/WORDS.md"
        dynamic = {**entry, "resources": "dynamic"}
        assert await read_skill_file(client, dynamic, words) == b"hello"  # unverified
        junk = {**entry, "resources": ["junk", 7, *entry["resources"]]}
        assert await read_skill_file(client, junk, words) == b"hello"


async def test_the_client_names_every_front_matter_field_that_differs() -> None:
    from trimcp.client.skills import SkillVerificationError, list_skills, read_skill_file

    app = trimcp.Server("skills")
    Skills(app).add(Skill.from_text(SKILL_MD))
    async with trimcp.connect_memory(app, mode="legacy") as client:
        [entry] = (await list_skills(client))["skills"]
        extra = {**entry, "frontmatter": {**entry["frontmatter"], "extra": "x"}}
        with pytest.raises(SkillVerificationError, match=r"entry's \(extra\)$"):
            await read_skill_file(client, extra, entry["uri"])
        none = {**entry, "frontmatter": None}
        with pytest.raises(SkillVerificationError, match=r"\(description, metadata, name\)$"):
            await read_skill_file(client, none, entry["uri"])


async def test_a_directory_read_names_a_missing_folder_and_a_missing_uri() -> None:
    app = trimcp.Server("skills")
    Skills(app).add(Skill.from_text(SKILL_MD, {"refs/WORDS.md": "hello"}))
    read = wire.READ_DIRECTORY.name
    listed = await _as(app, read, {"uri": "skill://greet/refs"}, None)
    assert [r["name"] for r in listed.result["resources"]] == ["WORDS.md"]
    missing = await _as(app, read, {"uri": "skill://greet/nope"}, None)
    assert missing.error is not None
    assert "is not a skill directory" in missing.error.message
    unnamed = await _as(app, read, {}, None)
    assert unnamed.error is not None
    assert "'uri' (a string) is required" in unnamed.error.message


async def test_a_served_skill_md_without_front_matter_is_refused() -> None:
    from trimcp.client.skills import SkillVerificationError, read_skill_file

    app = trimcp.Server("rogue")  # serves a SKILL.md that no Skill would hold

    @app.resource("skill://greet/SKILL.md")
    def rogue() -> str:
        return "no front matter here"

    entry = {"uri": "skill://greet/SKILL.md", "resources": "dynamic", "frontmatter": {}}
    async with trimcp.connect_memory(app, mode="legacy") as client:
        with pytest.raises(SkillVerificationError, match="must open with front matter"):
            await read_skill_file(client, entry, "skill://greet/SKILL.md")


async def test_the_client_reads_a_binary_skill_file_verified() -> None:
    from trimcp.client.skills import list_skills, read_skill_file

    app = trimcp.Server("skills")
    Skills(app).add(Skill.from_text(SKILL_MD, {"img/dot.bin": b"\xff\x00\xfe"}))
    async with trimcp.connect_memory(app, mode="legacy") as client:
        [entry] = (await list_skills(client))["skills"]
        got = await read_skill_file(client, entry, "skill://greet/img/dot.bin")
        assert got == b"\xff\x00\xfe"
