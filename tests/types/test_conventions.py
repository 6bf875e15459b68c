"""The public surface of trimcp.types and trimcp.serde, and the wire-type conventions."""

import ast
import importlib
import pkgutil
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Literal, get_args, get_origin

import attrs
import pytest

import trimcp.serde
import trimcp.types
from tests.types.strategies import wire_classes

# trimcp/types/jsonrpc.py (the JSON-RPC envelopes) is owned and re-exported elsewhere.
MODULES = [
    importlib.import_module(f"trimcp.types.{m.name}")
    for m in pkgutil.iter_modules(trimcp.types.__path__)
    if m.name != "jsonrpc"
]


def defined_names(module: ModuleType) -> list[str]:
    """Public names a module defines at top level (classes, aliases, constants)."""
    assert module.__file__ is not None
    tree = ast.parse(Path(module.__file__).read_text())
    names = []
    for node in tree.body:
        if isinstance(node, ast.ClassDef):
            names.append(node.name)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.append(node.target.id)
        elif isinstance(node, ast.Assign):
            names.extend(t.id for t in node.targets if isinstance(t, ast.Name))
    return [name for name in names if not name.startswith("_")]


@pytest.mark.parametrize("module", MODULES, ids=lambda m: m.__name__)
def test_every_public_name_is_reexported(module: ModuleType) -> None:
    names = defined_names(module)
    assert names
    for name in names:
        assert getattr(trimcp.types, name, None) is getattr(module, name), name


def test_serde_surface() -> None:
    assert set(trimcp.serde.__all__) == {
        "ShapeError",
        "converter",
        "structure",
        "unstructure",
        "wire_names",
    }
    assert issubclass(trimcp.serde.ShapeError, ValueError)


@pytest.mark.parametrize("cls", wire_classes(), ids=lambda c: c.__name__)
def test_wire_class_shape(cls: type) -> None:
    """Frozen, slotted, keyword-only, documented; defaults only None or a discriminator."""
    assert cls.__doc__
    assert cls.__doc__.strip().splitlines()[0].endswith(".")
    for field in attrs.fields(cls):
        assert field.kw_only, field.name
        if field.default is attrs.NOTHING or field.default is None:
            continue
        # Any other default is a discriminator: a Literal that always goes on the wire.
        assert get_origin(field.type) is Literal, field.name
        assert field.default in get_args(field.type), field.name
    assert "__slots__" in vars(cls)
    with pytest.raises(AttributeError):
        object.__setattr__(object.__new__(cls), "not_a_field", 1)  # no __dict__


def test_instances_are_frozen() -> None:
    text = trimcp.types.TextContent(text="a")
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        text.text = "b"  # type: ignore[misc]


def test_no_io_imports() -> None:
    """trimcp.types, trimcp.serde and the method registry import nothing that does I/O."""
    code = (
        "import sys\n"
        "for name in ('trio', 'h11', 'hypercorn', 'trio_websocket', 'socket'):\n"
        "    sys.modules[name] = None\n"
        "import trimcp.types, trimcp.serde, trimcp.protocol.methods\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
