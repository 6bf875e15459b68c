"""The bytecode cache of attrs-generated methods (trimcp/_attrs_cache.py), in fresh
processes: a first start fills it, a second compiles nothing, a changed class misses, and
a corrupt file, PYTHONDONTWRITEBYTECODE or TRIMCP_NO_ATTRS_CACHE never break a start.
It is installed where a server starts (importing the core patches nothing), covers
trimcp's classes and never a user's, and turns itself off when what it replaces is not
what it was written for."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]

#: Runs before trimcp is imported: records each file name that reaches attrs' own
#: compile step (what trimcp's cache sees as the function it replaces).
RECORD = """
import attr._make
_attrs_own = attr._make._compile_and_eval

def recording(script, globs, locs=None, filename=""):
    seen.append(filename)
    _attrs_own(script, globs, locs, filename)

attr._make._compile_and_eval = recording
"""

SCRIPT = """
import json, sys
import attrs
seen = []
RECORD_HERE
import trimcp.server  # a server starts: the cache is installed
import trimcp.types
from trimcp import serde
from trimcp.types import Implementation, InitializeResult, ServerCapabilities
import trimcp._attrs_cache as cache

trimcp.types.load_all()  # every wire class made (they load lazily otherwise)

@attrs.define(kw_only=True)  # the user's own class
class Local:
    x: int

# A class in a module attrs names as trimcp's, to show that a changed class misses.
PROBE = '''
@attrs.define(kw_only=True)  # mutable: no __hash__, whose script varies per process
class Probe:
    x: int
    EXTRA
'''
probe = {"__name__": "trimcp.cache_probe", "attrs": attrs}
exec(PROBE, probe)

result = InitializeResult(
    protocol_version="2025-11-25",
    capabilities=ServerCapabilities(),
    server_info=Implementation(name="s", version="1"),
)
data = serde.unstructure(result)
assert serde.structure(data, InitializeResult) == result, "round trip"
cache.save()

print(json.dumps({
    **cache.stats(),
    "local": attrs.asdict(Local(x=1)),
    "probe": attrs.asdict(probe["Probe"](x=1)),
    "repr": repr(result),
    "by_attrs": [f for f in seen if "Local" in f or "Probe" in f],
}))
"""


def run(tmp_path: Path, script: str, **env: str) -> dict[str, Any]:
    """``script`` in a fresh interpreter with its own cache file: its last output line,
    as JSON, and its stderr."""
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
    result: dict[str, Any] = json.loads(done.stdout.splitlines()[-1])
    result["stderr"] = done.stderr
    return result


def start(tmp_path: Path, *, extra: str = "", **env: str) -> dict[str, Any]:
    script = SCRIPT.replace("EXTRA", extra or "pass").replace("RECORD_HERE", RECORD)
    return run(tmp_path, script, **env)


def test_a_second_start_compiles_nothing(tmp_path: Path) -> None:
    first = start(tmp_path)
    assert first["installed"] == 1
    assert first["hits"] == 0
    assert first["misses"] > 100  # trimcp's classes and trio's
    assert (tmp_path / "cache.marshal").stat().st_size > 0
    second = start(tmp_path)
    assert second["misses"] == 0
    assert second["hits"] == first["hits"] + first["misses"]
    assert second["repr"] == first["repr"]
    assert second["local"] == {"x": 1}
    assert second["probe"] == {"x": 1}


def test_a_users_class_is_compiled_by_attrs_and_never_cached(tmp_path: Path) -> None:
    first = start(tmp_path)
    # attrs' own step compiled the user's class (both starts), never trimcp's class
    assert first["by_attrs"] == ["<attrs generated methods __main__.Local>"]
    assert start(tmp_path)["by_attrs"] == first["by_attrs"]
    data = (tmp_path / "cache.marshal").read_bytes()
    assert b"__main__.Local" not in data  # a cached code object holds its file name
    assert b"trimcp.cache_probe.Probe" in data
    assert b"trimcp.types." in data


def test_a_class_with_a_generated_hash_is_compiled_as_usual(tmp_path: Path) -> None:
    extra = "z: int = 0\n@attrs.frozen\nclass Hashed:\n    a: int"  # a trimcp module's
    start(tmp_path, extra=extra)
    again = start(tmp_path, extra=extra)
    assert again["misses"] == 0  # not cached, so no miss either: and no rewrite each start


def test_a_changed_class_gets_its_new_methods(tmp_path: Path) -> None:
    start(tmp_path)
    changed = start(tmp_path, extra="y: int = 7")
    assert changed["misses"] == 1  # only the changed class was compiled again
    assert changed["probe"] == {"x": 1, "y": 7}


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


CORE = """
import builtins, json
import attr._make, cattrs.gen
attrs_own = attr._make._compile_and_eval
import trimcp, trimcp.protocol, trimcp.types, trimcp.serde
from trimcp.types import Implementation
trimcp.types.load_all()
trimcp.serde.structure({"name": "n", "version": "1"}, Implementation)  # a cattrs hook made
core = [attr._make._compile_and_eval is attrs_own, "compile" not in vars(cattrs.gen)]
import trimcp.server
server = [attr._make._compile_and_eval is attrs_own, "compile" not in vars(cattrs.gen)]
print(json.dumps({"core": core, "server": server}))
"""


def test_importing_the_core_patches_nothing(tmp_path: Path) -> None:
    result = run(tmp_path, CORE)
    assert result["core"] == [True, True]  # attrs and cattrs.gen as they came
    assert result["server"] == [False, False]  # a server starts: the cache is installed


#: attrs' _compile_and_eval with another shape (as a future attrs might have), put in
#: place before trimcp is imported; it still compiles, so classes work.
OTHER_ATTRS = """
import attr._make
import logging
logging.basicConfig(level=logging.DEBUG, format="LOG %(name)s %(message)s")

def other(script, globs, locs=None, filename="", *, optimize=-1):
    eval(compile(script, filename, "exec", optimize=optimize), globs, locs)

attr._make._compile_and_eval = other
"""

#: cattrs.gen's compile replaced by someone else before trimcp is imported.
OTHER_CATTRS = """
import builtins, cattrs.gen, logging
logging.basicConfig(level=logging.DEBUG, format="LOG %(name)s %(message)s")

def someone_elses(*args, **kwargs):
    return builtins.compile(*args, **kwargs)

cattrs.gen.compile = someone_elses
"""


def test_another_attrs_signature_turns_the_cache_off(tmp_path: Path) -> None:
    result = run(tmp_path, SCRIPT.replace("EXTRA", "pass").replace("RECORD_HERE", OTHER_ATTRS))
    assert result["installed"] == 0
    assert result["misses"] == result["hits"] == 0
    assert result["local"] == result["probe"] == {"x": 1}  # classes made and working
    assert not (tmp_path / "cache.marshal").exists()
    assert "LOG trimcp.attrs_cache attrs' _compile_and_eval" in result["stderr"]


def test_another_cattrs_compile_is_left_alone(tmp_path: Path) -> None:
    script = SCRIPT.replace("EXTRA", "pass").replace("RECORD_HERE", OTHER_CATTRS)
    name = "'compile': cattrs.gen.compile.__name__,"
    script = script.replace("print(json.dumps({", "print(json.dumps({" + name)
    script = script.replace("import json, sys", "import json, sys, cattrs.gen")
    with_hooks = run(tmp_path, script)
    assert with_hooks["compile"] == "someone_elses"  # not replaced by trimcp
    assert "LOG trimcp.attrs_cache cattrs.gen's compile" in with_hooks["stderr"]
    plain = start(tmp_path / "plain")
    # attrs' classes are still cached; the cattrs hooks the round trip made are not
    assert with_hooks["installed"] == 1
    assert with_hooks["misses"] < plain["misses"]


def test_a_cache_of_another_python_is_ignored(tmp_path: Path) -> None:
    """The file carries this interpreter's bytecode magic number after its format line,
    and a file with another one (written by another Python, whose code objects this one
    must not run) is not loaded, even when its contents would load."""
    path = tmp_path / "cache.marshal"
    first = start(tmp_path)
    data = path.read_bytes()
    header = b"trimcp-attrs-cache-1\n" + importlib.util.MAGIC_NUMBER
    assert data.startswith(header)
    other = bytes([importlib.util.MAGIC_NUMBER[0] ^ 0xFF]) + importlib.util.MAGIC_NUMBER[1:]
    path.write_bytes(b"trimcp-attrs-cache-1\n" + other + data[len(header) :])
    again = start(tmp_path)
    assert (again["hits"], again["misses"]) == (0, first["misses"])


#: trimcp's own generated code (a wire class's __init__, serde's hooks) beside a user's
#: subclass of a wire type, whose __init__ trimcp also makes.
OWN_CODE = """
import json
import attrs
import trimcp._attrs_cache as cache
cache.install()
import trimcp.types as t
from trimcp import serde

@attrs.frozen(kw_only=True, repr=False, eq=False)
class Tagged(t.TextContent):  # the user's own subclass of a wire type
    tag: str = "x"

Tagged(text="a")
serde.structure(serde.unstructure(t.Implementation(name="n", version="1")), t.Implementation)
cache.save()
print(json.dumps(cache.stats()))
"""


def test_trimcp_own_generated_code_is_cached_and_a_users_never(tmp_path: Path) -> None:
    first = run(tmp_path, OWN_CODE)
    data = (tmp_path / "cache.marshal").read_bytes()
    for kind in ("slot-init", "fast-structure", "unstructure"):
        assert f"<trimcp generated {kind} trimcp.types.".encode() in data, kind
    assert b"__main__.Tagged" not in data
    second = run(tmp_path, OWN_CODE)
    assert second["misses"] == 0
    assert second["hits"] == first["hits"] + first["misses"]
