"""Bad input raises ShapeError, and only ShapeError, naming the first bad field."""

import contextlib
import re
from typing import Any

import attrs
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import trimcp.types as t
from tests.types.strategies import JSON_VALUES, instances, wire_classes
from trimcp.serde import ShapeError, structure, unstructure, wire_names

TEXT = {"type": "text", "text": "a"}
FORM = {"message": "m", "requestedSchema": {"type": "object", "properties": {}}}

CASES: list[tuple[Any, Any, str, str]] = [
    # (type, data, path, reason fragment)
    (t.CallToolResult, [], "", "expected an object, got array"),
    (t.CallToolResult, {}, "content", "required field missing"),
    (t.CallToolResult, {"content": "x"}, "content", "expected an array, got string"),
    (t.CallToolResult, {"content": [TEXT, {"type": "nope"}]}, "content[1].type", "'nope'"),
    (t.CallToolResult, {"content": [TEXT, {"text": "a"}]}, "content[1].type", "missing"),
    (t.CallToolResult, {"content": [{"type": "text"}]}, "content[0].text", "missing"),
    (t.CallToolResult, {"content": [{"type": "text", "text": 5}]}, "content[0].text", "string"),
    (t.CallToolResult, {"content": [], "isError": "no"}, "isError", "expected a boolean"),
    (t.CallToolResult, {"content": [{"type": ["x"]}]}, "content[0].type", "got array"),
    (t.CallToolRequestParams, {"name": "x", "arguments": [1]}, "arguments", "expected an object"),
    (t.CallToolRequestParams, {"name": "x", "_meta": 5}, "_meta", "expected an object"),
    (t.CallToolRequestParams, {"name": "x", "task": {"ttl": "1"}}, "task.ttl", "integer"),
    (t.CallToolRequestParams, {"name": True}, "name", "expected a string, got boolean"),
    (
        t.InitializeRequestParams,
        {
            "protocolVersion": "2025-11-25",
            "clientInfo": {"name": "c", "version": "1"},
            "capabilities": {"roots": {"listChanged": "yes"}},
        },
        "capabilities.roots.listChanged",
        "boolean",
    ),
    (
        t.InitializeRequestParams,
        {"protocolVersion": "x", "clientInfo": {"name": "c"}, "capabilities": {}},
        "clientInfo.version",
        "required field missing",
    ),
    (t.ClientCapabilities, {"tasks": {"list": []}}, "tasks.list", "expected an object"),
    (t.ReadResourceResult, {"contents": [{"uri": "u"}]}, "contents[0]", "'text' or a 'blob'"),
    (
        t.EmbeddedResource,
        {"type": "resource", "resource": {"uri": "u", "blob": 1}},
        "resource.blob",
        "string",
    ),
    (
        t.ElicitRequestFormParams,
        {**FORM, "requestedSchema": {"type": "object", "properties": {"e-mail": {"type": "x"}}}},
        'requestedSchema.properties["e-mail"].type',
        "expected one of",
    ),
    (
        t.ElicitRequestFormParams,
        {**FORM, "requestedSchema": {"properties": {"n": {"type": "array", "items": {}}}}},
        "requestedSchema.properties.n.items.enum",
        "missing",
    ),
    (t.ElicitRequestParams, {**FORM, "mode": "voice"}, "mode", "'form', 'url'"),
    (t.ElicitRequestParams, {"mode": "url", "message": "m"}, "url", "missing"),
    (t.ElicitationSchema, {"$schema": 1, "properties": {}}, "$schema", "string"),
    (
        t.CreateMessageRequestParams,
        {"maxTokens": 1, "messages": [{"role": "user", "content": [TEXT, {"type": "resource"}]}]},
        "messages[0].content[1].type",
        "'tool_result'",
    ),
    (
        t.CreateMessageResult,
        {"role": "bot", "content": TEXT, "model": "m"},
        "role",
        "expected one of 'user', 'assistant', got 'bot'",
    ),
    (t.ElicitResult, {"action": "accept", "content": {"a": {}}}, "content.a", "got object"),
    (t.ElicitResult, {"action": "accept", "content": {"a": [1]}}, "content.a[0]", "string"),
    (t.GetPromptRequestParams, {"name": "p", "arguments": {"a": 1}}, "arguments.a", "string"),
    (t.Task, {"taskId": "t", "status": "working", "createdAt": "", "lastUpdatedAt": ""}, "ttl", ""),
    (t.ProgressNotificationParams, {"progressToken": 1, "progress": "50%"}, "progress", "number"),
    (t.ProgressNotificationParams, {"progressToken": True, "progress": 1}, "progressToken", ""),
    (t.SetLevelRequestParams, {"level": "loud"}, "level", "got 'loud'"),
    (t.Tool, {"name": "x", "inputSchema": {}, "icons": [{"src": None}]}, "icons[0].src", "null"),
    (t.Completion, {"values": ["a", 3]}, "values[1]", "expected a string, got integer"),
]


@pytest.mark.parametrize(("cls", "data", "path", "reason"), CASES)
def test_shape_error_path(cls: Any, data: Any, path: str, reason: str) -> None:
    with pytest.raises(ShapeError) as info:
        structure(data, cls)
    assert info.value.path == path
    assert reason in info.value.reason
    assert str(info.value) == f"{path}: {info.value.reason}"


def test_reason_never_echoes_large_input() -> None:
    with pytest.raises(ShapeError) as info:
        structure({"type": "x" * 10_000, "text": ""}, t.ContentBlock)
    assert len(str(info.value)) < 200


def test_nullable_required_field_accepts_null() -> None:
    task = {"taskId": "t", "status": "working", "createdAt": "", "lastUpdatedAt": "", "ttl": None}
    assert structure(task, t.Task).ttl is None


# --- junk never raises anything but ShapeError -----------------------------------------

TARGETS: list[Any] = [
    *wire_classes(),
    t.ContentBlock,
    t.SamplingContent,
    t.ResourceContents,
    t.PrimitiveSchemaDefinition,
    t.ElicitRequestParams,
    t.CompletionReference,
]


@pytest.mark.parametrize("target", TARGETS, ids=str)
@settings(max_examples=30, suppress_health_check=[HealthCheck.too_slow])
@given(junk=JSON_VALUES)
def test_junk_raises_only_shape_error(target: Any, junk: Any) -> None:
    with contextlib.suppress(ShapeError):
        structure(junk, target)


_IDENTIFIER = re.compile(r"[A-Za-z_$][A-Za-z0-9_$]*\Z")


def _join(path: str, part: str | int) -> str:
    if isinstance(part, int):
        return f"{path}[{part}]"
    if _IDENTIFIER.match(part):
        return f"{path}.{part}" if path else part
    return path + '["' + part.replace("\\", "\\\\").replace('"', '\\"') + '"]'


def _locations(value: Any, path: str = "") -> list[tuple[str, str, Any, str | int]]:
    """(parent path, path, container, key) of every value nested in ``value``."""
    found: list[tuple[str, str, Any, str | int]] = []
    items: list[tuple[str | int, Any]] = []
    if isinstance(value, dict):
        items = list(value.items())
    elif isinstance(value, list):
        items = list(enumerate(value))
    for key, inner in items:
        here = _join(path, key)
        found.append((path, here, value, key))
        found.extend(_locations(inner, here))
    return found


def _on_branch(error_path: str, parent: str) -> bool:
    return (
        parent == "" or error_path == parent or error_path.startswith((parent + ".", parent + "["))
    )


@pytest.mark.parametrize("cls", wire_classes(), ids=lambda c: c.__name__)
@settings(max_examples=30, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_corrupted_value_is_reported_where_it_is(cls: type, data: st.DataObject) -> None:
    """Replace one nested value with junk: the error (if any) is inside its parent object.

    Not always at the value itself: a corrupted discriminator can make its parent
    structure as another variant, which then misses a different field.
    """
    raw = unstructure(data.draw(instances(cls)))
    locations = _locations(raw)
    if not locations:
        return
    parent, _, container, key = data.draw(st.sampled_from(locations))
    container[key] = data.draw(JSON_VALUES)
    try:
        structure(raw, cls)
    except ShapeError as exc:
        error_path = exc.path
    else:
        return
    assert _on_branch(error_path, parent), (error_path, parent)


# --- deep nesting ----------------------------------------------------------------------

DEPTH = 100_000


def _deep_list() -> list[Any]:
    deep: list[Any] = []
    for _ in range(DEPTH):
        deep = [deep]
    return deep


def _deep_dict() -> dict[str, Any]:
    deep: dict[str, Any] = {}
    for _ in range(DEPTH):
        deep = {"a": deep}
    return deep


@pytest.mark.parametrize("make_deep", [_deep_list, _deep_dict])
def test_deep_nesting_in_every_field(make_deep: Any) -> None:
    """A 100,000-deep value in any field is refused or kept as data, never recursed into."""
    deep = make_deep()
    for cls in wire_classes():
        for name, wire in wire_names(cls).items():
            try:
                got: Any = structure({wire: deep}, cls)
            except ShapeError:
                continue
            # Accepted where JSON is kept as data (``Any``, open objects) or ignored as
            # an unknown key (``{"roots": {"a": ...}}``); sending it back must work too.
            unstructure(got)
            if getattr(got, name) is deep:
                assert unstructure(got)[wire] is deep


def test_deep_nesting_inside_open_objects_passes_through() -> None:
    deep = _deep_list()
    params = structure({"name": "x", "arguments": {"a": deep}}, t.CallToolRequestParams)
    assert params.arguments is not None
    assert params.arguments["a"] is deep
    note = structure({"level": "info", "data": deep}, t.LoggingMessageNotificationParams)
    assert unstructure(note)["data"] is deep
    with pytest.raises(ShapeError) as info:
        structure({"content": deep}, t.CallToolResult)
    assert info.value.path == "content[0]"
    with pytest.raises(ShapeError):
        structure(deep, t.CallToolResult)


def test_missing_fields_are_reported_in_field_order() -> None:
    """With every field missing, the error names the first required field."""
    for cls in wire_classes():
        required = [f.name for f in attrs.fields(cls) if f.default is attrs.NOTHING]
        if not required:
            structure({}, cls)
            continue
        with pytest.raises(ShapeError) as info:
            structure({}, cls)
        assert info.value.path == wire_names(cls)[required[0]], cls
        assert info.value.reason == "required field missing"
