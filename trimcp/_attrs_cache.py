"""A bytecode cache for the code attrs and cattrs generate (class methods, converter hooks).

attrs writes each class's ``__init__`` (and friends) as Python source and compiles it when
the class is created. Python caches the bytecode of modules in ``__pycache__``, but not of
this generated code, so every process parsed and compiled it again: for a stdio server's
cold start about a fifth of all the work (callgrind: ~200 M of ~990 M instructions went
to ``compile()``, almost all of it attrs' scripts for trimcp's ~180 classes).

This module keeps those code objects, marshalled, in one file beside trimcp's own
bytecode (``trimcp/__pycache__/attrs-methods.<python tag>.marshal``), keyed by a hash of
the generated script and its file name: a changed class changes its script and so misses
the cache. It covers the classes and cattrs hooks of trimcp (and of trio, outcome and
cattrs, which a server imports right after) only, and is installed where a server starts
(:func:`install`): importing trimcp, or its sans-IO core, patches nothing, and a user's
classes are compiled exactly as attrs always does.

- Like Python's own bytecode, nothing is written when ``sys.dont_write_bytecode`` is set
  (``PYTHONDONTWRITEBYTECODE``, ``-B``) or the directory is not writable; the cache is
  then just not used. :func:`save` writes the file at exit when new entries were made.
- Any problem (another attrs or cattrs whose replaced function has another shape, an
  unreadable or corrupt file, a file of another Python) turns the cache off or ignores
  the file: the classes are then compiled as attrs always does.
  ``TRIMCP_NO_ATTRS_CACHE=1`` turns it off.
- cattrs' structure/unstructure hooks for trimcp's classes, generated and compiled the
  same way at their first use, go through the same cache, and so does the code trimcp
  generates itself (:func:`compile_generated`: the wire types' ``__init__``, serde's hooks).
- The file is trusted as much as the ``.pyc`` files beside it.
"""

from __future__ import annotations

import atexit
import builtins
import hashlib
import importlib.util
import inspect
import marshal
import os
import re
import sys
import tempfile
from collections.abc import Callable, Mapping
from pathlib import Path
from types import CodeType
from typing import Any, Final

#: The file names attrs and cattrs give the code they generate for a covered class
#: ("<attrs generated init MODULE.QUALNAME>", "<cattrs generated structure
#: MODULE.QUALNAME>"); any other code is compiled as usual. Covered: trimcp's modules, and
#: those of the libraries a server imports right after installing the cache (trio,
#: outcome and cattrs make 34 attrs classes, about 5% of a stdio server's cold start when
#: compiled from source). A user's own classes are never among them.
_ATTRS_COVERED: Final = re.compile(r"<attrs generated \S+ (?:trimcp|trio|outcome|cattrs)\.")
_CATTRS_COVERED: Final = re.compile(r"<cattrs generated \S+ (?:trimcp|trio|outcome|cattrs)\.")
#: The file names of the code trimcp generates itself for its own classes
#: ("<trimcp generated KIND MODULE.QUALNAME>": wire types' ``__init__``, serde's hooks).
_TRIMCP_COVERED: Final = re.compile(r"<trimcp generated \S+ trimcp\.")
#: What ``_compile_and_eval`` looks like in the attrs this was written for (name, kind,
#: default of each parameter); another shape turns the cache off.
_EXPECTED: Final = [
    ("script", inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.empty),
    ("globs", inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.empty),
    ("locs", inspect.Parameter.POSITIONAL_OR_KEYWORD, None),
    ("filename", inspect.Parameter.POSITIONAL_OR_KEYWORD, ""),
]
#: A generated ``__hash__`` embeds ``hash()`` of a string, which differs in each process
#: (hash randomisation): such scripts would never hit, so they are not cached.
_VARIES: Final = "def __hash__"
_FORMAT: Final = b"trimcp-attrs-cache-1\n"
#: More entries than this and only those this process used are kept at the next save.
MAX_ENTRIES: Final = 4096

CompileAndEval = Callable[[str, "dict[str, Any] | None", "Mapping[str, object] | None", str], None]


class _Cache:
    def __init__(self, path: Path) -> None:
        self.path = path
        self.codes: dict[str, CodeType] = {}
        self.used: set[str] = set()
        self.hits = 0
        self.misses = 0
        self.dirty = False
        self.loaded = False

    def load(self) -> None:
        self.loaded = True
        try:
            data = self.path.read_bytes()
        except OSError:
            return
        header = _FORMAT + importlib.util.MAGIC_NUMBER
        if not data.startswith(header):
            return
        try:
            codes = marshal.loads(data[len(header) :])
        except (EOFError, ValueError, TypeError):
            return  # a truncated or foreign file: start afresh
        if isinstance(codes, dict):
            self.codes = {
                k: v for k, v in codes.items() if isinstance(k, str) and isinstance(v, CodeType)
            }

    def code(self, script: str, filename: str) -> CodeType:
        if not self.loaded:
            self.load()
        key = hashlib.blake2b(f"{filename}\0{script}".encode(), digest_size=16).hexdigest()
        self.used.add(key)
        code = self.codes.get(key)
        if code is not None:
            self.hits += 1
            return code
        self.misses += 1
        self.dirty = True
        code = self.codes[key] = compile(script, filename, "exec")
        return code

    def save(self) -> bool:
        """Write the file if this process compiled something new. Never raises."""
        if not self.dirty or sys.dont_write_bytecode:
            return False
        keep = self.codes
        if len(keep) > MAX_ENTRIES:
            keep = {k: v for k, v in keep.items() if k in self.used}
        try:
            data = _FORMAT + importlib.util.MAGIC_NUMBER + marshal.dumps(keep)
            self.path.parent.mkdir(exist_ok=True)
            # write then rename: a process reading it at the same time sees either file
            fd, tmp = tempfile.mkstemp(dir=self.path.parent, prefix=".attrs-methods-")
            try:
                os.chmod(tmp, 0o644)  # readable by all, like the .pyc files beside it
                with os.fdopen(fd, "wb") as out:
                    out.write(data)
                os.replace(tmp, self.path)
            except BaseException:
                os.unlink(tmp)
                raise
        except (OSError, ValueError):
            return False
        self.dirty = False
        return True


_cache: _Cache | None = None


def cache_path() -> Path:
    """Where the cache lives: beside trimcp's own bytecode, or ``$TRIMCP_ATTRS_CACHE``
    (a file path: for an install whose ``__pycache__`` is read-only, and for tests)."""
    override = os.environ.get("TRIMCP_ATTRS_CACHE")
    if override:
        return Path(override)
    name = f"attrs-methods.{sys.implementation.cache_tag}.marshal"
    return Path(__file__).parent / "__pycache__" / name


def _fits(function: Callable[..., object]) -> bool:
    """Whether ``function`` is the ``_compile_and_eval`` this module was written against:
    ``(script, globs, locs=None, filename="")``, which compiles and evaluates ``script``."""
    try:
        signature = inspect.signature(function)
    except (TypeError, ValueError):
        return False
    shape = [(p.name, p.kind, p.default) for p in signature.parameters.values()]
    return shape == _EXPECTED


def _not_covered(what: str) -> None:
    import logging

    logging.getLogger("trimcp.attrs_cache").debug(
        "%s is not what trimcp's bytecode cache expects (another attrs or cattrs "
        "version?): that generated code is compiled as usual, without the cache",
        what,
    )


def install() -> None:
    """Route the compilation of trimcp's generated code through the cache (idempotent).

    Called where a server starts (``trimcp/server/__init__.py``, before any of the
    framework's modules, and so nearly all of trimcp's classes, are imported); importing
    the core (``trimcp.protocol``, ``trimcp.types``, ``trimcp.serde``) patches nothing.
    Two private names are replaced for the process, and each only after checking it is
    the one this module was written for (else it is left alone, with a debug log line):

    - ``attr._make._compile_and_eval``, which attrs calls to compile a class's methods;
    - the name ``compile`` in ``cattrs.gen``, which cattrs calls as the built-in for each
      structure/unstructure hook it generates (at its first use: for ``initialize``,
      about 30 at every start).

    Both replacements look at the file name the generated code gets and take only the
    classes of trimcp (and of the libraries it is built on: ``_ATTRS_COVERED``) through the
    cache; anything else (a user's attrs class, a user's cattrs converter's hooks for
    them) goes to the replaced function, exactly as without trimcp.
    """
    global _cache
    if _cache is not None or os.environ.get("TRIMCP_NO_ATTRS_CACHE"):
        return
    try:
        from attr import _make
    except ImportError:  # pragma: no cover - attrs is a dependency
        return
    original: CompileAndEval | None = getattr(_make, "_compile_and_eval", None)
    if original is None or getattr(original, "_trimcp_cache", False):
        return
    if not _fits(original):
        _not_covered(f"attrs' _compile_and_eval {original!r}")
        return
    cache = _cache = _Cache(cache_path())

    def compile_and_eval(
        script: str,
        globs: dict[str, Any] | None,
        locs: Mapping[str, object] | None = None,
        filename: str = "",
    ) -> None:
        if not _ATTRS_COVERED.match(filename) or _VARIES in script:
            original(script, globs, locs, filename)
            return
        eval(cache.code(script, filename), globs, locs)

    compile_and_eval._trimcp_cache = True  # type: ignore[attr-defined]
    _make._compile_and_eval = compile_and_eval
    atexit.register(cache.save)
    _cover_cattrs(cache)


def _cover_cattrs(cache: _Cache) -> None:
    import cattrs.gen

    current = vars(cattrs.gen).get("compile", builtins.compile)
    if current is not builtins.compile:
        if not getattr(current, "_trimcp_cache", False):
            _not_covered(f"cattrs.gen's compile {current!r}")
        return

    def cached_compile(source: Any, filename: Any, mode: str, *args: Any, **kwargs: Any) -> Any:
        if (
            mode == "exec"
            and not args
            and not kwargs
            and isinstance(source, str)
            and isinstance(filename, str)
            and _CATTRS_COVERED.match(filename)
        ):
            return cache.code(source, filename)
        return builtins.compile(source, filename, mode, *args, **kwargs)

    cached_compile._trimcp_cache = True  # type: ignore[attr-defined]
    cattrs.gen.compile = cached_compile  # type: ignore[attr-defined]


def compile_generated(source: str, filename: str) -> CodeType:
    """Compile code trimcp generates itself (``filename``: "<trimcp generated KIND
    MODULE.QUALNAME>"): through the cache once it is installed and for trimcp's own
    classes, else as usual (a user's subclass of a wire type is compiled every time)."""
    if _cache is not None and _TRIMCP_COVERED.match(filename):
        return _cache.code(source, filename)
    return compile(source, filename, "exec")


def save() -> bool:
    """Write the cache now if it has new entries (also done at exit). Never raises."""
    return _cache.save() if _cache is not None else False


def stats() -> dict[str, int]:
    """Hits, misses (compiled this process) and entries of the cache (tests, diagnosis)."""
    if _cache is None:
        return {"hits": 0, "misses": 0, "entries": 0, "installed": 0}
    return {
        "hits": _cache.hits,
        "misses": _cache.misses,
        "entries": len(_cache.codes),
        "installed": 1,
    }
