"""pyproject.toml says what is true: the license (SPDX, with its file), and the test
extra names, pinned, every package the tests import (issue 16: it allowed mcp>=1.20 while
the tests need 2.x, and omitted pydantic, anyio, uvicorn, cryptography)."""

from __future__ import annotations

import ast
import re
import sys
import tomllib
from importlib import metadata
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
#: Peers whose behaviour the tests check: pinned exactly (a bump is a deliberate commit).
PINNED_PEERS = {
    "mcp",
    "mcp-types",
    "pydantic",
    "anyio",
    "uvicorn",
    "cryptography",
    "pyjwt",
    "jsonschema",
    "hiredis",
    "fastmcp-slim",
}


def _name(requirement: str) -> str:
    return re.split(r"[\[<>=!~; ]", requirement, maxsplit=1)[0].lower().replace("_", "-")


def _requirements(*extras: str) -> dict[str, str]:
    project = PYPROJECT["project"]
    found = {_name(r): r for r in project["dependencies"]}
    for extra in extras:
        found.update({_name(r): r for r in project["optional-dependencies"][extra]})
    return found


def test_the_license_is_an_spdx_expression_with_its_file() -> None:
    project = PYPROJECT["project"]
    assert project["license"] == "MIT"
    assert project["license-files"] == ["LICENSE"]
    assert (ROOT / "LICENSE").read_text().startswith("MIT License\n")
    # setuptools reads SPDX strings and license-files from 77 on (older ones warn or fail).
    assert "setuptools>=77" in PYPROJECT["build-system"]["requires"]


def test_test_peers_are_pinned_to_what_is_installed() -> None:
    requirements = _requirements("test")
    for peer in sorted(PINNED_PEERS):
        assert peer in requirements, f"the test extra does not name {peer}"
        pinned = requirements[peer].split("==", 1)
        assert len(pinned) == 2, f"{requirements[peer]!r}: pin the test peer with =="
        assert metadata.version(peer) == pinned[1].strip(), (
            f"{peer} {metadata.version(peer)} is installed but the test extra pins "
            f"{pinned[1]}: reinstall with pip install -e '.[test]'"
        )
    assert metadata.version("mcp").startswith("2."), "the tests need the 2.x SDK"


def _imported_top_modules() -> set[str]:
    names: set[str] = set()
    for path in (ROOT / "tests").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                names.update(alias.name.split(".")[0] for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names.add(node.module.split(".")[0])
    return names


def test_every_package_the_tests_import_is_declared() -> None:
    declared = set(_requirements("test", "redis", "auth"))
    distributions = metadata.packages_distributions()
    missing = []
    for module in sorted(_imported_top_modules()):
        if module in sys.stdlib_module_names or module in ("tests", "trimcp", "benchmarks"):
            continue
        dists = {d.lower().replace("_", "-") for d in distributions.get(module, [])}
        if not dists:
            continue  # a test-local module (a peer script's sibling), not a package
        if not dists & declared:
            missing.append(f"{module} (from {', '.join(sorted(dists))})")
    assert not missing, f"tests import undeclared packages: {missing}"
