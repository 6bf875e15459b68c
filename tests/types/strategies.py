"""Hypothesis strategies for every wire type, built generically from attrs fields.

``instances(cls)`` draws objects whose unstructured form is also valid against the
2025-11-25 schema: a few fields carry constraints the Python types cannot express
(priorities in [0, 1], tool schemas of ``type: object``...), listed in ``_FIELD_OVERRIDES``.
"""

from functools import cache
from types import NoneType, UnionType
from typing import Any, Literal, Union, get_args, get_origin

import attrs
from hypothesis import strategies as st

import trimcp.types as t

SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**53), max_value=2**53),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=8),
)
JSON_VALUES: st.SearchStrategy[Any] = st.recursive(
    SCALARS,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=8,
)
JSON_OBJECTS = st.dictionaries(st.text(max_size=6), JSON_VALUES, max_size=3)
# ``_meta`` of request params types ``progressToken``; keep random keys clear of it.
META = st.dictionaries(
    st.text(max_size=6).filter(lambda k: k != "progressToken"), JSON_VALUES, max_size=3
)
OBJECT_SCHEMAS = st.fixed_dictionaries(
    {"type": st.just("object")},
    optional={"properties": st.dictionaries(st.text(max_size=6), JSON_OBJECTS, max_size=2)},
)
UNIT = st.floats(min_value=0, max_value=1)


def _optional(strategy: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.none() | strategy


_FIELD_OVERRIDES: dict[tuple[type, str], st.SearchStrategy[Any]] = {
    (t.Annotations, "priority"): _optional(UNIT),
    (t.ModelPreferences, "cost_priority"): _optional(UNIT),
    (t.ModelPreferences, "speed_priority"): _optional(UNIT),
    (t.ModelPreferences, "intelligence_priority"): _optional(UNIT),
    (t.Tool, "input_schema"): OBJECT_SCHEMAS,
    (t.Tool, "output_schema"): _optional(OBJECT_SCHEMAS),
    # 2025-11-25 wants an object; later revisions allow any JSON value.
    (t.CallToolResult, "structured_content"): _optional(JSON_OBJECTS),
    (t.ToolResultContent, "structured_content"): _optional(JSON_OBJECTS),
    # Required in 2025-11-25, gone in 2026-07-28.
    (t.ElicitRequestURLParams, "elicitation_id"): st.text(max_size=8),
    # 2025-11-25 allows no floats in form answers.
    (t.ElicitResult, "content"): _optional(
        st.dictionaries(
            st.text(max_size=6),
            st.text(max_size=6) | st.integers() | st.booleans() | st.lists(st.text(max_size=4)),
            max_size=3,
        )
    ),
}


def strategy_for(tp: Any, owner: type | None = None, name: str = "") -> st.SearchStrategy[Any]:
    """A strategy for values of the annotation ``tp`` (of field ``name`` of ``owner``)."""
    if owner is not None and (owner, name) in _FIELD_OVERRIDES:
        return _FIELD_OVERRIDES[owner, name]
    if name == "meta":
        return _optional(META)
    if tp is Any:
        return JSON_VALUES
    if tp is str:
        return st.text(max_size=8)
    if tp is bool:
        return st.booleans()
    if tp is int:
        return st.integers(min_value=-(2**63), max_value=2**63)
    if tp is float:
        return st.floats(allow_nan=False, allow_infinity=False) | st.integers(-1000, 1000)
    origin = get_origin(tp)
    if origin is Literal:
        return st.sampled_from(get_args(tp))
    if origin in (Union, UnionType):
        return st.one_of([st.none() if m is NoneType else strategy_for(m) for m in get_args(tp)])
    if origin is list:
        return st.lists(strategy_for(get_args(tp)[0]), max_size=3)
    if origin is dict:
        value_type = get_args(tp)[1]
        if value_type is Any:
            return JSON_OBJECTS
        return st.dictionaries(st.text(max_size=6), strategy_for(value_type), max_size=3)
    if isinstance(tp, type) and attrs.has(tp):
        return instances(tp)
    raise TypeError(f"no strategy for {tp!r}")


@cache
def instances(cls: type) -> st.SearchStrategy[Any]:
    """Objects of the wire class ``cls``, with every field drawn from its type."""
    fields = {f.name: strategy_for(f.type, cls, f.name) for f in attrs.fields(cls)}
    return st.builds(cls, **fields)


def wire_classes() -> list[type]:
    """Every attrs class re-exported from :mod:`trimcp.types`."""
    return sorted(
        (v for v in t.load_all().values() if isinstance(v, type) and attrs.has(v)),
        key=lambda c: c.__name__,
    )
