"""Elicitation: ``elicitation/create`` (form and URL modes) and its completion notification.

A form asks for a flat object whose properties use the restricted schemas below
(:data:`PrimitiveSchemaDefinition`). On the wire they are told apart by ``type`` and, for
strings and arrays, by which keys are present (``oneOf``, ``enum``/``enumNames``,
``items.anyOf``).
"""

from typing import Literal, TypeAlias

import attrs

from trimcp.types.base import WireType
from trimcp.types.common import Result
from trimcp.types.tasks import TaskAugmentedRequestParams


@attrs.frozen(kw_only=True, repr=False, eq=False)
class StringSchema(WireType):
    """A free-text form field."""

    type: Literal["string"] = "string"
    title: str | None = None
    description: str | None = None
    min_length: int | None = None
    max_length: int | None = None
    format: Literal["email", "uri", "date", "date-time"] | None = None
    default: str | None = None


@attrs.frozen(kw_only=True, repr=False, eq=False)
class NumberSchema(WireType):
    """A numeric form field (``type`` is ``"number"`` or ``"integer"``)."""

    type: Literal["number", "integer"]
    title: str | None = None
    description: str | None = None
    minimum: float | None = None
    maximum: float | None = None
    default: float | None = None


@attrs.frozen(kw_only=True, repr=False, eq=False)
class BooleanSchema(WireType):
    """A yes/no form field."""

    type: Literal["boolean"] = "boolean"
    title: str | None = None
    description: str | None = None
    default: bool | None = None


@attrs.frozen(kw_only=True, repr=False, eq=False)
class EnumOption(WireType):
    """One option of a titled enum: its value (``const``) and display label."""

    const: str
    title: str


@attrs.frozen(kw_only=True, repr=False, eq=False)
class UntitledSingleSelectEnumSchema(WireType):
    """Pick one string from ``enum``."""

    type: Literal["string"] = "string"
    enum: list[str]
    title: str | None = None
    description: str | None = None
    default: str | None = None


@attrs.frozen(kw_only=True, repr=False, eq=False)
class TitledSingleSelectEnumSchema(WireType):
    """Pick one option from ``one_of``, each with a display label."""

    type: Literal["string"] = "string"
    one_of: list[EnumOption]
    title: str | None = None
    description: str | None = None
    default: str | None = None


@attrs.frozen(kw_only=True, repr=False, eq=False)
class LegacyTitledEnumSchema(WireType):
    """Pick one string from ``enum``, labelled by ``enum_names`` (deprecated form).

    ``enum_names`` is required here: without it the schema is an
    :class:`UntitledSingleSelectEnumSchema`, and structures as one.
    """

    type: Literal["string"] = "string"
    enum: list[str]
    enum_names: list[str]
    title: str | None = None
    description: str | None = None
    default: str | None = None


@attrs.frozen(kw_only=True, repr=False, eq=False)
class UntitledEnumItems(WireType):
    """The items of an untitled multi-select: strings from ``enum``."""

    type: Literal["string"] = "string"
    enum: list[str]


@attrs.frozen(kw_only=True, repr=False, eq=False)
class TitledEnumItems(WireType):
    """The items of a titled multi-select: options from ``any_of``."""

    any_of: list[EnumOption]


@attrs.frozen(kw_only=True, repr=False, eq=False)
class UntitledMultiSelectEnumSchema(WireType):
    """Pick any number of strings from ``items.enum``."""

    type: Literal["array"] = "array"
    items: UntitledEnumItems
    title: str | None = None
    description: str | None = None
    min_items: int | None = None
    max_items: int | None = None
    default: list[str] | None = None


@attrs.frozen(kw_only=True, repr=False, eq=False)
class TitledMultiSelectEnumSchema(WireType):
    """Pick any number of options from ``items.any_of``, each with a display label."""

    type: Literal["array"] = "array"
    items: TitledEnumItems
    title: str | None = None
    description: str | None = None
    min_items: int | None = None
    max_items: int | None = None
    default: list[str] | None = None


PrimitiveSchemaDefinition: TypeAlias = (
    StringSchema
    | NumberSchema
    | BooleanSchema
    | UntitledSingleSelectEnumSchema
    | TitledSingleSelectEnumSchema
    | UntitledMultiSelectEnumSchema
    | TitledMultiSelectEnumSchema
    | LegacyTitledEnumSchema
)
"""The schema of one form field."""


@attrs.frozen(kw_only=True, repr=False, eq=False)
class ElicitationSchema(WireType):
    """The restricted JSON Schema of a form: a flat object of primitive fields."""

    type: Literal["object"] = "object"
    properties: dict[str, PrimitiveSchemaDefinition]
    required: list[str] | None = None
    schema: str | None = attrs.field(default=None, metadata={"wire": "$schema"})


@attrs.frozen(kw_only=True, repr=False, eq=False)
class ElicitRequestFormParams(TaskAugmentedRequestParams):
    """Params of ``elicitation/create`` in form mode.

    ``mode`` is optional on the wire (absent before 2025-11-25) and kept as received.
    """

    message: str
    requested_schema: ElicitationSchema
    mode: Literal["form"] | None = None


@attrs.frozen(kw_only=True, repr=False, eq=False)
class ElicitRequestURLParams(TaskAugmentedRequestParams):
    """Params of ``elicitation/create`` in URL mode (2025-11-25).

    ``elicitation_id`` is required in 2025-11-25 and gone in 2026-07-28.
    """

    mode: Literal["url"] = "url"
    message: str
    url: str
    elicitation_id: str | None = None


ElicitRequestParams: TypeAlias = ElicitRequestFormParams | ElicitRequestURLParams
"""Params of ``elicitation/create``; ``mode == "url"`` selects URL mode, else form mode."""

ElicitValue: TypeAlias = str | int | float | bool | list[str]
"""A submitted form value."""


@attrs.frozen(kw_only=True, repr=False, eq=False)
class ElicitResult(Result):
    """The result of ``elicitation/create``; ``content`` only when accepted in form mode."""

    action: Literal["accept", "decline", "cancel"]
    content: dict[str, ElicitValue] | None = None


@attrs.frozen(kw_only=True, repr=False, eq=False)
class ElicitationCompleteNotificationParams(WireType):
    """Params of ``notifications/elicitation/complete``: a URL-mode elicitation finished."""

    elicitation_id: str
