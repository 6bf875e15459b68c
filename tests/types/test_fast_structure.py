"""The hot path's structure hooks (no error bookkeeping; the instance made by setting its
slots) agree with the detailed ones on every wire class: the same object for good data,
an error for bad data (which :func:`trimcp.serde.structure` then reports through the
detailed hooks, so every ShapeError is theirs)."""

from __future__ import annotations

from typing import Any

import attrs
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import trimcp.types as t
from tests.types.strategies import JSON_VALUES, instances, wire_classes
from trimcp import serde


def _outcome(hook: Any, data: Any, cls: type) -> tuple[str, Any]:
    try:
        return "made", hook(data, cls)
    except Exception:
        return "refused", None


def _containers(value: Any) -> list[Any]:
    """Every dict and list in ``value`` (itself included)."""
    found: list[Any] = []
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            found.append(item)
            stack.extend(item.values())
        elif isinstance(item, list):
            found.append(item)
            stack.extend(item)
    return found


def _agree(cls: type, raw: Any) -> None:
    fast = _outcome(serde._fast_structure_hook(cls), raw, cls)
    detailed = _outcome(serde._structure_hook(cls), raw, cls)
    assert fast == detailed
    if fast[0] == "made":
        assert serde.unstructure(fast[1]) == serde.unstructure(detailed[1])


@pytest.mark.parametrize("cls", wire_classes(), ids=lambda c: c.__name__)
@settings(max_examples=25, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_fast_and_detailed_hooks_agree(cls: type, data: st.DataObject) -> None:
    raw = serde.unstructure(data.draw(instances(cls)))
    _agree(cls, raw)
    containers = _containers(raw)
    container = data.draw(st.sampled_from(containers))
    keys = list(container) if isinstance(container, dict) else list(range(len(container)))
    change = data.draw(st.sampled_from(["replace", "null", "drop"]))
    if keys:
        key = data.draw(st.sampled_from(keys))
        if change == "drop":
            del container[key]
        else:
            container[key] = None if change == "null" else data.draw(JSON_VALUES)
    elif isinstance(container, dict):
        container[data.draw(st.text(max_size=12))] = data.draw(JSON_VALUES)
    _agree(cls, raw)


def test_the_made_object_is_what_the_constructor_makes() -> None:
    params = serde.structure(
        {"name": "echo", "arguments": {"a": 1}, "_meta": {"k": "v"}, "task": {"ttl": 5}},
        t.CallToolRequestParams,
    )
    assert type(params) is t.CallToolRequestParams
    assert params == t.CallToolRequestParams(
        name="echo", arguments={"a": 1}, meta={"k": "v"}, task=t.TaskMetadata(ttl=5)
    )
    assert hash(params.task) == hash(t.TaskMetadata(ttl=5))
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        params.__setattr__("name", "other")
