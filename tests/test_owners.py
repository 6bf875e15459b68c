"""One owner per piece of state: no module reads or writes another object's private attributes.

The session engine (``trimcp/session/engine.py``) is the one module that touches a
:class:`~trimcp.session.engine.Session`'s private state; resting, relaying and closing are
objects the session holds, reaching it through small protocols of public members. The
private names are read from ``engine.py`` itself (its ``Session`` class: ``__slots__``,
``self._x`` and ``def _x``), so a field added there is covered without editing this test;
a use is ``obj._x`` or ``getattr(obj, "_x")`` on anything but ``self``, anywhere in
trimcp/ and tests/ (see the test for how a module's own same-named field is told apart).

The wider rule (STYLE.md rule 11) is checked by name: a module may use ``x._name`` only for
a private name it defines itself (an attribute it sets on ``self``, a slot, a function or
class); the few places that knowingly reach into another module's object are listed in
:data:`KNOWN`, each with its reason, and the list may only shrink.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
ROOT = REPO / "trimcp"
ENGINE = ROOT / "session" / "engine.py"

#: ``getattr(obj, "_x")`` and friends reach a private attribute as surely as ``obj._x``.
_REFLECTION = frozenset({"getattr", "setattr", "hasattr", "delattr"})

#: Documented public API despite the underscore: namedtuple's methods, and ``os._exit``.
PUBLIC_BY_CONVENTION = frozenset({"_replace", "_asdict", "_fields", "_field_defaults", "_make"})


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _is_self(node: ast.expr) -> bool:
    return isinstance(node, ast.Name) and node.id in ("self", "cls")


def session_private_names() -> set[str]:
    """The private attribute and method names of ``Session``, read from engine.py."""
    tree = ast.parse(ENGINE.read_text(encoding="utf-8"))
    (session,) = (
        node for node in tree.body if isinstance(node, ast.ClassDef) and node.name == "Session"
    )
    names: set[str] = set()
    for node in ast.walk(session):
        if isinstance(node, ast.Attribute) and _is_self(node.value) and _private(node.attr):
            names.add(node.attr)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and _private(node.name):
            names.add(node.name)
        elif (
            isinstance(node, ast.Assign)
            and any(isinstance(t, ast.Name) and t.id == "__slots__" for t in node.targets)
            and isinstance(node.value, (ast.Tuple, ast.List))
        ):
            names |= {
                e.value
                for e in node.value.elts
                if isinstance(e, ast.Constant) and isinstance(e.value, str) and _private(e.value)
            }
    return names


def private_uses(tree: ast.AST) -> Iterator[tuple[int, str, str]]:
    """``(line, source, name)`` for every private attribute reached on something other
    than ``self``/``cls``: ``obj._x`` and ``getattr(obj, "_x")``."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and _private(node.attr) and not _is_self(node.value):
            yield node.lineno, ast.unparse(node), node.attr
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in _REFLECTION
            and len(node.args) >= 2
            and not _is_self(node.args[0])
            and isinstance(node.args[1], ast.Constant)
            and isinstance(node.args[1].value, str)
            and _private(node.args[1].value)
        ):
            yield node.lineno, ast.unparse(node), node.args[1].value


def defined_private_names(tree: ast.AST) -> set[str]:
    """The private names a module defines: set on ``self``, slots, functions, classes."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            if _private(node.name):
                names.add(node.name)
        elif isinstance(node, ast.Attribute) and _is_self(node.value) and _private(node.attr):
            names.add(node.attr)
        elif (
            isinstance(node, ast.Assign)
            and any(isinstance(t, ast.Name) and t.id == "__slots__" for t in node.targets)
            and isinstance(node.value, (ast.Tuple, ast.List))
        ):
            names |= {
                e.value
                for e in node.value.elts
                if isinstance(e, ast.Constant) and isinstance(e.value, str) and _private(e.value)
            }
    return names


def _modules(*roots: Path) -> Iterator[tuple[str, ast.AST]]:
    for root in roots:
        for path in sorted(root.rglob("*.py")):
            yield path.relative_to(REPO).as_posix(), ast.parse(path.read_text(encoding="utf-8"))


def _session_like(source: str) -> bool:
    return "session" in source.lower()


def test_only_the_engine_touches_a_sessions_private_state() -> None:
    names = session_private_names()
    # The derivation found the fields and methods (a broken parse would make this pass).
    assert len(names) >= 10, names
    found: list[tuple[str, str]] = []
    for module, tree in _modules(ROOT, REPO / "tests"):
        if module == "trimcp/session/engine.py":
            continue
        # A module's own class may share a name such as ``_transport`` with Session: in
        # trimcp/ a Session name counts unless the module defines it itself, and always
        # on something that looks like a session; in tests/ (whose fakes reach into many
        # objects) on something that looks like a session.
        own = defined_private_names(tree) if module.startswith("trimcp/") else None
        for line, source, name in private_uses(tree):
            if name in names and (_session_like(source) or (own is not None and name not in own)):
                found.append((f"{module}:{line}: {source}", name))
    assert not found, (
        f"{len(found)} uses of {len({name for _, name in found})} private names of Session "
        "outside trimcp/session/engine.py (reach the session through a public member):\n"
        + "\n".join(use for use, _ in found)
    )


#: Known reaches into another module's private names: ``(module, name)`` -> why.
KNOWN: dict[tuple[str, str], str] = {
    ("trimcp/_attrs_cache.py", "_compile_and_eval"): "its job: wrap attrs' code generator",
    ("trimcp/_attrs_cache.py", "_trimcp_cache"): "marks the wrapper it installed",
    ("trimcp/auth/verifiers.py", "_jwk_data"): "PyJWT keeps a JWK's own members only there",
    ("trimcp/transports/websocket.py", "_event"): "trio-websocket exposes no Host header",
    # Debt, to be made public members of their owners:
    ("trimcp/telemetry.py", "_negotiated"): "Client (client/client.py) has no public one",
    ("trimcp/client/client.py", "_notified"): "TaskHandle (client/tasks.py)",
    ("trimcp/client/tasks.py", "_request"): "Client (client/client.py)",
    ("trimcp/server/mount.py", "_tool"): "the mounted server's registry",
    ("trimcp/server/mount.py", "_legacy_tool"): "the mounted server's registry",
    ("trimcp/server/mount.py", "_prompt"): "the mounted server's registry",
    ("trimcp/server/mount.py", "_arguments"): "the mounted prompt",
    ("trimcp/server/mount.py", "_refs"): "the mounted prompt",
    ("trimcp/server/tasks/methods.py", "_failure"): "the tool's registration",
}


def test_no_module_touches_private_names_it_does_not_define() -> None:
    found: dict[tuple[str, str], list[str]] = {}
    for module, tree in _modules(ROOT):
        own = defined_private_names(tree)
        for line, source, name in private_uses(tree):
            if name not in own and name not in PUBLIC_BY_CONVENTION and source != "os._exit":
                found.setdefault((module, name), []).append(f"{module}:{line}: {source}")
    new = [use for key, uses in sorted(found.items()) if key not in KNOWN for use in uses]
    assert not new, f"{len(new)} uses of another object's private attributes:\n" + "\n".join(new)
    stale = sorted(set(KNOWN) - set(found))
    assert not stale, f"no longer used, remove from KNOWN: {stale}"
