"""A bytecode cache for the code attrs and cattrs generate (class methods, converter hooks).

attrs writes each class's ``__init__`` (and friends) as Python source and compiles it when
the class is created. Python caches the bytecode of modules in ``__pycache__``, but not of
this generated code, so every process parsed and compiled it again: for a stdio server's
cold start about a fifth of all the work (callgrind: ~200 M of ~990 M instructions went
to ``compile()``, almost all of it attrs' scripts for trimcp's ~180 classes).

This module keeps those code objects, marshalled, in one file beside trimcp's own
bytecode (``trimcp/__pycache__/attrs-methods.<python tag>.marshal``), keyed by a hash of
the generated script and its file name: a changed class changes its script and so misses
the cache. Every attrs class made once trimcp is imported goes through it (trio's
included, imported after trimcp by a server); other code that attrs compiles, and attrs'
behaviour, are untouched.

- Like Python's own bytecode, nothing is written when ``sys.dont_write_bytecode`` is set
  (``PYTHONDONTWRITEBYTECODE``, ``-B``) or the directory is not writable; the cache is
  then just not used. :func:`save` writes the file at exit when new entries were made.
- Any problem (another attrs version without the hook used here, an unreadable or
  corrupt file, a file of another Python) turns the cache off or ignores the file: the
  classes are then compiled as attrs always does. ``TRIMCP_NO_ATTRS_CACHE=1`` turns it off.
- cattrs' structure/unstructure hooks, generated and compiled the same way at their
  first use, go through the same cache (:func:`cover_cattrs`).
- The file is trusted as much as the ``.pyc`` files beside it.
"""

from __future__ import annotations

import atexit
import builtins
import hashlib
import importlib.util
import marshal
import os
import sys
import tempfile
from collections.abc import Callable, Mapping
from pathlib import Path
from types import CodeType
from typing import Any, Final

#: The file names attrs gives the code it generates ("<attrs generated methods
#: MODULE.QUALNAME>"); any other code goes to attrs' own step unchanged.
_GENERATED: Final = "<attrs generated "
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


def install() -> None:
    """Route attrs' compilation of generated methods through the cache (idempotent).

    Called by ``trimcp/__init__.py`` before any trimcp class is made.
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
        return  # an attrs without this hook: compile as attrs does
    cache = _cache = _Cache(cache_path())

    def compile_and_eval(
        script: str,
        globs: dict[str, Any] | None,
        locs: Mapping[str, object] | None = None,
        filename: str = "",
    ) -> None:
        if not filename.startswith(_GENERATED) or _VARIES in script:
            original(script, globs, locs, filename)
            return
        eval(cache.code(script, filename), globs, locs)

    compile_and_eval._trimcp_cache = True  # type: ignore[attr-defined]
    _make._compile_and_eval = compile_and_eval
    atexit.register(cache.save)


def cover_cattrs() -> None:
    """Route the compilation of cattrs' generated hooks through the cache too.

    ``cattrs.gen`` compiles each structure/unstructure hook it generates from source, at
    its first use (for ``initialize``, the first ~30 at every start). It calls the
    built-in ``compile`` from its module namespace; a ``compile`` of that module's own
    takes the generated scripts (file names ``"<cattrs generated ...>"``) through the
    cache and passes everything else to the built-in. Called by :mod:`trimcp.serde`.
    """
    if _cache is None:
        return
    import cattrs.gen

    if getattr(getattr(cattrs.gen, "compile", None), "_trimcp_cache", False):
        return
    cache = _cache

    def cached_compile(source: Any, filename: Any, mode: str, *args: Any, **kwargs: Any) -> Any:
        if (
            mode == "exec"
            and not args
            and not kwargs
            and isinstance(source, str)
            and isinstance(filename, str)
            and filename.startswith("<cattrs generated ")
        ):
            return cache.code(source, filename)
        return builtins.compile(source, filename, mode, *args, **kwargs)

    cached_compile._trimcp_cache = True  # type: ignore[attr-defined]
    cattrs.gen.compile = cached_compile  # type: ignore[attr-defined]


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
