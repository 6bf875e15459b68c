"""The lazily loaded names of trimcp, trimcp.types, trimcp.server, trimcp.auth and
trimcp.stores are written up to three times in each package's ``__init__.py``: the map
``__getattr__`` loads from (name -> module), the ``TYPE_CHECKING`` imports type checkers
read, and ``__all__``. These tests pin the three to each other, and to what each name
really is at run time, so that adding a name to one list and not the others fails here
instead of in a user's type checker or ``import *``."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]

#: package -> the name of its lazy map (None: ``__getattr__`` names its one lazy name)
PACKAGES = {
    "trimcp": "_EXPORTS",
    "trimcp.types": "_LAZY",
    "trimcp.server": "_EXPORTS",
    "trimcp.auth": "_EXPORTS",
    "trimcp.stores": None,
}

Where = tuple[str, str]  # (module, name there)


def _source(package: str) -> str:
    return (ROOT / package.replace(".", "/") / "__init__.py").read_text()


def lazy_map(source: str, variable: str | None) -> dict[str, Where]:
    """The map ``__getattr__`` loads from, as name -> (module, name there)."""
    if variable is None:
        return {}
    for node in ast.parse(source).body:
        target: ast.expr
        value: ast.expr | None
        if isinstance(node, ast.AnnAssign):
            target, value = node.target, node.value
        elif isinstance(node, ast.Assign) and len(node.targets) == 1:
            target, value = node.targets[0], node.value
        else:
            continue
        if isinstance(target, ast.Name) and target.id == variable and value is not None:
            raw: dict[str, Any] = ast.literal_eval(value)
            return {
                name: (where, name) if isinstance(where, str) else (where[0], where[1])
                for name, where in raw.items()
            }
    raise AssertionError(f"no {variable} in the source")


def type_checking_imports(source: str) -> dict[str, Where]:
    """The ``if TYPE_CHECKING:`` block's imports, as name -> (module, name there)."""
    found: dict[str, Where] = {}
    for node in ast.parse(source).body:
        if isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING":
            for statement in node.body:
                assert isinstance(statement, ast.ImportFrom), ast.unparse(statement)
                assert statement.module is not None
                for alias in statement.names:
                    found[alias.asname or alias.name] = (statement.module, alias.name)
    return found


def drift(source: str, variable: str | None, exported: list[str], eager: set[str]) -> list[str]:
    """What disagrees between the three lists of one package (empty: nothing).

    ``exported`` is its ``__all__``; ``eager`` the names its module defines at import.
    """
    lazy = lazy_map(source, variable)
    typed = type_checking_imports(source)
    problems = []
    if variable is not None:
        for name in sorted(lazy.keys() - typed.keys()):
            problems.append(f"{name}: in {variable}, not among the TYPE_CHECKING imports")
        for name in sorted(typed.keys() - lazy.keys()):
            problems.append(f"{name}: imported under TYPE_CHECKING, not in {variable}")
        for name in sorted(lazy.keys() & typed.keys()):
            if lazy[name] != typed[name]:
                problems.append(
                    f"{name}: {variable} says {lazy[name]}, TYPE_CHECKING {typed[name]}"
                )
    names = lazy.keys() | typed.keys()
    for name in sorted(names - set(exported)):
        problems.append(f"{name}: loaded lazily, not in __all__")
    for name in sorted(set(exported) - names - eager):
        problems.append(f"{name}: in __all__, neither defined nor loaded lazily")
    return problems


def _eager(package: str) -> set[str]:
    module = importlib.import_module(package)
    lazy = type_checking_imports(_source(package)) | lazy_map(_source(package), PACKAGES[package])
    return {name for name in vars(module) if name not in lazy}


@pytest.mark.parametrize("package", list(PACKAGES))
def test_the_lazy_map_type_checking_imports_and_all_agree(package: str) -> None:
    module = importlib.import_module(package)
    problems = drift(_source(package), PACKAGES[package], list(module.__all__), _eager(package))
    assert problems == []


@pytest.mark.parametrize("package", list(PACKAGES))
def test_every_lazy_name_resolves_to_what_the_lists_say(package: str) -> None:
    module = importlib.import_module(package)
    source = _source(package)
    wanted = type_checking_imports(source) | lazy_map(source, PACKAGES[package])
    assert wanted  # each package has lazy names
    for name, (where, there) in wanted.items():
        assert getattr(module, name) is getattr(importlib.import_module(where), there), name
    for name in module.__all__:
        getattr(module, name)  # every exported name exists, lazily or not


def test_drift_is_caught() -> None:
    """The checker itself: each kind of drift in a real package's source is reported."""
    source = _source("trimcp.server")
    exported = list(importlib.import_module("trimcp.server").__all__)
    eager = _eager("trimcp.server")
    assert drift(source, "_EXPORTS", exported, eager) == []
    line = "    from trimcp.server.tools import ToolError as ToolError\n"
    assert line in source
    assert drift(source.replace(line, ""), "_EXPORTS", exported, eager) == [
        "ToolError: in _EXPORTS, not among the TYPE_CHECKING imports"
    ]
    entry = '    "ToolError": ("trimcp.server.tools", "ToolError"),\n'
    assert entry in source
    moved = source.replace(entry, '    "ToolError": ("trimcp.server.app", "ToolError"),\n')
    assert drift(moved, "_EXPORTS", exported, eager) == [
        "ToolError: _EXPORTS says ('trimcp.server.app', 'ToolError'), "
        "TYPE_CHECKING ('trimcp.server.tools', 'ToolError')"
    ]
    assert drift(source, "_EXPORTS", [n for n in exported if n != "ToolError"], eager) == [
        "ToolError: loaded lazily, not in __all__"
    ]
    assert drift(source, "_EXPORTS", [*exported, "Gone"], eager) == [
        "Gone: in __all__, neither defined nor loaded lazily"
    ]
