"""The newcomer docs stay in step with the code: the index links every page, the getting
started server is the example file, and the CLI reference names every subcommand."""

from __future__ import annotations

import re

from tests.cli.support import ROOT
from trimcp.cli.parser import build_parser

DOCS = ROOT / "docs"


def test_the_index_links_every_page() -> None:
    index = (DOCS / "index.md").read_text()
    linked = set(re.findall(r"\]\(([\w.-]+\.md)\)", index))
    pages = {page.name for page in DOCS.glob("*.md")} - {"index.md"}
    assert pages - linked == set(), "pages missing from docs/index.md"
    assert linked - pages == set(), "docs/index.md links pages that do not exist"


def test_relative_links_between_pages_resolve() -> None:
    for page in DOCS.glob("*.md"):
        for target in re.findall(r"\]\(([\w.-]+\.md)(?:#[\w-]+)?\)", page.read_text()):
            assert (DOCS / target).exists(), f"{page.name} links {target}"


def test_the_getting_started_server_is_the_example_file() -> None:
    page = (DOCS / "getting-started.md").read_text()
    first_block = re.search(r"^```python\n(.*?)^```", page, re.DOTALL | re.MULTILINE)
    assert first_block is not None
    example = (ROOT / "examples" / "docs" / "cli_weather.py").read_text()
    assert first_block.group(1) == example


def test_the_cli_reference_names_every_command() -> None:
    page = (DOCS / "getting-started.md").read_text()
    parser = build_parser()
    commands = next(action.choices for action in parser._actions if action.dest == "command")
    assert commands is not None
    for name in commands:
        assert f"`trimcp {name}" in page, name


def test_the_client_page_names_every_opener() -> None:
    import trimcp.client

    page = (DOCS / "client.md").read_text()
    table = page[page.index("| opener |") :].split("\n\n", 1)[0]
    listed = set(re.findall(r"^\| `(connect_\w+)\(", table, re.MULTILINE))
    exported = {name for name in dir(trimcp.client) if name.startswith("connect_")}
    assert listed == exported


def test_the_readme_says_how_to_reach_the_cli_and_names_the_headline_features() -> None:
    readme = (ROOT / "README.md").read_text()
    table = readme[readme.index("## What is there") :]
    for feature in ("Skills", "MCP Apps", "DPoP", "`trimcp skills list / get`", "2025 sessions"):
        assert feature in table, feature
    quickstart = readme[readme.index("## Quickstart") : readme.index("## A server")]
    assert ". .venv/bin/activate" in quickstart
    assert ".venv/bin/trimcp" in quickstart
