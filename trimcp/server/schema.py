"""JSON Schema (2020-12) from Python type hints.

The subset generated, per annotation:

==============================  ====================================================
``str`` ``int`` ``float``       ``{"type": "string" | "integer" | "number"}``
``bool`` ``None``               ``{"type": "boolean" | "null"}``
``Any`` / no annotation         ``{}``
``X | Y``, ``Optional[X]``      ``{"anyOf": [X, Y]}`` (``null`` for ``None``)
``Literal["a", "b"]``           ``{"type": "string", "enum": ["a", "b"]}``
``Enum`` subclass               ``{"$ref": "#/$defs/Name"}``, the def is ``{"enum": [...]}``
``list[X]``, ``Sequence[X]``    ``{"type": "array", "items": X}``
``tuple[X, ...]``               the same; ``tuple[X, Y]`` uses ``prefixItems`` + size
``set[X]``, ``frozenset[X]``    an array with ``"uniqueItems": true``
``dict[str, X]``                ``{"type": "object", "additionalProperties": X}``
attrs / dataclass / TypedDict   ``{"$ref": "#/$defs/Name"}``, the def is an object schema
==============================  ====================================================

``Annotated[X, "text"]`` or ``Annotated[X, Field(...)]`` adds a description, a title and
constraints (see :class:`trimcp.server.typeforms.Field`). Defaults are written as
``"default"``. Nested classes go into a single ``$defs`` at the root (names clash-free:
a second class with the same name gets a numeric suffix). Unknown object keys are allowed
(``additionalProperties`` is not set) and ignored when arguments are converted.
"""

from __future__ import annotations

import contextlib
import types
import typing
from collections.abc import Mapping, Sequence, Set
from typing import Any, Final, Literal, get_args, get_origin

from trimcp._jsontypes import json_type
from trimcp.server.convert import to_json
from trimcp.server.docstrings import parse_docstring
from trimcp.server.typeforms import (
    MISSING,
    Meta,
    class_doc,
    is_enum,
    is_object_class,
    object_fields,
    unwrap,
)

_SIMPLE: Final[dict[Any, dict[str, Any]]] = {
    str: {"type": "string"},
    int: {"type": "integer"},
    float: {"type": "number"},
    bool: {"type": "boolean"},
    type(None): {"type": "null"},
    None: {"type": "null"},
}

_SEQUENCES: Final = frozenset({list, Sequence, typing.Sequence, typing.List})  # noqa: UP006
_SETS: Final = frozenset({set, frozenset, Set, typing.AbstractSet})
_MAPPINGS: Final = frozenset({dict, Mapping, typing.Mapping, typing.Dict})  # noqa: UP006

_NUMBER_KEYS: Final = {
    "ge": "minimum",
    "gt": "exclusiveMinimum",
    "le": "maximum",
    "lt": "exclusiveMaximum",
}
_LENGTH_SUFFIXES: Final[dict[Any, tuple[str, ...]]] = {
    "string": ("Length",),
    "array": ("Items",),
    "object": ("Properties",),
    "integer": (),
    "number": (),
    "boolean": (),
    "null": (),
}


class SchemaBuilder:
    """Builds schemas that share one ``$defs`` table (for one tool's input or output)."""

    def __init__(self) -> None:
        self.defs: dict[str, dict[str, Any]] = {}
        self._names: dict[type, str] = {}

    def schema(self, tp: Any) -> dict[str, Any]:
        """The schema of ``tp`` (a fresh dict; refs point into :attr:`defs`)."""
        base, meta = unwrap(tp)
        schema = self._base(base)
        return apply_meta(schema, meta)

    def root(self, schema: dict[str, Any]) -> dict[str, Any]:
        """``schema`` with the collected ``$defs`` attached, ready to publish."""
        if self.defs:
            return {**schema, "$defs": dict(self.defs)}
        return schema

    def object_schema(self, cls: type) -> dict[str, Any]:
        """The object schema of an attrs class / dataclass / TypedDict itself (not a ref)."""
        fields = object_fields(cls)
        properties: dict[str, Any] = {}
        required: list[str] = []
        for field in fields:
            prop = self.schema(field.type)
            if field.description and "description" not in prop:
                prop["description"] = field.description
            if field.has_default:
                add_default(prop, field.default)
            properties[field.name] = prop
            if field.required:
                required.append(field.name)
        schema: dict[str, Any] = {"type": "object", "properties": properties}
        if required:
            schema["required"] = required
        summary = parse_docstring(class_doc(cls)).summary
        if summary:
            schema["description"] = summary
        return schema

    def _base(self, tp: Any) -> dict[str, Any]:
        if tp is Any or tp is object:
            return {}
        simple = _SIMPLE.get(tp)
        if simple is not None:
            return dict(simple)
        origin = get_origin(tp)
        if origin is Literal:
            return _literal(get_args(tp))
        if origin is typing.Union or origin is types.UnionType:
            return {"anyOf": [self.schema(member) for member in get_args(tp)]}
        if is_enum(tp) or is_object_class(tp):
            return {"$ref": f"#/$defs/{self._define(tp)}"}
        container = origin or tp
        args = get_args(tp)
        if container in _MAPPINGS:
            if args and unwrap(args[0])[0] is not str:
                raise TypeError(f"Object keys must be strings: {tp!r}")
            out: dict[str, Any] = {"type": "object"}
            if args and unwrap(args[1])[0] not in (Any, object):
                out["additionalProperties"] = self.schema(args[1])
            return out
        if container is tuple:
            if not args or (len(args) == 2 and args[1] is Ellipsis):
                return _array(self.schema(args[0]) if args else None)
            if args == ((),):
                return {"type": "array", "maxItems": 0}
            return {
                "type": "array",
                "prefixItems": [self.schema(arg) for arg in args],
                "minItems": len(args),
                "maxItems": len(args),
            }
        if container in _SEQUENCES:
            return _array(self.schema(args[0]) if args else None)
        if container in _SETS:
            return {**_array(self.schema(args[0]) if args else None), "uniqueItems": True}
        raise TypeError(
            f"Cannot make a JSON Schema for {tp!r}; use str, int, float, bool, None, a "
            "list/tuple/set/dict of those, a Literal, an Enum, or an attrs class, dataclass "
            "or TypedDict"
        )

    def _define(self, cls: type) -> str:
        name = self._names.get(cls)
        if name is not None:
            return name
        name = cls.__name__
        suffix = 2
        while name in self.defs:
            name = f"{cls.__name__}{suffix}"
            suffix += 1
        self._names[cls] = name
        self.defs[name] = {}  # reserve it first: the class may refer to itself
        self.defs[name] = self._enum_schema(cls) if is_enum(cls) else self.object_schema(cls)
        return name

    @staticmethod
    def _enum_schema(cls: Any) -> dict[str, Any]:
        values = [member.value for member in cls]
        kinds = {json_type(value) for value in values}
        if kinds & _NOT_SCALAR:
            raise TypeError(f"Enum values must be strings, numbers or booleans: {cls!r}")
        schema: dict[str, Any] = {"enum": values}
        if len(kinds) == 1:
            schema = {"type": kinds.pop(), **schema}
        summary = parse_docstring(class_doc(cls)).summary
        if summary:
            schema["description"] = summary
        return schema


_NOT_SCALAR = frozenset({"array", "object"})


def _array(items: dict[str, Any] | None) -> dict[str, Any]:
    return {"type": "array"} if items is None else {"type": "array", "items": items}


def _literal(values: tuple[Any, ...]) -> dict[str, Any]:
    kinds = {json_type(value) for value in values}
    if kinds & _NOT_SCALAR:
        raise TypeError(f"Literal values must be JSON scalars: {values!r}")
    schema: dict[str, Any] = {"enum": list(values)}
    if len(kinds) == 1:
        schema = {"type": kinds.pop(), **schema}
    return schema


def apply_meta(schema: dict[str, Any], meta: Meta) -> dict[str, Any]:
    """Add the description, title, examples and constraints ``Annotated`` gave."""
    if meta.title:
        schema["title"] = meta.title
    if meta.description:
        schema["description"] = meta.description
    if meta.format:
        schema["format"] = meta.format
    if meta.examples is not None:
        schema["examples"] = [to_json(example) for example in meta.examples]
    kind = schema.get("type")
    for name, value in meta.constraints:
        if name in _NUMBER_KEYS:
            if kind in (None, "integer", "number"):
                schema[_NUMBER_KEYS[name]] = value
        elif name == "pattern":
            if kind in (None, "string"):
                schema["pattern"] = value
        elif name in ("min_length", "max_length"):
            prefix = "min" if name == "min_length" else "max"
            # Length keywords are per JSON type; when the type is open (a union), write
            # the ones that could apply, as the converter checks them all.
            for suffix in _LENGTH_SUFFIXES.get(kind, ("Length", "Items", "Properties")):
                schema[prefix + suffix] = value
    return schema


def add_default(schema: dict[str, Any], default: Any) -> None:
    """Write ``default`` into ``schema`` when it is JSON (a factory-made one is skipped)."""
    if default is MISSING:
        return
    with contextlib.suppress(TypeError):  # not JSON: say nothing rather than something wrong
        schema["default"] = to_json(default)


def json_schema(tp: Any) -> dict[str, Any]:
    """The complete schema of ``tp``, with its ``$defs``."""
    builder = SchemaBuilder()
    return builder.root(builder.schema(tp))


def root_object_schema(tp: Any) -> dict[str, Any] | None:
    """``tp``'s schema when it is a JSON object at the top level (inlined, not a ``$ref``).

    Returns None when ``tp`` is not an object type (the caller then wraps it). Nested
    classes still go to ``$defs``; a recursive class keeps its own def too.
    """
    base, meta = unwrap(tp)
    builder = SchemaBuilder()
    if is_object_class(base):
        name = builder._define(base)
        schema = apply_meta(dict(builder.defs[name]), meta)
        ref = f"#/$defs/{name}"
        # Self-references count: a recursive class keeps its def.
        if not any(ref in repr(value) for value in builder.defs.values()):
            del builder.defs[name]
        return builder.root(schema)
    origin = get_origin(base) or base
    if origin in _MAPPINGS:
        return builder.root(builder.schema(tp))
    return None
