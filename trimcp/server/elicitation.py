"""Elicitation forms from Python types, and what the user answered.

A form is a flat object of primitive fields (the spec's restricted schema). From an attrs
class, dataclass or TypedDict each field becomes:

========================================  ==============================================
``str``                                   a text field (``Field(format=, min_length=...)``)
``int`` / ``float``                       an integer / number field (``Field(ge=, le=)``)
``bool``                                  a checkbox
``Literal["a", "b"]`` / a str ``Enum``    a single choice (labelled with
                                          ``Field(option_titles={...})``)
``list[Literal[...]]`` / ``set[Enum]``    a multiple choice (2025-11-25 only)
``X | None``                              the same field, not required
========================================  ==============================================

Titles and descriptions come from ``Annotated[..., Field(title=..., description=...)]``
(or a description string, or the class docstring's ``Attributes:`` section); defaults
from the field defaults. A ``dict`` is taken as a ready-made restricted schema.
"""

from __future__ import annotations

import typing
from collections.abc import Callable, Mapping
from typing import Any, Generic, Literal, TypeVar, get_args, get_origin

import attrs

from trimcp import serde
from trimcp._record import Record
from trimcp.protocol.versions import V2025_11_25
from trimcp.server.convert import converter_for, to_json
from trimcp.server.typeforms import MISSING, Meta, is_enum, is_object_class, object_fields, unwrap
from trimcp.types import (
    BooleanSchema,
    ElicitationSchema,
    EnumOption,
    LegacyTitledEnumSchema,
    NumberSchema,
    PrimitiveSchemaDefinition,
    StringSchema,
    TitledEnumItems,
    TitledMultiSelectEnumSchema,
    TitledSingleSelectEnumSchema,
    UntitledEnumItems,
    UntitledMultiSelectEnumSchema,
    UntitledSingleSelectEnumSchema,
)

T = TypeVar("T")

Action = Literal["accept", "decline", "cancel"]


@attrs.frozen(repr=False, eq=False)
class ElicitationOutcome(Record, Generic[T]):
    """What the user did with a form: accepted it (``data`` holds the answers), declined
    it, or cancelled (dismissed) it.

    ``data`` is an instance of the requested type (a plain dict for a dict schema), and
    ``None`` unless ``action == "accept"``. ``content`` is the answer as the client sent it.
    """

    action: Action
    data: T | None = None
    content: dict[str, Any] | None = None

    @property
    def accepted(self) -> bool:
        return self.action == "accept"

    @property
    def declined(self) -> bool:
        return self.action == "decline"

    @property
    def cancelled(self) -> bool:
        return self.action == "cancel"


@attrs.frozen(repr=False, eq=False)
class ElicitationForm(Record):
    """A compiled form: the schema to send and how to read the answer back."""

    schema: ElicitationSchema
    read: Callable[[dict[str, Any]], Any]


def build_form(spec: type | Mapping[str, Any], version: str | None) -> ElicitationForm:
    """The form for ``spec`` (a class or a raw restricted schema) under ``version``.

    Raises ``TypeError`` for a type that cannot be a form, ``ValueError`` for a bad raw
    schema or a field the negotiated version cannot express (multi-select before
    2025-11-25).
    """
    if isinstance(spec, Mapping):
        try:
            schema = serde.structure(dict(spec), ElicitationSchema)
        except serde.ShapeError as exc:
            raise ValueError(f"Not a valid elicitation schema: {exc}") from None
        return ElicitationForm(schema, dict)
    if not is_object_class(spec):
        raise TypeError(
            f"An elicitation form is an attrs class, dataclass, TypedDict or a schema dict, "
            f"not {spec!r}"
        )
    properties: dict[str, PrimitiveSchemaDefinition] = {}
    required: list[str] = []
    fill_none: list[str] = []  # "X | None" without a default: absent means None
    for field in object_fields(spec):
        base, meta = unwrap(field.type)
        optional = False
        if get_origin(base) in (typing.Union, _UnionType) and type(None) in get_args(base):
            others = [arg for arg in get_args(base) if arg is not type(None)]
            if len(others) != 1:
                raise TypeError(f"Form field {field.name!r} must have one type, not {base!r}")
            base, inner = unwrap(others[0])
            meta = _combine(inner, meta)
            optional = True
        description = meta.description or field.description
        meta = attrs.evolve(meta, description=description)
        properties[field.name] = _field_schema(field.name, base, meta, field.default, version)
        if field.required and not optional:
            required.append(field.name)
        elif field.required:
            fill_none.append(field.name)
    schema = ElicitationSchema(properties=properties, required=required or None)
    convert = converter_for(spec)

    def read(content: dict[str, Any]) -> Any:
        missing = {name: None for name in fill_none if name not in content}
        return convert({**missing, **content} if missing else content)

    return ElicitationForm(schema, read)


_UnionType = type(int | str)


def _combine(inner: Meta, outer: Meta) -> Meta:
    merged = attrs.asdict(inner, recurse=False)
    for key, value in attrs.asdict(outer, recurse=False).items():
        if value not in (None, ()):
            merged[key] = value
    return Meta(**merged)


def _default(value: Any) -> Any:
    if value is MISSING:
        return None
    try:
        return to_json(value)
    except TypeError:
        return None


def _field_schema(
    name: str, tp: Any, meta: Meta, default: Any, version: str | None
) -> PrimitiveSchemaDefinition:
    title, description, value = meta.title, meta.description, _default(default)
    if tp is bool:
        return BooleanSchema(title=title, description=description, default=value)
    if tp is int or tp is float:
        return NumberSchema(
            type="integer" if tp is int else "number",
            title=title,
            description=description,
            minimum=meta.constraint("ge"),
            maximum=meta.constraint("le"),
            default=value,
        )
    if tp is str:
        fmt = meta.format
        if fmt not in (None, "email", "uri", "date", "date-time"):
            raise ValueError(f"Form field {name!r}: unsupported string format {fmt!r}")
        return StringSchema(
            title=title,
            description=description,
            min_length=meta.constraint("min_length"),
            max_length=meta.constraint("max_length"),
            format=fmt,  # type: ignore[arg-type]
            default=value,
        )
    choices = _choices(tp)
    if choices is not None:
        titles = meta.option_titles
        if titles:
            options = [EnumOption(const=c, title=titles.get(c, c)) for c in choices]
            if version is not None and version < V2025_11_25:
                return LegacyTitledEnumSchema(
                    enum=choices,
                    enum_names=[option.title for option in options],
                    title=title,
                    description=description,
                    default=value,
                )
            return TitledSingleSelectEnumSchema(
                one_of=options, title=title, description=description, default=value
            )
        return UntitledSingleSelectEnumSchema(
            enum=choices, title=title, description=description, default=value
        )
    origin = get_origin(tp)
    if origin in (list, set, frozenset) and get_args(tp):
        item, _ = unwrap(get_args(tp)[0])
        item_choices = _choices(item)
        if item_choices is not None:
            if version is not None and version < V2025_11_25:
                raise ValueError(
                    f"Form field {name!r}: multiple-choice fields need protocol version "
                    f"2025-11-25 or later (this session uses {version})"
                )
            titles = meta.option_titles
            common: dict[str, Any] = {
                "title": title,
                "description": description,
                "min_items": meta.constraint("min_length"),
                "max_items": meta.constraint("max_length"),
                "default": value,
            }
            if titles:
                options = [EnumOption(const=c, title=titles.get(c, c)) for c in item_choices]
                return TitledMultiSelectEnumSchema(items=TitledEnumItems(any_of=options), **common)
            return UntitledMultiSelectEnumSchema(
                items=UntitledEnumItems(enum=item_choices), **common
            )
    raise TypeError(
        f"Form field {name!r} has type {tp!r}; forms hold str, int, float, bool, "
        "Literal/Enum choices and lists of choices"
    )


def _choices(tp: Any) -> list[str] | None:
    if get_origin(tp) is Literal:
        values = list(get_args(tp))
    elif is_enum(tp):
        values = [member.value for member in tp]
    else:
        return None
    if not all(isinstance(value, str) for value in values):
        raise TypeError(f"Form choices must be strings: {tp!r}")
    return values
