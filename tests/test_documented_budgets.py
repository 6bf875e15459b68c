"""docs/input-limits.md lists every budget with its default, as the code has it."""

from __future__ import annotations

import re
from pathlib import Path

import attrs
import pytest

from trimcp.protocol import modern
from trimcp.server.stateless import StatelessOptions
from trimcp.tasks.store import TaskBudget

PAGE = Path(__file__).resolve().parent.parent / "docs" / "input-limits.md"


def _size(value: int) -> str:
    """How the page writes a default: a count as is, bytes in KiB or MiB when whole."""
    for unit, scale in (("MiB", 1024 * 1024), ("KiB", 1024)):
        if value >= scale and value % scale == 0:
            return f"{value // scale} {unit}"
    return str(value)


def _budget_rows() -> dict[str, str]:
    rows: dict[str, str] = {}
    for line in PAGE.read_text().splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if len(cells) == 3 and "`" in cells[1]:
            names = re.findall(r"`([\w.]+)`", cells[1])
            defaults = [part.strip() for part in cells[2].split(";")]
            for name, default in zip(names, defaults, strict=False):
                rows[name] = default
    return rows


#: Every budget: (the name the page uses, the default the code has).
BUDGETS: list[tuple[str, int]] = [
    ("META_CACHE_ENTRIES", modern.META_CACHE_ENTRIES),
    ("META_CACHE_BYTES", modern.META_CACHE_BYTES),
    ("META_CACHE_ENTRY_BYTES", modern.META_CACHE_ENTRY_BYTES),
    *(
        (f"StatelessOptions.{name}", getattr(StatelessOptions(), name))
        for name in ("listen_max_streams", "listen_max_streams_per_principal")
    ),
    *(
        (f"TaskBudget.{field.name}", field.default)
        for field in attrs.fields(TaskBudget)
        if isinstance(field.default, int)
    ),
]


@pytest.mark.parametrize(("name", "default"), BUDGETS, ids=[name for name, _ in BUDGETS])
def test_each_budget_is_documented_with_its_default(name: str, default: int) -> None:
    rows = _budget_rows()
    assert name in rows, f"docs/input-limits.md does not list {name}"
    assert rows[name] == _size(default), f"{name}: the page says {rows[name]}, the code {default}"
