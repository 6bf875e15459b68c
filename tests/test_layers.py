"""The layers hold: trimcp's packages import only sideways or down, at module level.

The diagram (docs/architecture.md draws it) is :data:`FLOORS`, lowest first. A module's
imports that run when it is imported (module level, outside ``if TYPE_CHECKING:``) may name
only packages on its own floor or below; an import inside a function runs later and is how
an upper floor's *implementation* is reached on purpose, never its interface. No two
packages import each other in a cycle either way. This extends the sans-IO test
(``trimcp/protocol`` and ``trimcp/types`` import no I/O library) to the whole tree.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1] / "trimcp"

#: trimcp's floors, lowest first; a unit is a top-level package or module of trimcp, or a
#: subpackage of ``transports``. Units on one floor may import each other (no cycle).
FLOORS: tuple[tuple[str, ...], ...] = (
    # the ground floor: no trimcp imports but these
    (
        "_version",
        "_validators",
        "_jsontypes",
        "_record",
        "_sealed",
        "_groups",
        "_signals",
        "_fastio",
        "_attrs_cache",
        "errors",
    ),
    ("types", "serde"),
    ("protocol",),
    ("http",),  # the small HTTP/1.1 client, URLs, HTTP errors, Host/Origin checks
    ("auth",),
    ("session", "tasks"),
    ("stores",),
    ("transports",),  # stdio, memory, websocket, ndjson
    ("transports/http_client",),
    ("transports/http_server",),
    ("authserver",),  # trimcp's own authorization server, served by the HTTP app
    ("server", "client", "lowlevel"),
    ("proxy", "testing", "telemetry"),  # telemetry: middleware for both frameworks
    ("cli", "__main__", "trimcp"),
)

FLOOR: dict[str, int] = {unit: level for level, units in enumerate(FLOORS) for unit in units}


def unit_of(module: str) -> str:
    """``trimcp.transports.http_server.app`` -> ``transports/http_server``."""
    parts = module.split(".")[1:]
    if not parts:
        return "trimcp"
    if parts[0] == "transports" and len(parts) > 1 and (ROOT / "transports" / parts[1]).is_dir():
        return f"transports/{parts[1]}"
    return parts[0]


def _module_name(path: Path) -> tuple[str, bool]:
    rel = path.relative_to(ROOT.parent).with_suffix("").parts
    is_package = rel[-1] == "__init__"
    return ".".join(rel[:-1] if is_package else rel), is_package


def _is_type_checking(test: ast.expr) -> bool:
    if isinstance(test, ast.Name):
        return test.id == "TYPE_CHECKING"
    return isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"


def import_time_imports(source: str, module: str, is_package: bool) -> list[str]:
    """The trimcp modules ``module`` imports when it is imported."""
    found: list[str] = []

    def visit(body: list[ast.stmt]) -> None:
        for node in body:
            if isinstance(node, ast.Import):
                found.extend(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = module.split(".")
                    if not is_package:
                        base = base[:-1]
                    base = base[: len(base) - (node.level - 1)]
                    target = ".".join([*base, *([node.module] if node.module else [])])
                else:
                    target = node.module or ""
                if target != "trimcp":  # the root package imports nothing until asked
                    found.append(target)
                # ``from trimcp import server`` imports the subpackage
                found.extend(f"{target}.{alias.name}" for alias in node.names)
            elif isinstance(node, ast.If):
                if not _is_type_checking(node.test):
                    visit(node.body)
                visit(node.orelse)
            elif isinstance(node, ast.Try):
                visit(node.body)
                for handler in node.handlers:
                    visit(handler.body)
                visit(node.orelse)
                visit(node.finalbody)
            elif isinstance(node, ast.With):
                visit(node.body)

    visit(ast.parse(source).body)
    return [name for name in found if name == "trimcp" or name.startswith("trimcp.")]


def _known_units() -> set[str]:
    units = set()
    for path in ROOT.rglob("*.py"):
        module, _ = _module_name(path)
        units.add(unit_of(module))
    return units


def package_edges() -> dict[tuple[str, str], list[str]]:
    """(importer unit, imported unit) -> the module imports behind the edge."""
    known = _known_units()
    edges: dict[tuple[str, str], list[str]] = defaultdict(list)
    for path in sorted(ROOT.rglob("*.py")):
        module, is_package = _module_name(path)
        here = unit_of(module)
        for target in import_time_imports(path.read_text(), module, is_package):
            there = unit_of(target)
            if there != here and there in known:
                edges[(here, there)].append(f"{module} -> {target}")
    return edges


def test_every_unit_is_on_a_floor() -> None:
    assert sorted(_known_units() - set(FLOOR)) == []


def test_no_import_goes_up() -> None:
    upward = {
        edge: modules
        for edge, modules in package_edges().items()
        if FLOOR[edge[1]] > FLOOR[edge[0]]
    }
    assert upward == {}


def test_no_cycle_between_packages() -> None:
    graph: dict[str, set[str]] = defaultdict(set)
    for here, there in package_edges():
        graph[here].add(there)

    def reaches(start: str, goal: str) -> bool:
        seen, todo = {start}, [start]
        while todo:
            for nxt in graph[todo.pop()]:
                if nxt == goal:
                    return True
                if nxt not in seen:
                    seen.add(nxt)
                    todo.append(nxt)
        return False

    cycles = sorted((a, b) for a, b in package_edges() if reaches(b, a))
    assert cycles == []


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("from trimcp.stores import base\n", ["trimcp.stores", "trimcp.stores.base"]),
        ("if TYPE_CHECKING:\n    import trimcp.server\n", []),
        ("def f():\n    import trimcp.server\n", []),
        ("from . import app\n", ["trimcp.server", "trimcp.server.app"]),
    ],
)
def test_the_scanner_reads_import_time_imports(source: str, expected: list[str]) -> None:
    assert import_time_imports(source, "trimcp.server.context", is_package=False) == expected


def test_an_upward_import_would_be_caught() -> None:
    # The check itself: an import from the protocol core up to the session engine.
    source = "from trimcp.session import Session\n"
    targets = import_time_imports(source, "trimcp.protocol.x", is_package=False)
    assert any(FLOOR[unit_of(t)] > FLOOR["protocol"] for t in targets)
