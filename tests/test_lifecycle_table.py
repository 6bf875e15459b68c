"""docs/concurrency.md's lifecycle table: every kind of outstanding work is a row, and every
row names tests that exist (a row whose proof was renamed or deleted fails here)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PAGE = ROOT / "docs" / "concurrency.md"
SECTION = "## One lifecycle: every piece of outstanding work"
COLUMNS = ["kind", "owner (who holds its scope)", "cancelled by", "the peer sees", "bound", "tests"]
#: The kinds the issue that made the table asked for, each a row (by its first words).
KINDS = [
    "inbound request, 2025 session",
    "inbound request, 2026-07-28",
    "outbound request",
    "a call the server runs as a task",
    "a task the client asked for",
    "a task the client runs for the server",
    "task input across replicas",
    "MRTR round",
    "2026 listen stream",
    "2025 GET stream",
    "resumed stream",
    "followed stream",
    "relayed call through the proxy",
    "a call relayed to another replica",
]
TEST_REF = re.compile(r"`(tests/[\w/]+\.py)::(\w+)`")


def _rows() -> list[list[str]]:
    text = PAGE.read_text(encoding="utf-8")
    assert SECTION in text, f"{PAGE} lost its section {SECTION!r}"
    after = text.split(SECTION, 1)[1]
    block = after[after.index("\n|") + 1 :].split("\n\n", 1)[0].splitlines()
    cells = [[cell.strip() for cell in line.strip("|").split(" | ")] for line in block]
    assert cells[0] == COLUMNS
    return cells[2:]


def _defines(path: Path, name: str) -> bool:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return any(
        isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name == name
        for node in ast.walk(tree)
    )


def test_every_kind_of_outstanding_work_is_a_row() -> None:
    kinds = [row[0] for row in _rows()]
    missing = [kind for kind in KINDS if not any(k.startswith(kind) for k in kinds)]
    assert not missing, f"docs/concurrency.md's lifecycle table has no row for {missing}"


@pytest.mark.parametrize("row", _rows(), ids=lambda row: row[0][:40])
def test_every_row_names_tests_that_exist(row: list[str]) -> None:
    assert len(row) == len(COLUMNS), f"row {row[0]!r} has {len(row)} cells, not {len(COLUMNS)}"
    refs = TEST_REF.findall(row[-1])
    assert refs, f"row {row[0]!r} names no test (`tests/FILE.py::test_name`)"
    for file, name in refs:
        path = ROOT / file
        assert path.is_file(), f"row {row[0]!r} names {file}, which does not exist"
        assert _defines(path, name), f"row {row[0]!r} names {file}::{name}, which is not there"
