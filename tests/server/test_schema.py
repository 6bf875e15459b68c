"""JSON Schema generation from type hints, against hand-written schemas, and the converter
that enforces the same schemas (checked against the jsonschema library)."""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Mapping, Sequence
from typing import Annotated, Any, Literal, NotRequired, Optional, Required, TypedDict

import attrs
import jsonschema
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from trimcp.server import Field
from trimcp.server.convert import ValidationError, converter_for, to_json
from trimcp.server.schema import json_schema, root_object_schema
from trimcp.server.signature import ArgumentBinder, inspect_function


class Color(enum.Enum):
    """A primary colour."""

    RED = "red"
    GREEN = "green"


class Level(enum.IntEnum):
    LOW = 1
    HIGH = 2


@attrs.frozen
class Address:
    """Where someone lives.

    Attributes:
        street: The street and number.
    """

    street: str
    city: str = "Paris"


@attrs.define
class Person:
    name: str
    address: Address
    tags: list[str] = attrs.Factory(list)


@dataclasses.dataclass
class Box:
    width: float
    label: str | None = None


class Movie(TypedDict):
    title: str
    year: NotRequired[int]


class Partial(TypedDict, total=False):
    title: Required[str]
    rating: float


@attrs.frozen
class Tree:
    value: int
    children: list[Tree] = attrs.Factory(list)


@dataclasses.dataclass
class Validated:
    n: int

    def __post_init__(self) -> None:
        if self.n < 0:
            raise ValueError("n must not be negative")


SCHEMAS: list[tuple[Any, dict[str, Any]]] = [
    (str, {"type": "string"}),
    (int, {"type": "integer"}),
    (float, {"type": "number"}),
    (bool, {"type": "boolean"}),
    (None, {"type": "null"}),
    (Any, {}),
    (Optional[int], {"anyOf": [{"type": "integer"}, {"type": "null"}]}),  # noqa: UP045
    (int | str, {"anyOf": [{"type": "integer"}, {"type": "string"}]}),
    (Literal["a", "b"], {"type": "string", "enum": ["a", "b"]}),
    (Literal[1, 2], {"type": "integer", "enum": [1, 2]}),
    (Literal["a", 1], {"enum": ["a", 1]}),
    (list[int], {"type": "array", "items": {"type": "integer"}}),
    (Sequence[str], {"type": "array", "items": {"type": "string"}}),
    (list, {"type": "array"}),
    (tuple[int, ...], {"type": "array", "items": {"type": "integer"}}),
    (
        tuple[int, str],
        {
            "type": "array",
            "prefixItems": [{"type": "integer"}, {"type": "string"}],
            "minItems": 2,
            "maxItems": 2,
        },
    ),
    (set[str], {"type": "array", "items": {"type": "string"}, "uniqueItems": True}),
    (frozenset[int], {"type": "array", "items": {"type": "integer"}, "uniqueItems": True}),
    (dict[str, int], {"type": "object", "additionalProperties": {"type": "integer"}}),
    (dict[str, Any], {"type": "object"}),
    (Mapping[str, float], {"type": "object", "additionalProperties": {"type": "number"}}),
    (
        Color,
        {
            "$ref": "#/$defs/Color",
            "$defs": {
                "Color": {
                    "type": "string",
                    "enum": ["red", "green"],
                    "description": "A primary colour.",
                }
            },
        },
    ),
    (Level, {"$ref": "#/$defs/Level", "$defs": {"Level": {"type": "integer", "enum": [1, 2]}}}),
    (
        Address,
        {
            "$ref": "#/$defs/Address",
            "$defs": {
                "Address": {
                    "type": "object",
                    "properties": {
                        "street": {"type": "string", "description": "The street and number."},
                        "city": {"type": "string", "default": "Paris"},
                    },
                    "required": ["street"],
                    "description": "Where someone lives.",
                }
            },
        },
    ),
    (
        Box,
        {
            "$ref": "#/$defs/Box",
            "$defs": {
                "Box": {
                    "type": "object",
                    "properties": {
                        "width": {"type": "number"},
                        "label": {
                            "anyOf": [{"type": "string"}, {"type": "null"}],
                            "default": None,
                        },
                    },
                    "required": ["width"],
                }
            },
        },
    ),
    (
        Movie,
        {
            "$ref": "#/$defs/Movie",
            "$defs": {
                "Movie": {
                    "type": "object",
                    "properties": {"title": {"type": "string"}, "year": {"type": "integer"}},
                    "required": ["title"],
                }
            },
        },
    ),
    (
        Partial,
        {
            "$ref": "#/$defs/Partial",
            "$defs": {
                "Partial": {
                    "type": "object",
                    "properties": {"title": {"type": "string"}, "rating": {"type": "number"}},
                    "required": ["title"],
                }
            },
        },
    ),
    (
        Person,
        {
            "$ref": "#/$defs/Person",
            "$defs": {
                "Person": {
                    "type": "object",
                    "properties": {
                        "name": {"type": "string"},
                        "address": {"$ref": "#/$defs/Address"},
                        "tags": {"type": "array", "items": {"type": "string"}},
                    },
                    "required": ["name", "address"],
                },
                "Address": {
                    "type": "object",
                    "properties": {
                        "street": {"type": "string", "description": "The street and number."},
                        "city": {"type": "string", "default": "Paris"},
                    },
                    "required": ["street"],
                    "description": "Where someone lives.",
                },
            },
        },
    ),
    (
        Tree,
        {
            "$ref": "#/$defs/Tree",
            "$defs": {
                "Tree": {
                    "type": "object",
                    "properties": {
                        "value": {"type": "integer"},
                        "children": {"type": "array", "items": {"$ref": "#/$defs/Tree"}},
                    },
                    "required": ["value"],
                }
            },
        },
    ),
    (Annotated[str, "A city name"], {"type": "string", "description": "A city name"}),
    (
        Annotated[int, Field("Days ahead", ge=1, le=14)],
        {"type": "integer", "description": "Days ahead", "minimum": 1, "maximum": 14},
    ),
    (
        Annotated[str, Field(title="Code", min_length=2, max_length=3, pattern="^[A-Z]+$")],
        {"type": "string", "title": "Code", "minLength": 2, "maxLength": 3, "pattern": "^[A-Z]+$"},
    ),
    (
        Annotated[list[int], Field(min_length=1, gt=0)],
        {"type": "array", "items": {"type": "integer"}, "minItems": 1},
    ),
    (
        list[Annotated[float, Field(gt=0, lt=1)]],
        {
            "type": "array",
            "items": {"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 1},
        },
    ),
]


@pytest.mark.parametrize(("tp", "expected"), SCHEMAS, ids=lambda v: str(v)[:40])
def test_schema_of_each_supported_type(tp: Any, expected: dict[str, Any]) -> None:
    schema = json_schema(tp)
    assert schema == expected
    jsonschema.Draft202012Validator.check_schema(schema)


def test_pydantic_style_field_metadata_is_read() -> None:
    pydantic = pytest.importorskip("pydantic")
    tp = Annotated[int, pydantic.Field(description="How many", ge=1)]
    assert json_schema(tp) == {"type": "integer", "description": "How many", "minimum": 1}
    with pytest.raises(ValidationError, match="at least 1"):
        converter_for(tp)(0)


def test_two_classes_with_one_name_get_distinct_defs() -> None:
    first = attrs.make_class("Item", {"a": attrs.field(type=int)})
    second = attrs.make_class("Item", {"b": attrs.field(type=str)})
    schema = json_schema(tuple[first, second])  # type: ignore[valid-type]
    assert set(schema["$defs"]) == {"Item", "Item2"}


def test_unsupported_types_are_refused_at_registration() -> None:
    import datetime

    with pytest.raises(TypeError, match="JSON Schema"):
        json_schema(datetime.date)
    with pytest.raises(TypeError, match="keys must be strings"):
        json_schema(dict[int, str])
    with pytest.raises(TypeError):
        converter_for(datetime.date)


def test_root_object_schema_inlines_the_top_class() -> None:
    assert root_object_schema(Address) == json_schema(Address)["$defs"]["Address"]
    schema = root_object_schema(Person)
    assert schema is not None
    assert schema["properties"]["address"] == {"$ref": "#/$defs/Address"}
    assert set(schema["$defs"]) == {"Address"}
    tree = root_object_schema(Tree)
    assert tree is not None
    assert "Tree" in tree["$defs"]  # recursive: the def stays
    assert root_object_schema(dict[str, int]) == json_schema(dict[str, int])
    assert root_object_schema(list[int]) is None
    assert root_object_schema(int) is None


# --- converting: the converter accepts exactly what the schema accepts ---------------------

SAMPLES: list[tuple[Any, Any, Any]] = [
    # (type, JSON input, expected Python value or ValidationError)
    (str, "x", "x"),
    (str, 5, ValidationError),
    (int, 5, 5),
    (int, 5.0, 5),
    (int, 5.5, ValidationError),
    (int, True, ValidationError),
    (int, "5", ValidationError),
    (float, 2, 2.0),
    (float, False, ValidationError),
    (bool, True, True),
    (bool, 1, ValidationError),
    (None, None, None),
    (None, 0, ValidationError),
    (Optional[int], None, None),  # noqa: UP045
    (int | str, "a", "a"),
    (int | str, [], ValidationError),
    (Literal["a", "b"], "b", "b"),
    (Literal["a", "b"], "c", ValidationError),
    (Literal[1], True, ValidationError),
    (Color, "red", Color.RED),
    (Color, "RED", ValidationError),
    (Level, 2, Level.HIGH),
    (Level, True, ValidationError),
    (list[int], [1, 2], [1, 2]),
    (list[int], [1, "x"], ValidationError),
    (list[int], {"a": 1}, ValidationError),
    (tuple[int, ...], [1, 2], (1, 2)),
    (tuple[int, str], [1, "a"], (1, "a")),
    (tuple[int, str], [1], ValidationError),
    (set[str], ["a", "b"], {"a", "b"}),
    (set[str], ["a", "a"], ValidationError),
    (frozenset[int], [3], frozenset({3})),
    (dict[str, int], {"a": 1}, {"a": 1}),
    (dict[str, int], {"a": "1"}, ValidationError),
    (Address, {"street": "Rue 1"}, Address(street="Rue 1")),
    (Address, {"street": "Rue 1", "extra": True}, Address(street="Rue 1")),
    (Address, {"city": "Lyon"}, ValidationError),
    (Address, "Rue 1", ValidationError),
    (
        Person,
        {"name": "Ann", "address": {"street": "S", "city": "C"}, "tags": ["x"]},
        Person(name="Ann", address=Address(street="S", city="C"), tags=["x"]),
    ),
    (Person, {"name": "Ann", "address": {"street": 1}}, ValidationError),
    (Box, {"width": 1, "label": None}, Box(width=1.0, label=None)),
    (Movie, {"title": "T"}, {"title": "T"}),
    (Movie, {"title": "T", "year": 1999}, {"title": "T", "year": 1999}),
    (Movie, {"year": 1999}, ValidationError),
    (Partial, {"title": "T", "rating": 4}, {"title": "T", "rating": 4.0}),
    (Tree, {"value": 1, "children": [{"value": 2}]}, Tree(1, [Tree(2)])),
    (Annotated[int, Field(ge=1, le=3)], 3, 3),
    (Annotated[int, Field(ge=1, le=3)], 4, ValidationError),
    (Annotated[str, Field(min_length=2)], "a", ValidationError),
    (Annotated[str, Field(pattern="^[a-z]+$")], "Ab", ValidationError),
    (Annotated[list[int], Field(max_length=1)], [1, 2], ValidationError),
    (Any, {"x": [1]}, {"x": [1]}),
]


@pytest.mark.parametrize(("tp", "value", "expected"), SAMPLES, ids=lambda v: str(v)[:30])
def test_converter_agrees_with_the_schema(tp: Any, value: Any, expected: Any) -> None:
    convert = converter_for(tp)
    validator = jsonschema.Draft202012Validator(json_schema(tp))
    if expected is ValidationError:
        with pytest.raises(ValidationError):
            convert(value)
        # The schema refuses it too, except where Python is stricter than JSON Schema
        # (nothing here) or the check is a user's validator.
        assert not validator.is_valid(value)
    else:
        result = convert(value)
        assert result == expected
        assert type(result) is type(expected)
        assert validator.is_valid(value)


def test_converter_errors_carry_the_path() -> None:
    convert = converter_for(Person)
    with pytest.raises(ValidationError) as info:
        convert({"name": "A", "address": {"street": "S"}, "tags": ["a", 3]})
    assert info.value.path == "tags[1]"
    assert info.value.reason == "expected a string, got integer"
    with pytest.raises(ValidationError) as info:
        convert({"name": "A", "address": {}})
    assert info.value.path == "address.street"
    assert info.value.reason == "required property missing"


def test_a_users_own_validation_is_a_validation_error() -> None:
    with pytest.raises(ValidationError, match="must not be negative"):
        converter_for(Validated)({"n": -1})


def test_to_json_of_python_values() -> None:
    value = {
        "person": Person(name="A", address=Address(street="S")),
        "box": Box(width=2.5),
        "color": Color.GREEN,
        "level": Level.LOW,
        "items": (1, 2),
        "set": frozenset({"x"}),
    }
    assert to_json(value) == {
        "person": {"name": "A", "address": {"street": "S", "city": "Paris"}, "tags": []},
        "box": {"width": 2.5, "label": None},
        "color": "green",
        "level": 1,
        "items": [1, 2],
        "set": ["x"],
    }
    with pytest.raises(TypeError):
        to_json(object())
    with pytest.raises(TypeError):
        to_json(float("nan"))
    with pytest.raises(TypeError):
        to_json({1: "a"})
    cyclic: list[Any] = []
    cyclic.append(cyclic)
    with pytest.raises(TypeError, match="deeply"):
        to_json(cyclic)


# --- whole input schemas from signatures ----------------------------------------------------


def forecast(
    city: Annotated[str, "The city"],
    days: Annotated[int, Field(ge=1, le=7)] = 3,
    units: Literal["metric", "imperial"] = "metric",
    home: Address | None = None,
    *,
    ctx: Any = None,
) -> str:
    """Get the forecast.

    More text that is not the summary.

    Args:
        city: Overridden by Annotated.
        days: How many days.
        units: Which units.
    """
    return city


def test_input_schema_of_a_function() -> None:
    info = inspect_function(forecast)
    assert info.summary == "Get the forecast."
    assert info.context_param is None  # annotated Any: an ordinary parameter named ctx
    schema = ArgumentBinder(info).schema
    assert schema == {
        "type": "object",
        "properties": {
            "city": {"type": "string", "description": "The city"},
            "days": {
                "type": "integer",
                "minimum": 1,
                "maximum": 7,
                "description": "How many days.",
                "default": 3,
            },
            "units": {
                "type": "string",
                "enum": ["metric", "imperial"],
                "description": "Which units.",
                "default": "metric",
            },
            "home": {
                "anyOf": [{"$ref": "#/$defs/Address"}, {"type": "null"}],
                "default": None,
            },
            "ctx": {"default": None},
        },
        "required": ["city"],
        "$defs": {"Address": json_schema(Address)["$defs"]["Address"]},
    }
    jsonschema.Draft202012Validator.check_schema(schema)


def test_binder_converts_and_reports_the_argument() -> None:
    binder = ArgumentBinder(inspect_function(forecast))
    kwargs = binder.bind({"city": "Oslo", "home": {"street": "S"}, "unknown": 1}, None)
    assert kwargs == {"city": "Oslo", "home": Address(street="S")}
    with pytest.raises(ValidationError) as info:
        binder.bind({"city": "Oslo", "days": 9}, None)
    assert info.value.path == "days"
    assert "at most 7" in info.value.reason
    with pytest.raises(ValidationError) as info:
        binder.bind({}, None)
    assert info.value.path == "city"


def test_functions_clients_cannot_call_are_refused() -> None:
    def star(*args: int) -> None: ...

    def kw(**kwargs: int) -> None: ...

    def positional(a: int, /) -> None: ...

    for fn in (star, kw, positional):
        with pytest.raises(TypeError):
            inspect_function(fn)


# --- property: on any JSON value, the converter and the schema agree -----------------------

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-5, 5)
    | st.sampled_from([0.5, 2.0, -1.5])
    | st.sampled_from(["a", "b", "red", "green", "", "Rue 1"]),
    lambda children: (
        st.lists(children, max_size=3)
        | st.dictionaries(
            st.sampled_from(
                [
                    "street",
                    "city",
                    "name",
                    "address",
                    "tags",
                    "title",
                    "year",
                    "rating",
                    "width",
                    "label",
                    "value",
                    "children",
                    "x",
                ]
            ),
            children,
            max_size=4,
        )
    ),
    max_leaves=8,
)

AGREEMENT_TYPES = [tp for tp, _ in SCHEMAS] + [Validated]


@pytest.mark.parametrize("tp", AGREEMENT_TYPES, ids=lambda v: str(v)[:40])
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(value=json_values)
def test_converter_and_schema_agree_on_any_json(tp: Any, value: Any) -> None:
    convert = converter_for(tp)
    valid = jsonschema.Draft202012Validator(json_schema(tp)).is_valid(value)
    try:
        convert(value)
    except ValidationError:
        accepted = False
    else:
        accepted = True
    if tp is Validated and valid and not accepted:
        return  # the class's own __post_init__ is stricter than any schema
    assert accepted == valid
