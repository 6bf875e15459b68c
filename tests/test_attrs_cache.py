"""The bytecode cache of attrs-generated methods (trimcp/_attrs_cache.py), in fresh
processes: a first start fills it, a second compiles nothing, a changed class misses, and
a corrupt file, PYTHONDONTWRITEBYTECODE or TRIMCP_NO_ATTRS_CACHE never break a start."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]

SCRIPT = """
import json, sys
import attrs
import trimcp
import trimcp.types
from trimcp import serde
from trimcp.types import Implementation, InitializeResult, ServerCapabilities
import trimcp._attrs_cache as cache

trimcp.types.load_all()  # every wire class made (they load lazily otherwise)

@attrs.define(kw_only=True)  # mutable: no __hash__, whose script varies per process
class Local:
    x: int
    EXTRA

result = InitializeResult(
    protocol_version="2025-11-25",
    capabilities=ServerCapabilities(),
    server_info=Implementation(name="s", version="1"),
)
data = serde.unstructure(result)
assert serde.structure(data, InitializeResult) == result, "round trip"

print(json.dumps({**cache.stats(), "local": attrs.asdict(Local(x=1)), "repr": repr(result)}))
"""


def start(tmp_path: Path, *, extra: str = "", **env: str) -> dict[str, Any]:
    script = SCRIPT.replace("EXTRA", extra or "pass")
    environment = {
        **{k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"},
        "PYTHONPATH": str(ROOT),
        "TRIMCP_ATTRS_CACHE": str(tmp_path / "cache.marshal"),
        **env,
    }
    done = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        timeout=120,
        env=environment,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def test_a_second_start_compiles_nothing(tmp_path: Path) -> None:
    first = start(tmp_path)
    assert first["installed"] == 1
    assert first["hits"] == 0
    assert first["misses"] > 100  # trimcp's classes, the test's own, and trio's
    assert (tmp_path / "cache.marshal").stat().st_size > 0
    second = start(tmp_path)
    assert second["misses"] == 0
    assert second["hits"] == first["hits"] + first["misses"]
    assert second["repr"] == first["repr"]
    assert second["local"] == {"x": 1}


def test_a_class_with_a_generated_hash_is_compiled_as_usual(tmp_path: Path) -> None:
    extra = "z: int = 0\n@attrs.frozen\nclass Hashed:\n    a: int"
    start(tmp_path, extra=extra)
    again = start(tmp_path, extra=extra)
    assert again["misses"] == 0  # not cached, so no miss either: and no rewrite each start


def test_a_changed_class_gets_its_new_methods(tmp_path: Path) -> None:
    start(tmp_path)
    changed = start(tmp_path, extra="y: int = 7")
    assert changed["misses"] == 1  # only the changed class was compiled again
    assert changed["local"] == {"x": 1, "y": 7}


def test_a_corrupt_cache_is_ignored_and_rewritten(tmp_path: Path) -> None:
    path = tmp_path / "cache.marshal"
    first = start(tmp_path)
    path.write_bytes(path.read_bytes()[:-500])  # truncated, as by a full disk
    again = start(tmp_path)
    assert again["hits"] == 0
    assert again["misses"] == first["misses"]
    path.write_bytes(b"not a cache at all")
    assert start(tmp_path)["misses"] == first["misses"]
    assert start(tmp_path)["misses"] == 0  # each failed read left a good file behind


def test_nothing_is_written_without_bytecode_writing(tmp_path: Path) -> None:
    result = start(tmp_path, PYTHONDONTWRITEBYTECODE="1")
    assert result["misses"] > 100
    assert not (tmp_path / "cache.marshal").exists()


def test_the_cache_can_be_turned_off(tmp_path: Path) -> None:
    result = start(tmp_path, TRIMCP_NO_ATTRS_CACHE="1")
    assert result["installed"] == 0
    assert not (tmp_path / "cache.marshal").exists()


def test_an_unwritable_place_only_costs_the_cache(tmp_path: Path) -> None:
    result = start(tmp_path, TRIMCP_ATTRS_CACHE=str(tmp_path / "missing" / "dir" / "c"))
    assert result["misses"] > 100
