"""`trimcp skills list|get` (SEP-2640) end to end: against examples/everything_server.py
(the release-notes skill) over stdio and Streamable HTTP, and against
tests/cli/skills_server.py (paginated, binary, tampered). Real subprocesses, every run
bounded."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.cli.support import PEER_ARGV, ROOT, RUN_TIMEOUT, cli, cli_json, served_over_http

EVERYTHING = str(ROOT / "examples" / "everything_server.py")
ENDLESS = "tests/cli/endless_skills_server.py"
RELEASE_NOTES = ROOT / "examples" / "skills" / "release-notes"
SKILLS_ARGV = [
    "--",
    sys.executable,
    "-m",
    "trimcp",
    "run",
    str(ROOT / "tests/cli/skills_server.py"),
]


@pytest.fixture(scope="module")
def http_url() -> Iterator[str]:
    yield from served_over_http(EVERYTHING)


@pytest.fixture(params=["stdio", "http"])
def server(request: pytest.FixtureRequest) -> list[str]:
    """The words that name the everything server on a ``trimcp`` command line."""
    if request.param == "stdio":
        return ["--", sys.executable, EVERYTHING]
    return ["--url", request.getfixturevalue("http_url")]


def test_list_shows_each_skill_with_its_description_and_files(server: list[str]) -> None:
    completed = cli("skills", "list", *server)
    assert completed.returncode == 0, completed.stderr
    line = "release-notes  Draft release notes from a list of merged changes (2 files)\n"
    assert completed.stdout == line


def test_list_json_is_the_wire_entries(server: list[str]) -> None:
    (entry,) = cli_json("skills", "list", "--json", *server)["skills"]
    assert entry["uri"] == "skill://release-notes/SKILL.md"
    assert entry["frontmatter"]["metadata"] == {"audience": "maintainers"}
    sizes = {r["uri"]: r["size"] for r in entry["resources"]}
    assert sizes == {
        "skill://release-notes/SKILL.md": (RELEASE_NOTES / "SKILL.md").stat().st_size,
        "skill://release-notes/references/STYLE.md": (RELEASE_NOTES / "references" / "STYLE.md")
        .stat()
        .st_size,
    }


def test_get_prints_the_skill_file_or_a_named_file_as_on_disk(server: list[str]) -> None:
    for words, path in (
        (["release-notes"], RELEASE_NOTES / "SKILL.md"),
        (["skill://release-notes/SKILL.md"], RELEASE_NOTES / "SKILL.md"),
        (["release-notes", "references/STYLE.md"], RELEASE_NOTES / "references" / "STYLE.md"),
    ):
        completed = cli("skills", "get", *words, *server)
        assert completed.returncode == 0, completed.stderr
        assert completed.stdout == path.read_text(), words


def test_get_json_is_the_entry(server: list[str]) -> None:
    entry = cli_json("skills", "get", "release-notes", "--json", *server)["skill"]
    assert entry["frontmatter"]["name"] == "release-notes"
    assert len(entry["resources"]) == 2


def test_a_misspelled_skill_or_file_is_one_line_with_a_suggestion(server: list[str]) -> None:
    completed = cli("skills", "get", "release-note", *server)
    assert (completed.returncode, completed.stdout) == (1, "")
    assert completed.stderr.endswith(
        "trimcp: the server has no skill 'release-note'\ntrimcp: did you mean 'release-notes'?\n"
    ), completed.stderr
    completed = cli("skills", "get", "release-notes", "references/STYLE", *server)
    assert (completed.returncode, completed.stdout) == (1, "")
    assert completed.stderr.endswith(
        "trimcp: the skill 'release-notes' has no file 'references/STYLE'\n"
        "trimcp: did you mean 'references/STYLE.md'?\n"
    ), completed.stderr


def test_list_follows_every_page() -> None:
    # The server lists one skill per page.
    listed = cli_json("skills", "list", "--json", *SKILLS_ARGV)["skills"]
    assert [e["frontmatter"]["name"] for e in listed] == ["greeting", "tampered", "zebra"]
    assert cli("skills", "list", *SKILLS_ARGV).stdout.splitlines()[2] == (
        "zebra     Stripes (1 file)"
    )


def test_an_endless_listing_stops_at_the_page_bound_in_one_line() -> None:
    # A new cursor on every page: the listing stops at the client's 100 pages.
    endless = ["--", sys.executable, "-m", "trimcp", "run", str(ROOT / ENDLESS)]
    for words in (["skills", "list"], ["skills", "list", "--json"]):
        completed = cli(*words, *endless)
        assert (completed.returncode, completed.stdout) == (1, ""), completed.stderr
        assert completed.stderr.endswith(
            "trimcp: the server's answer is invalid: skills/list: the listing did not end "
            "within 100 pages (the client's max_pages)\n"
        ), completed.stderr


def test_a_binary_file_goes_to_stdout_as_its_bytes() -> None:
    completed = subprocess.run(
        [sys.executable, "-m", "trimcp", "skills", "get", "greeting", "logo.png", *SKILLS_ARGV],
        capture_output=True,
        timeout=RUN_TIMEOUT,
        cwd=ROOT,
        check=False,
    )
    assert completed.returncode == 0, completed.stderr
    assert completed.stdout == b"\x89PNG\r\n\x1a\n\xff\x00"


def test_a_file_that_differs_from_its_manifest_is_not_printed() -> None:
    completed = cli("skills", "get", "tampered", "notes.md", *SKILLS_ARGV)
    assert (completed.returncode, completed.stdout) == (1, "")
    assert "skill://tampered/notes.md: read 25 bytes, the manifest says 17" in completed.stderr
    # The files that match are printed.
    assert cli("skills", "get", "tampered", *SKILLS_ARGV).stdout.endswith("Read notes.\n")


def test_a_server_without_skills_says_so() -> None:
    completed = cli("skills", "list", *PEER_ARGV)
    assert (completed.returncode, completed.stdout) == (1, "")
    assert completed.stderr.endswith(
        "trimcp-peer did not declare the io.modelcontextprotocol/skills extension; "
        "it serves no skills\n"
    ), completed.stderr


def test_usage_errors_exit_2_before_a_server_starts(tmp_path: Path) -> None:
    started = tmp_path / "started"
    never = ["--", sys.executable, "-c", f"open({str(started)!r}, 'w')"]
    for args in (
        ["skills", *never],
        ["skills", "get", *never],
        ["skills", "get", "release-notes", "SKILL.md", "--json", *never],
        ["skills", "remove", "x", *never],
    ):
        completed = cli(*args)
        assert completed.returncode == 2, (args, completed.stderr)
        assert completed.stderr.startswith("trimcp: "), (args, completed.stderr)
    assert not started.exists()
