"""The one cattrs converter between trimcp's attrs wire types and plain JSON data.

Use :func:`structure` on data a peer sent and :func:`unstructure` on what we send. The
converter is configured once, here; the hooks of each wire class are generated at its
first use and kept; nothing changes them later. :func:`structure` runs a second set of
hooks first, made by the same factories but without cattrs' error bookkeeping (any bad
value raises); only when they refuse do the detailed ones run, to name the bad field.

Rules it applies (see :mod:`trimcp.types.common` for the type conventions):

- wire names: ``snake_case`` -> ``camelCase``, ``meta`` -> ``_meta``, a trailing ``_``
  dropped, or ``attrs.field(metadata={"wire": ...})``;
- optional fields (default ``None``) are left out when ``None``; every other field,
  discriminators included, is always sent;
- unknown input fields are ignored; input is checked strictly (a ``str`` field does not
  accept ``5``, an ``int`` field does not accept ``true`` or ``"5"``);
- ``Any`` and ``dict[str, Any]`` values (JSON Schemas, arguments, ``_meta``) pass through
  untouched both ways, so they are cheap and never recursed into.

This module does no I/O.
"""

import re
from collections.abc import Callable, Mapping
from functools import cache
from types import MappingProxyType, NoneType, UnionType
from typing import Any, Final, Literal, TypeVar, Union, get_args, get_origin, overload

import attrs
import cattrs
from cattrs.errors import ClassValidationError
from cattrs.fns import identity
from cattrs.gen import make_dict_structure_fn, override

import trimcp.types as wire
from trimcp._attrs_cache import compile_generated
from trimcp.types.base import made_by_its_fields, writable_twin

__all__ = ["ShapeError", "converter", "structure", "unstructure", "wire_names"]

T = TypeVar("T")

StructureHook = Callable[[Any, Any], Any]
UnstructureHook = Callable[[Any], Any]


class ShapeError(ValueError):
    """Data does not have the shape of the type it was structured as.

    ``path`` locates the first bad value in wire names (``"content[0].type"``,
    ``"arguments"``; ``""`` for the value itself) and ``reason`` says what is wrong.
    ``str(e) == f"{path}: {reason}"``. Answer a peer with ``-32602`` and these in ``data``.
    """

    path: str
    reason: str

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(f"{path}: {reason}")
        self.path = path
        self.reason = reason


class _Problem(Exception):
    """Raised by our leaf hooks; ``where`` is a path below the value being structured."""

    def __init__(self, reason: str, where: tuple[str, ...] = ()) -> None:
        super().__init__(reason)
        self.reason = reason
        self.where = where


class _At(Exception):
    """Wraps an error raised inside element ``index`` of a list or key of a mapping."""

    def __init__(self, index: int | str, inner: Exception) -> None:
        super().__init__(index)
        self.index = index
        self.inner = inner


# --- wire names ------------------------------------------------------------------------


def _camel(name: str) -> str:
    head, *rest = name.rstrip("_").split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


def _wire_name(field: "attrs.Attribute[Any]") -> str:
    explicit = field.metadata.get("wire")
    if explicit is not None:
        return str(explicit)
    if field.name == "meta":
        return "_meta"
    return _camel(field.name)


@cache
def wire_names(cls: type) -> Mapping[str, str]:
    """Map each field of the attrs class ``cls`` to its wire name (``"meta"`` -> ``"_meta"``)."""
    return MappingProxyType({f.name: _wire_name(f) for f in attrs.fields(cls)})


# --- describing bad input without ever printing it whole --------------------------------

_JSON_KINDS: Final = {
    dict: "object",
    list: "array",
    str: "string",
    bool: "boolean",
    int: "integer",
    float: "number",
    NoneType: "null",
}


def _kind(value: Any) -> str:
    # Never repr() peer data: it may be huge or nested deep enough to overflow the stack.
    return _JSON_KINDS.get(type(value), type(value).__name__)


def _show(value: Any) -> str:
    if type(value) is str and len(value) <= 40:
        return repr(value)
    return _kind(value)


# --- leaf hooks ------------------------------------------------------------------------


def _structure_str(value: Any, _: Any) -> str:
    if type(value) is str:
        return value
    raise _Problem(f"expected a string, got {_kind(value)}")


def _structure_int(value: Any, _: Any) -> int:
    if type(value) is int:
        return value
    raise _Problem(f"expected an integer, got {_kind(value)}")


def _structure_float(value: Any, _: Any) -> float:
    # Integers stay integers so that numbers round-trip exactly.
    if type(value) is float or type(value) is int:
        return value
    raise _Problem(f"expected a number, got {_kind(value)}")


def _structure_bool(value: Any, _: Any) -> bool:
    if value is True or value is False:
        return value
    raise _Problem(f"expected a boolean, got {_kind(value)}")


def _structure_any(value: Any, _: Any) -> Any:
    return value


def _structure_json_object(value: Any, _: Any) -> dict[str, Any]:
    if type(value) is dict:
        return value
    raise _Problem(f"expected an object, got {_kind(value)}")


def _is_any_dict(t: Any) -> bool:
    return get_origin(t) is dict and get_args(t)[1] is Any


def _is_literal(t: Any) -> bool:
    return get_origin(t) is Literal


def _structure_literal_factory(t: Any) -> StructureHook:
    allowed = get_args(t)
    if not all(type(a) is str for a in allowed):
        raise TypeError(f"trimcp literals hold strings only: {t!r}")
    allowed_set = frozenset(allowed)
    expected = ", ".join(repr(a) for a in allowed)

    def structure_literal(value: Any, _: Any) -> Any:
        if type(value) is str and value in allowed_set:
            return value
        raise _Problem(f"expected one of {expected}, got {_show(value)}")

    return structure_literal


# --- lists and mappings ----------------------------------------------------------------


def _is_list(t: Any) -> bool:
    return get_origin(t) is list


def _structure_list_factory(t: Any, c: cattrs.Converter) -> StructureHook:
    (elem,) = get_args(t)
    if elem is str:

        def structure_str_list(value: Any, _: Any) -> list[str]:
            if type(value) is not list:
                raise _Problem(f"expected an array, got {_kind(value)}")
            for index, item in enumerate(value):
                if type(item) is not str:
                    raise _At(index, _Problem(f"expected a string, got {_kind(item)}"))
            return value

        return structure_str_list

    hook = c.get_structure_hook(elem)

    def structure_list(value: Any, _: Any) -> list[Any]:
        if type(value) is not list:
            raise _Problem(f"expected an array, got {_kind(value)}")
        try:
            return [hook(item, elem) for item in value]
        except Exception:
            pass
        # Slow path, only for bad input: find the first bad element to report it.
        for index, item in enumerate(value):
            try:
                hook(item, elem)
            except Exception as exc:
                raise _At(index, exc) from None
        raise _Problem("invalid array")  # pragma: no cover - hooks are deterministic

    return structure_list


def _unstructure_list_factory(t: Any) -> UnstructureHook:
    (elem,) = get_args(t)
    hook = converter.get_unstructure_hook(elem)
    if hook is identity:
        return identity
    table = _UNION_TABLES.get(hook)
    if table is not None:
        member_hook = table.get

        def unstructure_union_list(value: Any) -> list[Any]:
            # The union's dispatch inline (a Python call less per element); the union's
            # own hook for what its table lacks.
            out = []
            for item in value:
                out.append((member_hook(type(item)) or hook)(item))
            return out

        _UNION_LISTS[unstructure_union_list] = (member_hook, hook)
        return unstructure_union_list

    def unstructure_list(value: Any) -> list[Any]:
        return list(map(hook, value))  # (no comprehension frame: every result has lists)

    return unstructure_list


#: The list hooks :func:`_unstructure_list_factory` made for a list of a union, with what
#: they dispatch with (its table's lookup, the union's own hook): a class's unstructure
#: function runs the loop of a required one inline (every result has its content list).
_UNION_LISTS: Final[dict[UnstructureHook, tuple[Callable[[type], Any], UnstructureHook]]] = {}


def _is_value_typed_dict(t: Any) -> bool:
    return get_origin(t) is dict and not _is_any_dict(t)


def _structure_dict_factory(t: Any, c: cattrs.Converter) -> StructureHook:
    key_type, elem = get_args(t)
    if key_type is not str:
        raise TypeError(f"trimcp mappings have string keys: {t!r}")
    hook = c.get_structure_hook(elem)

    def structure_dict(value: Any, _: Any) -> dict[str, Any]:
        if type(value) is not dict:
            raise _Problem(f"expected an object, got {_kind(value)}")
        try:
            if all(type(key) is str for key in value):
                return {key: hook(item, elem) for key, item in value.items()}
        except Exception:
            pass
        for key, item in value.items():
            if type(key) is not str:
                raise _Problem(f"expected string keys, got {_kind(key)}")
            try:
                hook(item, elem)
            except Exception as exc:
                raise _At(key, exc) from None
        raise _Problem("invalid object")  # pragma: no cover - hooks are deterministic

    return structure_dict


def _unstructure_dict_factory(t: Any) -> UnstructureHook:
    _, elem = get_args(t)
    hook = converter.get_unstructure_hook(elem)
    if hook is identity:
        return identity

    def unstructure_dict(value: Any) -> dict[str, Any]:
        return {key: hook(item) for key, item in value.items()}

    return unstructure_dict


# --- unions ----------------------------------------------------------------------------


def _is_union(t: Any) -> bool:
    return get_origin(t) in (Union, UnionType)


def _union_of(members: tuple[Any, ...]) -> Any:
    return members[0] if len(members) == 1 else Union[members]  # noqa: UP007


def _literal_field(cls: type, name: str) -> tuple[str, ...]:
    """The values of ``cls``'s field ``name`` if it is a ``Literal`` (with or without None)."""
    if not (isinstance(cls, type) and attrs.has(cls)):
        return ()
    field = attrs.fields_dict(cls).get(name)
    if field is None:
        return ()
    args = get_args(field.type) if _is_union(field.type) else (field.type,)
    return tuple(v for a in args if _is_literal(a) for v in get_args(a))


def _tagged_dispatch(
    c: cattrs.Converter, members: tuple[Any, ...], tag: str, default: type | None = None
) -> StructureHook:
    """Structure a union of attrs classes by the string value of the member ``tag``.

    ``default`` is used when the tag is absent (form-mode elicitation has no ``mode``).
    """
    table: dict[str, tuple[StructureHook, type]] = {}
    for cls in members:
        for value in _literal_field(cls, tag):
            if value in table:
                raise TypeError(f"{tag}={value!r} is ambiguous in {members!r}")
            table[value] = (c.get_structure_hook(cls), cls)
    expected = ", ".join(repr(v) for v in sorted(table))
    default_entry = None if default is None else (c.get_structure_hook(default), default)

    def structure_tagged(value: Any, _: Any) -> Any:
        if type(value) is not dict:
            raise _Problem(f"expected an object, got {_kind(value)}")
        found = value.get(tag)
        entry = table.get(found) if type(found) is str else None
        if entry is None:
            if found is None and default_entry is not None:
                entry = default_entry
            elif tag not in value:
                raise _Problem("required field missing", (tag,))
            else:
                raise _Problem(f"expected one of {expected}, got {_show(found)}", (tag,))
        hook, cls = entry
        return hook(value, cls)

    return structure_tagged


def _structure_resource_contents_factory(c: cattrs.Converter) -> StructureHook:
    text_hook = c.get_structure_hook(wire.TextResourceContents)
    blob_hook = c.get_structure_hook(wire.BlobResourceContents)

    def structure_resource_contents(value: Any, _: Any) -> Any:
        if type(value) is not dict:
            raise _Problem(f"expected an object, got {_kind(value)}")
        if "text" in value:
            return text_hook(value, wire.TextResourceContents)
        if "blob" in value:
            return blob_hook(value, wire.BlobResourceContents)
        raise _Problem("expected resource contents with a 'text' or a 'blob' member")

    return structure_resource_contents


def _structure_primitive_schema_factory(c: cattrs.Converter) -> StructureHook:
    hooks: dict[type, StructureHook] = {}  # made on first use, as the converter's own

    def structure_primitive_schema(value: Any, _: Any) -> Any:
        cls = _primitive_schema_class(value)
        hook = hooks.get(cls)
        if hook is None:
            hook = hooks[cls] = c.get_structure_hook(cls)
        return hook(value, cls)

    return structure_primitive_schema


def _primitive_schema_class(value: Any) -> type:
    # Several variants share ``type``; the schema tells them apart by which keys appear.
    if type(value) is not dict:
        raise _Problem(f"expected an object, got {_kind(value)}")
    kind = value.get("type")
    cls: type
    if kind == "string":
        if "oneOf" in value:
            cls = wire.TitledSingleSelectEnumSchema
        elif "enum" in value:
            has_names = "enumNames" in value
            cls = wire.LegacyTitledEnumSchema if has_names else wire.UntitledSingleSelectEnumSchema
        else:
            cls = wire.StringSchema
    elif kind == "number" or kind == "integer":
        cls = wire.NumberSchema
    elif kind == "boolean":
        cls = wire.BooleanSchema
    elif kind == "array":
        items = value.get("items")
        titled = type(items) is dict and "anyOf" in items
        cls = wire.TitledMultiSelectEnumSchema if titled else wire.UntitledMultiSelectEnumSchema
    elif "type" not in value:
        raise _Problem("required field missing", ("type",))
    else:
        expected = "'string', 'number', 'integer', 'boolean', 'array'"
        raise _Problem(f"expected one of {expected}, got {_show(kind)}", ("type",))
    return cls


def _structure_one_or_many_factory(c: cattrs.Converter, single: Any, many: Any) -> StructureHook:
    single_hook = c.get_structure_hook(single)
    many_hook = c.get_structure_hook(many)

    def structure_one_or_many(value: Any, _: Any) -> Any:
        if type(value) is list:
            return many_hook(value, many)
        return single_hook(value, single)

    return structure_one_or_many


_PRIMITIVE_CLASSES: Final = {str: (str,), int: (int,), float: (int, float), bool: (bool,)}


def _structure_primitive_union_factory(
    c: cattrs.Converter, members: tuple[Any, ...]
) -> StructureHook:
    """Values that are one of a few JSON scalars (``int | str``), or a list of strings."""
    classes: set[type] = set()
    list_hook: StructureHook | None = None
    for member in members:
        if member in _PRIMITIVE_CLASSES:
            classes.update(_PRIMITIVE_CLASSES[member])
        elif member == list[str]:
            list_hook = c.get_structure_hook(member)
        else:
            raise TypeError(f"no structure rule for union member {member!r}")
    allowed = frozenset(classes)
    expected = " or ".join(sorted(_JSON_KINDS[c] for c in classes))
    if list_hook is not None:
        expected += " or array of strings"

    def structure_primitive_union(value: Any, _: Any) -> Any:
        if type(value) in allowed:
            return value
        if list_hook is not None and type(value) is list:
            return list_hook(value, list[str])
        raise _Problem(f"expected {expected}, got {_kind(value)}")

    return structure_primitive_union


def _optional_leaf(hook: StructureHook) -> StructureHook | None:
    """``X | None`` for a leaf hook of :data:`_LEAF_KINDS` in one call (the most common
    optional fields: ``str``, ``int``, ``bool``, ``dict[str, Any]``), with the leaf's own
    error; None for any other hook."""
    kinds = _LEAF_KINDS.get(hook)
    if kinds is None:
        return None
    classes, expected = kinds
    if len(classes) == 1:
        (only,) = classes

        def structure_optional_leaf(value: Any, _: Any) -> Any:
            if value is None or type(value) is only:
                return value
            raise _Problem(f"expected {expected}, got {_kind(value)}")

        _NULLABLE_LEAVES[structure_optional_leaf] = classes
        return structure_optional_leaf

    def structure_optional_number(value: Any, _: Any) -> Any:
        if value is None or type(value) in classes:
            return value
        raise _Problem(f"expected {expected}, got {_kind(value)}")

    _NULLABLE_LEAVES[structure_optional_number] = classes
    return structure_optional_number


#: The leaf hooks that are one type check: the classes they accept, what they expect.
_LEAF_KINDS: Final[dict[StructureHook, tuple[frozenset[type], str]]] = {
    _structure_str: (frozenset({str}), "a string"),
    _structure_int: (frozenset({int}), "an integer"),
    _structure_float: (frozenset({int, float}), "a number"),
    _structure_bool: (frozenset({bool}), "a boolean"),
    _structure_json_object: (frozenset({dict}), "an object"),
}
#: The hooks :func:`_optional_leaf` made: the classes they accept besides None.
_NULLABLE_LEAVES: Final[dict[StructureHook, frozenset[type]]] = {}


def _structure_union_factory(t: Any, c: cattrs.Converter) -> StructureHook:
    members = get_args(t)
    if NoneType in members:
        inner = _union_of(tuple(m for m in members if m is not NoneType))
        hook = c.get_structure_hook(inner)
        fused = _optional_leaf(hook)
        if fused is not None:
            return fused

        def structure_optional(value: Any, _: Any) -> Any:
            return None if value is None else hook(value, inner)

        return structure_optional
    if t == wire.loaded("ResourceContents"):
        return _structure_resource_contents_factory(c)
    if t == wire.loaded("PrimitiveSchemaDefinition"):
        return _structure_primitive_schema_factory(c)
    if t == wire.loaded("ElicitRequestParams"):
        return _tagged_dispatch(c, members, "mode", default=wire.ElicitRequestFormParams)
    if t == wire.loaded("SamplingMessageContent"):
        return _structure_one_or_many_factory(c, wire.SamplingContent, list[wire.SamplingContent])
    if all(_literal_field(m, "type") for m in members):
        return _tagged_dispatch(c, members, "type")
    return _structure_primitive_union_factory(c, members)


def _unstructure_union_factory(t: Any) -> UnstructureHook:
    table: dict[type, UnstructureHook] = {}
    for member in get_args(t):
        if member is NoneType:
            continue
        hook = converter.get_unstructure_hook(member)
        origin = get_origin(member)
        if origin is not None:
            table[origin] = hook
        elif isinstance(member, type):
            table[member] = hook
    if all(hook is identity for hook in table.values()):
        return identity
    fallback = converter.unstructure

    def unstructure_union(value: Any) -> Any:
        hook = table.get(type(value))
        if hook is None:
            if value is None:
                return None
            return fallback(value)
        return hook(value)

    _UNION_TABLES[unstructure_union] = table
    return unstructure_union


#: The hooks :func:`_unstructure_union_factory` made, with their tables (type -> hook).
_UNION_TABLES: Final[dict[UnstructureHook, dict[type, UnstructureHook]]] = {}


# --- trimcp attrs classes --------------------------------------------------------------


def _is_wire_class(t: Any) -> bool:
    return isinstance(t, type) and attrs.has(t) and t.__module__.startswith("trimcp.")


def _structure_class_factory(cls: type) -> StructureHook:
    renames: dict[str, Any] = {
        name: override(rename=wire) for name, wire in wire_names(cls).items()
    }
    generated: StructureHook = make_dict_structure_fn(
        cls,
        converter,
        _cattrs_forbid_extra_keys=False,
        _cattrs_detailed_validation=True,
        _cattrs_use_alias=False,
        **renames,
    )

    def structure_object(value: Any, _: Any) -> Any:
        # The generated code assumes a mapping; anything else must not reach it.
        if type(value) is not dict:
            raise _Problem(f"expected an object, got {_kind(value)}")
        return generated(value, cls)

    return structure_object


class _Redo(Exception):
    """Raised by the fast hooks on any input they do not take as it is."""


def _fast_structure_class_factory(cls: type, c: cattrs.Converter) -> StructureHook:
    """A structure function for the hot path: no error bookkeeping (any bad value raises,
    and :func:`structure` runs the detailed hooks again to say where and what); the
    instance is made by setting its slots (as its :func:`~trimcp.types.base.writable_twin`,
    then made a ``cls``); leaf checks are inline and absent optional
    fields cost one lookup. It makes the same object as the detailed function."""
    if not made_by_its_fields(cls):
        # (tests/types builds every wire class's hooks: a new kind of field fails there)
        raise TypeError(f"{cls!r}: wire classes hold plain fields (no validator, factory...)")
    # Made as its twin, whose slots the bytecode stores itself, then made a cls.
    env: dict[str, Any] = {"new": object.__new__, "cls": cls, "Redo": _Redo}
    env["twin"] = writable_twin(cls)
    lines = ["  if type(o) is not dict:", "    raise Redo", "  i = new(twin)"]
    for n, field in enumerate(attrs.fields(cls)):
        key = repr(wire_names(cls)[field.name])
        hook = c.get_structure_hook(field.type)
        env[f"default{n}"] = field.default
        env[f"hook{n}"], env[f"type{n}"] = hook, field.type
        leaf = _LEAF_KINDS.get(hook)
        nullable = _NULLABLE_LEAVES.get(hook)
        classes = leaf[0] if leaf is not None else nullable
        if classes is not None:
            env[f"classes{n}"] = classes
            only = next(iter(classes)) if len(classes) == 1 else None
            env[f"only{n}"] = only
            bad = f"type(v) is not only{n}" if only else f"type(v) not in classes{n}"
            if nullable is not None:
                bad = f"v is not None and {bad}"
            check = [f"if {bad}:", "  raise Redo"]
            takes_none = nullable is not None
        elif hook is _structure_any:
            check, takes_none = [], True
        else:
            check, takes_none = [f"v = hook{n}(v, type{n})"], False
        if field.default is attrs.NOTHING:
            lines += [f"  v = o[{key}]", *(f"  {line}" for line in check)]
        elif field.default is None and takes_none:
            lines += [f"  v = o.get({key})", *(f"  {line}" for line in check)]
        else:
            lines += [f"  if {key} in o:", f"    v = o[{key}]"]
            lines += [*(f"    {line}" for line in check), "  else:", f"    v = default{n}"]
        lines.append(f"  i.{field.name} = v")
    name = f"structure_{cls.__name__}"
    source = "\n".join([f"def {name}(o, _):", *lines, "  i.__class__ = cls", "  return i", ""])
    filename = f"<trimcp generated fast-structure {cls.__module__}.{cls.__qualname__}>"
    exec(compile_generated(source, filename), env)
    made: StructureHook = env[name]
    return made


def _unstructure_class_factory(cls: type) -> UnstructureHook:
    """The wire object of ``cls`` as a dict: required fields and discriminators (non-None
    defaults) first, always, in field order; then the optional fields (default None) in
    field order, each only when it is not None (an ``is not None`` test: cattrs' own
    functions compare with ``!=``, several times dearer)."""
    names = wire_names(cls)
    env: dict[str, Any] = {}
    always: list[str] = []
    optional: list[str] = []
    lists: list[str] = []
    for n, field in enumerate(attrs.fields(cls)):
        try:
            hook = converter.get_unstructure_hook(field.type, cache_result=False)
        except RecursionError:  # pragma: no cover - no wire type refers to itself
            hook = converter.unstructure
        env[f"hook{n}"] = hook
        key = repr(names[field.name])
        union_list = _UNION_LISTS.get(hook)
        if union_list is not None and field.default is attrs.NOTHING:
            # The list hook's loop, inline (a Python call less per object).
            env[f"member{n}"], env[f"union{n}"] = union_list
            lists += [
                f"  list{n} = []",
                f"  for item in instance.{field.name}:",
                f"    list{n}.append((member{n}(type(item)) or union{n})(item))",
            ]
            always.append(f"    {key}: list{n},")
        elif field.default is None:
            value = "v" if hook is identity else f"hook{n}(v)"
            optional += [
                f"  v = instance.{field.name}",
                "  if v is not None:",
                f"    res[{key}] = {value}",
            ]
        else:
            value = f"instance.{field.name}"
            always.append(f"    {key}: {value if hook is identity else f'hook{n}({value})'},")
    name = f"unstructure_{cls.__name__}"
    source = "\n".join(
        [
            f"def {name}(instance):",
            *lists,
            "  res = {",
            *always,
            "  }",
            *optional,
            "  return res",
            "",
        ]
    )
    filename = f"<trimcp generated unstructure {cls.__module__}.{cls.__qualname__}>"
    exec(compile_generated(source, filename), env)
    made: UnstructureHook = env[name]
    return made


# --- errors ----------------------------------------------------------------------------

_IDENTIFIER: Final = re.compile(r"[A-Za-z_$][A-Za-z0-9_$]*\Z")


def _join(path: str, part: str | int) -> str:
    if isinstance(part, int):
        return f"{path}[{part}]"
    if _IDENTIFIER.match(part):
        return f"{path}.{part}" if path else part
    return f"{path}[{_quote(part)}]"


def _quote(key: str) -> str:
    shown = key if len(key) <= 40 else key[:37] + "..."
    return '"' + shown.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _shape_error(exc: BaseException) -> ShapeError:
    """Follow the first error down to its leaf, collecting the wire path on the way."""
    path = ""
    while True:
        if isinstance(exc, ClassValidationError):
            with_notes, others = exc.group_exceptions()
            if with_notes:
                inner, note = with_notes[0]
                path = _join(path, wire_names(exc.cl).get(note.name, note.name))
                exc = inner
            elif others:
                exc = others[0]
            else:  # pragma: no cover - cattrs never raises an empty group
                return ShapeError(path, "invalid object")
        elif isinstance(exc, _At):
            path = _join(path, exc.index)
            exc = exc.inner
        elif isinstance(exc, _Problem):
            for part in exc.where:
                path = _join(path, part)
            return ShapeError(path, exc.reason)
        elif isinstance(exc, KeyError):
            return ShapeError(path, "required field missing")
        else:
            return ShapeError(path, f"invalid value ({type(exc).__name__})")


# --- the converter ---------------------------------------------------------------------


def _build(*, fast: bool = False) -> cattrs.Converter:
    """The converter, or (``fast``) the structure hooks of the hot path, which only say
    whether a value fits (any bad value raises): both made by the same factories."""
    c = cattrs.Converter(detailed_validation=not fast, forbid_extra_keys=False)
    c.register_structure_hook(str, _structure_str)
    c.register_structure_hook(int, _structure_int)
    c.register_structure_hook(float, _structure_float)
    c.register_structure_hook(bool, _structure_bool)
    for primitive in (str, int, float, bool):
        c.register_unstructure_hook(primitive, identity)
    # Later registrations win, so the most specific predicates come last.
    c.register_structure_hook_func(lambda t: t is Any, _structure_any)
    c.register_unstructure_hook_func(lambda t: t is Any, identity)
    c.register_structure_hook_factory(_is_literal, _structure_literal_factory)
    c.register_unstructure_hook_func(_is_literal, identity)
    c.register_structure_hook_factory(_is_list, _structure_list_factory)
    c.register_unstructure_hook_factory(_is_list, _unstructure_list_factory)
    c.register_structure_hook_factory(_is_value_typed_dict, _structure_dict_factory)
    c.register_unstructure_hook_factory(_is_value_typed_dict, _unstructure_dict_factory)
    c.register_structure_hook_func(_is_any_dict, _structure_json_object)
    c.register_unstructure_hook_func(_is_any_dict, identity)
    c.register_structure_hook_factory(_is_union, _structure_union_factory)
    c.register_unstructure_hook_factory(_is_union, _unstructure_union_factory)
    if fast:
        c.register_structure_hook_factory(_is_wire_class, _fast_structure_class_factory)
    else:
        c.register_structure_hook_factory(_is_wire_class, _structure_class_factory)
    c.register_unstructure_hook_factory(_is_wire_class, _unstructure_class_factory)
    return c


converter: Final[cattrs.Converter] = _build()
"""The converter. Read-only: use it for hooks, never register new ones on it."""

#: The hot path's structure hooks (see :func:`structure`); not for use outside this module.
_fast: Final[cattrs.Converter] = _build(fast=True)

# Hooks are generated on first use of each type and kept: a process pays only for the
# types it meets (a stdio server's cold start skips most of the 200-odd wire classes), and
# these tables skip cattrs' dispatch on the hot path. tests/types checks that every wire
# class gets its hooks (build_all_hooks).
_STRUCTURE_HOOKS: Final[dict[Any, StructureHook]] = {}
_FAST_STRUCTURE_HOOKS: Final[dict[Any, StructureHook]] = {}
_UNSTRUCTURE_HOOKS: Final[dict[Any, UnstructureHook]] = {}


def _structure_hook(cls: Any) -> StructureHook:
    hook = _STRUCTURE_HOOKS.get(cls)
    if hook is None:
        hook = _STRUCTURE_HOOKS[cls] = converter.get_structure_hook(cls)
    return hook


def _fast_structure_hook(cls: Any) -> StructureHook:
    hook = _FAST_STRUCTURE_HOOKS.get(cls)
    if hook is None:
        hook = _FAST_STRUCTURE_HOOKS[cls] = _fast.get_structure_hook(cls)
    return hook


def _wire_classes() -> list[type]:
    return [v for v in wire.load_all().values() if _is_wire_class(v)]


def build_all_hooks() -> int:
    """Generate the hooks of every wire class now (tests; a warm-up). Returns how many."""
    classes = _wire_classes()
    for cls in classes:
        _structure_hook(cls)
        _fast_structure_hook(cls)
        _UNSTRUCTURE_HOOKS.setdefault(cls, converter.get_unstructure_hook(cls))
    return len(classes)


@overload
def structure(data: Any, cls: type[T]) -> T: ...
@overload
def structure(data: Any, cls: Any) -> Any: ...
def structure(data: Any, cls: Any) -> Any:
    """Build a ``cls`` (a wire class, or a union such as ``ContentBlock``) from JSON data.

    Raises :class:`ShapeError` (and nothing else) when ``data`` does not fit, with the
    path of the first bad field. Unknown fields are ignored. ``data`` must be what a JSON
    parser returns (``dict``, ``list``...); the result may share its open objects and lists
    of strings.
    """
    hook = _FAST_STRUCTURE_HOOKS.get(cls)
    if hook is None:
        hook = _fast_structure_hook(cls)
    try:
        return hook(data, cls)
    except Exception:
        pass
    # Bad input: the detailed hooks (the same checks, with the bookkeeping that names the
    # first bad field) run once, from the top: a bad value deep inside costs two passes.
    try:
        return _structure_hook(cls)(data, cls)
    except Exception as exc:
        raise _shape_error(exc) from None


def structure_attempt(cls: Any) -> StructureHook:
    """What :func:`structure` tries first for ``cls`` (made now if not yet): ``hook(data,
    cls)`` returns what :func:`structure` would, or raises any exception when ``data`` is
    not taken as it is (then call :func:`structure`, which says why). For a caller that
    structures every request's params (no Python frame of ours around it)."""
    return _fast_structure_hook(cls)


#: The unstructure function made for a class (``hook(obj)``: what :func:`unstructure`
#: returns for it), or None when none is made yet (then call :func:`unstructure`): the
#: table's own lookup, for a caller that unstructures every request's answer (no Python
#: frame of ours around it).
unstructure_hook_of: Final[Callable[[type], UnstructureHook | None]] = _UNSTRUCTURE_HOOKS.get


def unstructure(obj: Any) -> Any:
    """Turn a wire object (or a list/dict of them) into plain JSON data.

    The result may share ``dict[str, Any]``/``Any`` values and lists of strings with
    ``obj``; do not mutate it if ``obj`` is still in use.
    """
    kind = type(obj)
    hook = _UNSTRUCTURE_HOOKS.get(kind)
    if hook is None:
        if not _is_wire_class(kind):
            return converter.unstructure(obj)
        hook = _UNSTRUCTURE_HOOKS[kind] = converter.get_unstructure_hook(kind)
    return hook(obj)
