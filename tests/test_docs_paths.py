"""Every relative link and every repository file README.md and docs/*.md name exists
(issue 35: docs/transports.md named trimcp/transports/base.py long after it was gone).

A file is "named" when a word in backquotes, or a word of a code block, starts with one
of the repository's top folders (``trimcp/``, ``tests/``, ``examples/``, ``benchmarks/``,
``docs/``) and holds no pattern (``*``, ``{...}``, ``<...>``, ``...``). A test id's
``::name`` and a target's ``:app`` are not part of the path."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
TOP = ("trimcp", "tests", "examples", "benchmarks", "docs", ".ci")
#: ``[text](target)`` and ``![alt](target)``; the target ends at a space (a title) or ``)``.
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
CODE_SPAN = re.compile(r"`([^`\n]+)`")
FENCE = re.compile(r"^```[^\n]*\n(.*?)^```", re.DOTALL | re.MULTILINE)
FENCE_KIND = re.compile(r"^```(\w*)[^\n]*\n(.*?)^```", re.DOTALL | re.MULTILINE)
PATH = re.compile(r"(?<![\w./$-])((?:" + "|".join(re.escape(t) for t in TOP) + r")/[\w./-]*)")
PATTERN = re.compile(r"[*{}<>]|\.\.\.|XXX")


def _relative_links(text: str) -> list[str]:
    text = FENCE.sub("", text)  # a link-like text in a code block is code, not a link
    targets = []
    for target in LINK.findall(text):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target) or target.startswith("#"):
            continue  # a URL (https:, mailto:) or an anchor on the same page
        targets.append(target.split("#", 1)[0])
    return targets


def _named_paths(text: str) -> set[str]:
    words = CODE_SPAN.findall(FENCE.sub("", text))
    # Python blocks run (tests/test_docs_examples.py), and their strings may be other
    # things' paths (a skill's files): only the other blocks are read here.
    words += [m.group(2) for m in FENCE_KIND.finditer(text) if m.group(1) not in ("python", "py")]
    named = set()
    for word in words:
        for found in PATH.finditer(word):
            path = found.group(1).split("::", 1)[0].rstrip(".,;:")
            following = word[found.end() : found.end() + 1]
            if PATTERN.search(path + following) or path.endswith("/.") or path in TOP:
                continue  # a pattern (bench-full-*.md, attrs-methods.<python>.marshal)
            named.add(path)
    return named


@pytest.mark.parametrize("page", PAGES, ids=lambda page: page.name)
def test_every_relative_link_resolves(page: Path) -> None:
    missing = [
        target
        for target in _relative_links(page.read_text())
        if not (page.parent / target).resolve().exists()
    ]
    assert missing == [], f"{page.name} links files that do not exist"


@pytest.mark.parametrize("page", PAGES, ids=lambda page: page.name)
def test_every_repository_file_named_exists(page: Path) -> None:
    missing = sorted(path for path in _named_paths(page.read_text()) if not (ROOT / path).exists())
    assert missing == [], f"{page.name} names files that do not exist"


def test_the_checks_find_what_they_look_for() -> None:
    text = (
        "See [tools](tools.md#a), ![chart](../benchmarks/x.png), [site](https://e.x).\n"
        "`trimcp/transports/base.py`, `tests/a.py::test_b`, `trimcp run examples/s.py:app`,\n"
        "`benchmarks/results/bench-full-*.md`, `python -m benchmarks`\n"
        "```sh\ntrimcp run tests/cli/app_server.py\n```\n"
    )
    assert _relative_links(text) == ["tools.md", "../benchmarks/x.png"]
    assert _named_paths(text) == {
        "trimcp/transports/base.py",
        "tests/a.py",
        "examples/s.py",
        "tests/cli/app_server.py",
    }


def test_the_example_nginx_listens_on_loopback_only() -> None:
    conf = (ROOT / "examples" / "deploy" / "nginx.conf").read_text()
    listens = re.findall(r"^\s*listen\s+([^;\s]+)", conf, re.MULTILINE)
    assert listens, "the example listens somewhere"
    assert all(address.startswith(("127.0.0.1:", "[::1]:")) for address in listens), listens
