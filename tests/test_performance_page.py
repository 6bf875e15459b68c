"""docs/performance.md shows one dated run: the tables under "Latest results" are those of
the suite's report that the section names, as the suite wrote them (issue 35: figures of
different dates stood side by side)."""

from __future__ import annotations

import re
from pathlib import Path

from trimcp.protocol.versions import STATELESS_VERSIONS, SUPPORTED_VERSIONS

ROOT = Path(__file__).resolve().parent.parent
PAGE = ROOT / "docs" / "performance.md"


def _section(text: str, heading: str) -> str:
    start = text.index(f"\n## {heading}\n")
    following = text.find("\n## ", start + 1)
    return text[start : following if following != -1 else len(text)]


def _table_lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith("|")]


def test_the_latest_results_are_one_report_of_the_suite_as_it_wrote_them() -> None:
    section = _section(PAGE.read_text(), "Latest results")
    named = set(re.findall(r"`(benchmarks/results/bench-full-(\d{8})-\d{6}\.md)`", section))
    assert len(named) == 1, f"the section must name one report, it names {sorted(named)}"
    ((report, day),) = named
    text = (ROOT / report).read_text()
    when = re.search(r"^- when: (\d{4})-(\d{2})-(\d{2})T", text, re.MULTILINE)
    assert when is not None
    assert "".join(when.groups()) == day
    # The section is dated with the report's day, and names no other (a protocol revision
    # such as 2026-07-28, in the workloads' titles, is a name, not a date).
    dated = f"{day[:4]}-{day[4:6]}-{day[6:]}"
    revisions = {*SUPPORTED_VERSIONS, *STATELESS_VERSIONS}
    assert set(re.findall(r"\b\d{4}-\d{2}-\d{2}\b", section)) - revisions == {dated}
    assert _table_lines(section) == _table_lines(text)
