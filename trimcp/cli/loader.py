"""Find the server a ``trimcp run`` target names: ``file.py[:attr]`` or ``module[:attr]``.

Importing the target runs its module-level code (as ``python file.py`` would, except that
``__name__`` is not ``"__main__"``, so an ``if __name__ == "__main__": app.run()`` block
does not start a second server).
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import os
import sys
import traceback
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

import attrs

from trimcp._record import Record
from trimcp.cli.errors import CliError
from trimcp.server.app import Server
from trimcp.server.lowlevel import LowLevelServer
from trimcp.server.serving import RunCall


@attrs.frozen(repr=False, eq=False)
class Target(Record):
    """What the command line named: a file or a module, and maybe an attribute in it."""

    file: Path | None
    module: str | None
    attr: str | None

    @property
    def display(self) -> str:
        where = str(self.file) if self.file is not None else str(self.module)
        return f"{where}:{self.attr}" if self.attr else where


def parse_target(text: str) -> Target:
    """Split ``text`` into a file or module and an optional ``:attr``.

    A target that ends in ``.py``, holds a path separator or names an existing file is a
    file; anything else is a module name (imported with the current directory on the path).
    """
    where, attr = text, None
    head, sep, tail = text.rpartition(":")
    if sep and head and tail.isidentifier():
        where, attr = head, tail
    elif sep and head and not os.path.exists(text):
        raise CliError(f"{tail!r} in {text!r} is not an attribute name")
    if where.endswith(".py") or "/" in where or os.sep in where or os.path.isfile(where):
        return Target(Path(where).resolve(), None, attr)
    if not all(part.isidentifier() for part in where.split(".")):
        raise CliError(f"{where!r} is neither a file nor a module name")
    return Target(None, where, attr)


def import_target(target: Target) -> ModuleType:
    """Import the file or module of ``target`` (its directory goes first on ``sys.path``,
    so it can import its neighbours). Errors in the user's code propagate as they are."""
    if target.file is None:
        assert target.module is not None
        if os.getcwd() not in sys.path:
            sys.path.insert(0, os.getcwd())
        try:
            return importlib.import_module(target.module)
        except ModuleNotFoundError as exc:
            if exc.name is not None and target.module.startswith(exc.name):
                raise CliError(f"no module named {target.module!r}") from None
            raise import_failed(target, exc, None) from exc
        except Exception as exc:
            raise import_failed(target, exc, None) from exc
    path = target.file
    if not path.is_file():
        raise CliError(f"no such file: {path}")
    directory = str(path.parent)
    if directory not in sys.path:
        sys.path.insert(0, directory)
    # A unique name keeps the file from shadowing (or being shadowed by) a real module.
    name = (
        path.stem
        if path.stem.isidentifier() and path.stem not in sys.modules
        else ("__trimcp_app__")
    )
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise CliError(f"cannot import {path}")
    module = importlib.util.module_from_spec(spec)
    # Registered before running so attrs/dataclasses can resolve the module's annotations.
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except Exception as exc:
        del sys.modules[name]
        raise import_failed(target, exc, path.parent) from exc
    return module


def import_failed(target: Target, exc: Exception, directory: Path | None) -> CliError:
    """One line for an error raised while importing the target: what, and where (the
    file and line in the user's code, not in the import machinery)."""
    where = _location(exc, directory)
    text = exc.msg if isinstance(exc, SyntaxError) else str(exc)
    return CliError(
        f"cannot import {target.display}: {type(exc).__name__}: {text}"
        + (f" ({where})" if where else ""),
        hint="add -v to see the whole traceback",
    )


def _location(exc: BaseException, directory: Path | None) -> str | None:
    if isinstance(exc, SyntaxError) and exc.filename:
        return f"{exc.filename}, line {exc.lineno}"
    frames = [
        frame
        for frame in traceback.extract_tb(exc.__traceback__)
        if not frame.filename.startswith("<") and "importlib" not in frame.filename
    ]
    if directory is not None:
        # Prefer the deepest line in the user's own files over one inside a library.
        mine = [f for f in frames if Path(f.filename).resolve().is_relative_to(directory)]
        frames = mine or frames
    if not frames:
        return None
    return f"{frames[-1].filename}, line {frames[-1].lineno}"


def is_handler(obj: Any) -> bool:
    """Whether ``obj`` can answer a session (the engine's ``SessionHandler`` contract)."""
    return not isinstance(obj, type) and all(
        callable(getattr(obj, name, None)) for name in ("handle_request", "handle_notification")
    )


def find_server(module: ModuleType, target: Target, run_calls: Sequence[RunCall] = ()) -> Any:
    """The server ``target`` names in ``module``.

    With ``:attr``: that object (a plain function is called once, as a factory). Without:
    the one ``trimcp.Server`` defined at module level (else the one ``LowLevelServer``,
    else the one ``ProxyServer``).
    Several are an error naming them all, unless exactly one of them called ``run()``
    while the module was imported (``run_calls``), or one mounts all the others.
    """
    if target.attr is not None:
        try:
            obj = getattr(module, target.attr)
        except AttributeError:
            raise CliError(
                f"{target.display}: the module has no attribute {target.attr!r}"
            ) from None
        if inspect.isfunction(obj):  # a factory; other callables are not called
            obj = obj()
        if not is_handler(obj):
            raise CliError(
                f"{target.display} is a {type(obj).__name__}, not a trimcp.Server, "
                "LowLevelServer or ProxyServer (or a factory returning one)"
            )
        return obj
    kinds: list[type] = [Server, LowLevelServer]
    proxy = sys.modules.get("trimcp.proxy.server")  # imported if the module made a proxy
    if proxy is not None:
        kinds.append(proxy.ProxyServer)
    for kind in kinds:
        found: dict[int, tuple[str, Any]] = {}
        for name, value in vars(module).items():
            if isinstance(value, kind) and id(value) not in found:
                found[id(value)] = (name, value)
        if len(found) == 1:
            return next(iter(found.values()))[1]
        if found:
            return _choose(list(found.values()), target, run_calls)
    raise CliError(
        f"no trimcp.Server, LowLevelServer or ProxyServer found in {target.display}",
        hint=f"name it explicitly: trimcp run {target.display}:NAME (the variable that holds "
        "it, or a function that returns one)",
    )


def _choose(found: list[tuple[str, Any]], target: Target, run_calls: Sequence[RunCall]) -> Any:
    servers = [value for _, value in found]
    ran = [call.server for call in run_calls if any(call.server is s for s in servers)]
    if len({id(server) for server in ran}) == 1:
        return ran[0]
    parents = [s for s in servers if all(o is s or _mounts(s, o) for o in servers)]
    if len(parents) == 1:
        return parents[0]
    names = ", ".join(name for name, _ in found)
    first = found[0][0]
    raise CliError(
        f"{target.display} defines {len(found)} servers ({names}): which one should run?",
        hint=f"name it: trimcp run {target.display}:{first}",
    )


def _mounts(parent: Any, child: Any) -> bool:
    mounted = getattr(parent, "mounted_servers", None)
    return callable(mounted) and any(server is child for server in mounted())


def load_server(text: str, *, run_calls: Sequence[RunCall] = ()) -> tuple[Any, Target]:
    """Parse, import and find: the server object and the parsed target.

    ``run_calls``: the list :func:`~trimcp.server.serving.capturing_run_calls` fills while
    the file is imported (pass it to let a file that calls ``app.run()`` pick its server).
    """
    target = parse_target(text)
    module = import_target(target)
    return find_server(module, target, run_calls), target


def server_label(server: Any) -> str:
    """``name version`` of a server, for the startup line."""
    info = getattr(server, "info", None)
    name, version = getattr(info, "name", None), getattr(info, "version", None)
    if name is None:
        return type(server).__name__
    return f"{name!r} {version}" if version else repr(name)
