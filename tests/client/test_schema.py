"""The JSON Schema subset validator: keyword by keyword, its bounds, and agreement with
``jsonschema`` (the reference implementation, a test dependency) on generated data."""

from __future__ import annotations

from typing import Any

import jsonschema
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from trimcp.client.schema import (
    SchemaUnsupported,
    SchemaViolation,
    json_equal,
    validate,
)

DEFS = {
    "$defs": {
        "point": {
            "type": "object",
            "properties": {"x": {"type": "number"}, "y": {"type": "number"}},
            "required": ["x", "y"],
            "additionalProperties": False,
        }
    },
}

# (schema, instance, path of the first error or None when valid)
CASES: list[tuple[Any, Any, str | None]] = [
    (True, {"any": "thing"}, None),
    (False, 1, ""),
    ({}, [1, "a"], None),
    ({"type": "integer"}, 3, None),
    ({"type": "integer"}, 3.0, None),
    ({"type": "integer"}, 3.5, ""),
    ({"type": "integer"}, True, ""),
    ({"type": "number"}, False, ""),
    ({"type": "number"}, 2.5, None),
    ({"type": ["string", "null"]}, None, None),
    ({"type": ["string", "null"]}, 0, ""),
    ({"type": "object"}, [], ""),
    ({"type": "array"}, {}, ""),
    ({"enum": [1, "a", None]}, 1.0, None),
    ({"enum": [1, "a", None]}, True, ""),
    ({"const": {"a": [1, 2]}}, {"a": [1, 2]}, None),
    ({"const": {"a": [1, 2]}}, {"a": [2, 1]}, ""),
    ({"const": False}, 0, ""),
    (
        {"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a", "b"]},
        {"a": "x"},
        "b",
    ),
    ({"properties": {"a": {"type": "string"}}}, {"a": 1}, "a"),
    ({"properties": {"a": {}}, "additionalProperties": False}, {"a": 1, "zz": 2}, "zz"),
    ({"additionalProperties": {"type": "integer"}}, {"n": 1, "m": "x"}, "m"),
    ({"patternProperties": {"^x": {}}, "additionalProperties": False}, {"q": 1}, None),
    ({"minProperties": 1}, {}, ""),
    ({"maxProperties": 1}, {"a": 1, "b": 2}, ""),
    ({"items": {"type": "integer"}}, [1, 2, "3"], "[2]"),
    ({"prefixItems": [{"type": "string"}], "items": {"type": "integer"}}, ["a", 1, 2], None),
    ({"prefixItems": [{"type": "string"}], "items": {"type": "integer"}}, [1], "[0]"),
    ({"prefixItems": [{}], "items": False}, [1, 2], "[1]"),
    ({"items": [{"type": "string"}], "additionalItems": False}, ["a", "b"], "[1]"),
    ({"minItems": 2}, [1], ""),
    ({"maxItems": 1}, [1, 2], ""),
    ({"uniqueItems": True}, [1, {"a": 1}, {"a": 1.0}], "[2]"),
    ({"uniqueItems": True}, [1, True], None),
    ({"minLength": 2}, "é", ""),
    ({"maxLength": 1}, "é", None),
    ({"minimum": 1}, 1, None),
    ({"minimum": 1}, 0.5, ""),
    ({"exclusiveMinimum": 1}, 1, ""),
    ({"maximum": 1, "exclusiveMaximum": True}, 1, ""),
    ({"exclusiveMaximum": 3}, 2.9, None),
    ({"minimum": 1}, "strings are not numbers", None),
    ({"allOf": [{"type": "integer"}, {"minimum": 3}]}, 2, ""),
    ({"anyOf": [{"type": "string"}, {"type": "integer"}]}, 1, None),
    ({"anyOf": [{"type": "string"}, {"type": "integer"}]}, 1.5, ""),
    ({"oneOf": [{"type": "integer"}, {"minimum": 0}]}, 1, ""),
    ({"oneOf": [{"type": "integer"}, {"minimum": 0}]}, -1, None),
    ({"not": {"type": "string"}}, "s", ""),
    ({"if": {"type": "integer"}, "then": {"minimum": 0}, "else": {"type": "string"}}, -1, ""),
    ({"if": {"type": "integer"}, "then": {"minimum": 0}, "else": {"type": "string"}}, "s", None),
    ({**DEFS, "$ref": "#/$defs/point"}, {"x": 1, "y": 2}, None),
    ({**DEFS, "type": "array", "items": {"$ref": "#/$defs/point"}}, [{"x": 1}], "[0].y"),
    ({"definitions": {"a/b": {"type": "string"}}, "$ref": "#/definitions/a~1b"}, 1, ""),
    (
        {"type": "object", "properties": {"next": {"$ref": "#"}, "v": {"type": "integer"}}},
        {"next": {"next": {"v": "deep"}}},
        "next.next.v",
    ),
    ({"properties": {"a b": {"type": "string"}}}, {"a b": 1}, '["a b"]'),
    ({"format": "email", "pattern": "^x$", "multipleOf": 7}, "anything", None),
]


@pytest.mark.parametrize(("schema", "instance", "path"), CASES)
def test_keywords(schema: Any, instance: Any, path: str | None) -> None:
    if path is None:
        validate(instance, schema)
    else:
        with pytest.raises(SchemaViolation) as info:
            validate(instance, schema)
        assert info.value.path == path
        assert str(info.value) == f"{path}: {info.value.reason}"


@pytest.mark.parametrize(
    ("schema", "instance"),
    [
        ({"$ref": "https://example.com/schema.json"}, 1),
        ({"$ref": "#/$defs/missing"}, 1),
        ({"type": "banana"}, 1),
        ({"type": 5}, 1),
        ({"properties": []}, {"a": 1}),
        ({"required": "a"}, {"a": 1}),
        ({"anyOf": []}, 1),
        ({"minLength": -1}, "a"),
        ({"minimum": "1"}, 1),
        ({"items": 7}, [1]),
        ({"enum": "ab"}, "a"),
        ("not a schema", 1),
    ],
)
def test_schemas_we_cannot_evaluate_are_reported_as_such(schema: Any, instance: Any) -> None:
    with pytest.raises(SchemaUnsupported):
        validate(instance, schema)


def test_self_referencing_schemas_are_bounded() -> None:
    with pytest.raises(SchemaUnsupported, match="deeply"):
        validate(1, {"$ref": "#"})
    with pytest.raises(SchemaUnsupported, match="deeply"):
        validate(1, {"anyOf": [{"$ref": "#"}, {"type": "string"}]}, max_steps=10**9)


def test_exponential_schemas_are_bounded() -> None:
    # Each level tries three branches that all fail deep down: 3**12 evaluations unbounded.
    schema: Any = {"type": "string"}
    for _ in range(12):
        schema = {"anyOf": [schema, schema, schema]}
    with pytest.raises(SchemaUnsupported, match="budget"):
        validate(1, schema)
    with pytest.raises(SchemaUnsupported, match="budget"):
        validate(list(range(5000)), {"uniqueItems": True})


def test_json_equality() -> None:
    assert json_equal(1, 1.0)
    assert not json_equal(1, True)
    assert not json_equal(0, False)
    assert json_equal({"a": [1, None]}, {"a": [1.0, None]})
    assert not json_equal({"a": 1}, {"b": 1})
    assert not json_equal([1], [1, 1])
    assert not json_equal("1", 1)


# --- agreement with jsonschema ----------------------------------------------------------------

SCHEMAS: list[Any] = [
    {
        "type": "object",
        "properties": {
            "a": {"type": "integer", "minimum": 0, "exclusiveMaximum": 5},
            "b": {"type": "string", "maxLength": 2},
            "c": {"type": "array", "items": {"type": ["boolean", "null"]}, "maxItems": 2},
        },
        "required": ["a"],
        "additionalProperties": False,
    },
    {"anyOf": [{"type": "string", "minLength": 1}, {"type": "number", "maximum": 1}]},
    {"oneOf": [{"type": "integer"}, {"type": "number", "minimum": 0}, {"const": "a"}]},
    {"enum": [0, 1.5, "a", None, [1], {"a": 1}, True]},
    {"not": {"anyOf": [{"type": "object"}, {"const": 0}]}},
    {"type": "array", "prefixItems": [{"type": "string"}, {"type": "integer"}], "items": False},
    {"type": "array", "uniqueItems": True, "minItems": 1},
    {"additionalProperties": {"type": "integer"}, "minProperties": 1, "maxProperties": 2},
    {"if": {"required": ["a"]}, "then": {"required": ["b"]}, "else": {"maxProperties": 0}},
    {
        "$defs": {"node": {"type": "object", "properties": {"a": {"$ref": "#/$defs/node"}}}},
        "anyOf": [{"$ref": "#/$defs/node"}, {"type": "array", "items": {"$ref": "#"}}],
    },
    {"allOf": [{"required": ["a"]}, {"properties": {"a": {"type": "string"}}}]},
]

KEYS = st.sampled_from(["a", "b", "c"])
LEAVES = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-3, max_value=6)
    | st.sampled_from([0.5, 1.5, -0.0, 2.0, 1e300])
    | st.text(alphabet="ab", max_size=3)
)
JSON = st.recursive(
    LEAVES,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(KEYS, inner, max_size=3),
    max_leaves=8,
)


@pytest.mark.parametrize("schema", SCHEMAS, ids=[str(i) for i in range(len(SCHEMAS))])
@settings(max_examples=300, deadline=None)
@given(instance=JSON)
def test_agrees_with_jsonschema(schema: Any, instance: Any) -> None:
    expected = jsonschema.Draft202012Validator(schema).is_valid(instance)
    try:
        validate(instance, schema)
        ours = True
    except SchemaViolation:
        ours = False
    assert ours == expected, (schema, instance)
