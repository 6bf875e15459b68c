"""What a Python type annotation says, in the few shapes the server framework understands.

Shared by :mod:`trimcp.server.schema` (type -> JSON Schema) and
:mod:`trimcp.server.convert` (JSON -> Python values), so both read annotations the same
way: ``Annotated`` metadata (a description string, :class:`Field`, or any object with
``description``/``title``/constraint attributes, such as pydantic's ``Field`` or
``annotated_types.Ge``), and the fields of attrs classes, dataclasses and TypedDicts.
"""

from __future__ import annotations

import dataclasses
import enum
import typing
from collections.abc import Mapping
from typing import Any, Final, NotRequired, Required, get_args, get_origin

import attrs

from trimcp._record import Record
from trimcp.server.docstrings import parse_docstring

_MISSING: Final[Any] = object()


@attrs.frozen(repr=False, eq=False)
class Field(Record):
    """Describe a parameter or field inside ``Annotated[T, Field(...)]``.

    ``description`` and ``title`` go into the generated JSON Schema. The constraints are
    written into the schema *and* enforced when arguments are validated: ``ge``/``gt``/
    ``le``/``lt`` for numbers, ``min_length``/``max_length`` for strings and arrays,
    ``pattern`` (a regular expression searched in the string). ``format`` (``"email"``,
    ``"uri"``, ``"date"``, ``"date-time"``) is a hint only, as JSON Schema treats it.
    ``option_titles`` labels the choices of a ``Literal``/``Enum`` field in an elicitation
    form (value -> label); ``examples`` lists sample values.
    """

    description: str | None = None
    title: str | None = attrs.field(default=None, kw_only=True)
    ge: float | None = attrs.field(default=None, kw_only=True)
    gt: float | None = attrs.field(default=None, kw_only=True)
    le: float | None = attrs.field(default=None, kw_only=True)
    lt: float | None = attrs.field(default=None, kw_only=True)
    min_length: int | None = attrs.field(default=None, kw_only=True)
    max_length: int | None = attrs.field(default=None, kw_only=True)
    pattern: str | None = attrs.field(default=None, kw_only=True)
    format: str | None = attrs.field(default=None, kw_only=True)
    examples: tuple[Any, ...] | None = attrs.field(
        default=None, kw_only=True, converter=attrs.converters.optional(tuple)
    )
    option_titles: Mapping[str, str] | None = attrs.field(default=None, kw_only=True)


_CONSTRAINT_NAMES: Final = ("ge", "gt", "le", "lt", "min_length", "max_length", "pattern")


@attrs.frozen(repr=False, eq=False)
class Meta(Record):
    """Everything ``Annotated`` metadata said about one type, merged (later items win)."""

    description: str | None = None
    title: str | None = None
    format: str | None = None
    examples: tuple[Any, ...] | None = None
    option_titles: Mapping[str, str] | None = None
    constraints: tuple[tuple[str, Any], ...] = ()

    def constraint(self, name: str) -> Any:
        for key, value in self.constraints:
            if key == name:
                return value
        return None


def unwrap(tp: Any) -> tuple[Any, Meta]:
    """Strip ``Annotated`` (also nested) and ``Required``/``NotRequired`` from ``tp``."""
    items: list[Any] = []
    while True:
        origin = get_origin(tp)
        if origin is typing.Annotated:
            tp, *extra = get_args(tp)
            items[:0] = extra  # outer metadata is applied last
        elif origin is Required or origin is NotRequired:
            (tp,) = get_args(tp)
        else:
            break
    return tp, _merge(items) if items else Meta()


def _merge(items: list[Any]) -> Meta:
    values: dict[str, Any] = {}
    constraints: dict[str, Any] = {}
    for item in _flatten(items):
        if isinstance(item, str):
            values["description"] = item
            continue
        for name in ("description", "title", "format", "examples", "option_titles"):
            value = getattr(item, name, None)
            if value is not None and not callable(value):
                values[name] = tuple(value) if name == "examples" else value
        for name in _CONSTRAINT_NAMES:
            value = getattr(item, name, None)
            if value is not None and not callable(value):
                constraints[name] = value
    return Meta(constraints=tuple(constraints.items()), **values)


def _flatten(items: list[Any]) -> list[Any]:
    # pydantic's FieldInfo keeps its constraints as annotated_types objects in ``metadata``.
    out: list[Any] = []
    for item in items:
        out.append(item)
        nested = getattr(item, "metadata", None)
        if isinstance(nested, list):
            out.extend(nested)
    return out


def type_hints(obj: Any) -> dict[str, Any]:
    """``get_type_hints`` with ``Annotated`` kept; a clear error when a name is unresolvable."""
    try:
        return typing.get_type_hints(obj, include_extras=True)
    except NameError as exc:
        name = getattr(obj, "__qualname__", repr(obj))
        raise TypeError(
            f"Cannot resolve the type hints of {name}: {exc}. Types used in annotations must "
            "be importable from the module (not local to a function) when annotations are "
            "strings (from __future__ import annotations)."
        ) from exc


def is_typeddict(tp: Any) -> bool:
    return isinstance(tp, type) and typing.is_typeddict(tp)


def is_object_class(tp: Any) -> bool:
    """attrs classes, dataclasses and TypedDicts: JSON objects with named fields."""
    return isinstance(tp, type) and (
        attrs.has(tp) or dataclasses.is_dataclass(tp) or is_typeddict(tp)
    )


def is_enum(tp: Any) -> bool:
    return isinstance(tp, type) and issubclass(tp, enum.Enum)


@attrs.frozen(repr=False, eq=False)
class ObjectField(Record):
    """One field of an object class: its JSON name, type, and how to fill it.

    ``init_name`` is the keyword the class's constructor takes (attrs strips leading
    underscores); ``default`` is the default value, or absent when it comes from a factory
    or there is none (see ``required``).
    """

    name: str
    init_name: str
    type: Any
    required: bool
    default: Any = _MISSING
    description: str | None = None

    @property
    def has_default(self) -> bool:
        return self.default is not _MISSING


def object_fields(cls: type) -> list[ObjectField]:
    """The fields of an attrs class, dataclass or TypedDict, in declaration order."""
    hints = type_hints(cls)
    docs = parse_docstring(class_doc(cls)).params
    if is_typeddict(cls):
        required_keys: frozenset[str] = getattr(cls, "__required_keys__", frozenset())
        out = []
        for name, hint in hints.items():
            required = name in required_keys
            # With string annotations Python 3.11 cannot see Required/NotRequired at class
            # creation, so look at the resolved hint again.
            for layer in _layers(hint):
                if layer is Required:
                    required = True
                elif layer is NotRequired:
                    required = False
            out.append(ObjectField(name, name, hint, required, description=docs.get(name)))
        return out
    if attrs.has(cls):
        fields = []
        for field in attrs.fields(cls):
            if not field.init:
                continue
            default = field.default
            if default is attrs.NOTHING:
                required, value = True, _MISSING
            elif isinstance(default, attrs.Factory):  # type: ignore[arg-type]
                required, value = False, _MISSING
            else:
                required, value = False, default
            fields.append(
                ObjectField(
                    field.name,
                    field.alias or field.name,
                    hints.get(field.name, Any),
                    required,
                    value,
                    docs.get(field.name),
                )
            )
        return fields
    out_fields = []
    for dc_field in dataclasses.fields(cls):
        if not dc_field.init:
            continue
        if dc_field.default is not dataclasses.MISSING:
            required, value = False, dc_field.default
        elif dc_field.default_factory is not dataclasses.MISSING:
            required, value = False, _MISSING
        else:
            required, value = True, _MISSING
        out_fields.append(
            ObjectField(
                dc_field.name,
                dc_field.name,
                hints.get(dc_field.name, Any),
                required,
                value,
                docs.get(dc_field.name),
            )
        )
    return out_fields


def _layers(hint: Any) -> list[Any]:
    origins = []
    while True:
        origin = get_origin(hint)
        if origin in (typing.Annotated, Required, NotRequired):
            origins.append(origin)
            hint = get_args(hint)[0]
        else:
            return origins


def class_doc(cls: type) -> str | None:
    """The docstring the user wrote for ``cls`` (not one Python or a library made up)."""
    doc = cls.__dict__.get("__doc__")
    if not isinstance(doc, str):
        return None
    if dataclasses.is_dataclass(cls) and doc.startswith(f"{cls.__name__}("):
        return None  # dataclasses invent "Name(field: type, ...)"
    if is_enum(cls) and doc.strip() in ("An enumeration.", ""):
        return None
    return doc


MISSING: Final = _MISSING
"""Marks "no default" in :class:`ObjectField` and parameter descriptions."""
