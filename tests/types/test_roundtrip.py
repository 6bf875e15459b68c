"""Every wire type survives unstructure -> structure, and its JSON is what the schema says."""

import json
from functools import cache
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import trimcp.types as t
from tests.types.strategies import instances, wire_classes
from trimcp.serde import structure, unstructure, wire_names

SCHEMA_DIR = Path(__file__).parent.parent / "data" / "schema"
SCHEMA_2025 = json.loads((SCHEMA_DIR / "2025-11-25" / "schema.json").read_text())

# Classes the 2025-11-25 schema defines inline, by JSON pointer.
INLINE = {
    t.Completion: "CompleteResult/properties/completion",
    t.CompletionArgument: "CompleteRequestParams/properties/argument",
    t.CompletionContext: "CompleteRequestParams/properties/context",
    t.ElicitationSchema: "ElicitRequestFormParams/properties/requestedSchema",
    t.ElicitationCompleteNotificationParams: "ElicitationCompleteNotification/properties/params",
    t.EnumOption: "TitledSingleSelectEnumSchema/properties/oneOf/items",
    t.TitledEnumItems: "TitledMultiSelectEnumSchema/properties/items",
    t.UntitledEnumItems: "UntitledMultiSelectEnumSchema/properties/items",
    t.GetTaskRequestParams: "GetTaskRequest/properties/params",
    t.GetTaskPayloadRequestParams: "GetTaskPayloadRequest/properties/params",
    t.CancelTaskRequestParams: "CancelTaskRequest/properties/params",
    t.RootsCapability: "ClientCapabilities/properties/roots",
    t.SamplingCapability: "ClientCapabilities/properties/sampling",
    t.ElicitationCapability: "ClientCapabilities/properties/elicitation",
    t.ClientTasksCapability: "ClientCapabilities/properties/tasks",
    t.ClientTaskRequests: "ClientCapabilities/properties/tasks/properties/requests",
    t.SamplingTaskRequests: (
        "ClientCapabilities/properties/tasks/properties/requests/properties/sampling"
    ),
    t.ElicitationTaskRequests: (
        "ClientCapabilities/properties/tasks/properties/requests/properties/elicitation"
    ),
    t.PromptsCapability: "ServerCapabilities/properties/prompts",
    t.ResourcesCapability: "ServerCapabilities/properties/resources",
    t.ToolsCapability: "ServerCapabilities/properties/tools",
    t.ServerTasksCapability: "ServerCapabilities/properties/tasks",
    t.ServerTaskRequests: "ServerCapabilities/properties/tasks/properties/requests",
    t.ToolsTaskRequests: (
        "ServerCapabilities/properties/tasks/properties/requests/properties/tools"
    ),
}
# Shapes that exist only in 2026-07-28; tests/test_examples_roundtrip.py covers them.
DRAFT_ONLY = {
    t.DiscoverResult,
    t.InputRequiredResult,
    t.SubscriptionFilter,
    t.SubscriptionsListenRequestParams,
    t.SubscriptionsListenResult,
    t.SubscriptionsAcknowledgedNotificationParams,
}
# Fields that only the draft revision has (the 2025-11-25 schema does not list them).
DRAFT_FIELDS = {"resultType", "ttlMs", "cacheScope", "inputResponses", "requestState", "extensions"}

CLASSES = wire_classes()
CHECKED = [c for c in CLASSES if c not in DRAFT_ONLY]


def pointer(cls: type) -> str:
    return "#/$defs/" + INLINE.get(cls, cls.__name__)


@cache
def validator(cls: type) -> jsonschema.protocols.Validator:
    schema = {**SCHEMA_2025, "$ref": pointer(cls)}
    return jsonschema.Draft202012Validator(schema)


def resolve(node: dict[str, Any]) -> dict[str, Any]:
    """The properties of a schema node, following ``$ref`` and ``allOf``."""
    if "$ref" in node:
        return resolve(lookup_pointer(node["$ref"]))
    props = dict(node.get("properties", {}))
    for part in node.get("allOf", []):
        props.update(resolve(part))
    return props


def lookup_pointer(ref: str) -> dict[str, Any]:
    node: Any = SCHEMA_2025
    for part in ref.removeprefix("#/").split("/"):
        node = node[part]
    assert isinstance(node, dict)
    return node


@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: c.__name__)
@settings(max_examples=40, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_roundtrip(cls: type, data: st.DataObject) -> None:
    obj = data.draw(instances(cls))
    raw = unstructure(obj)
    assert json.loads(json.dumps(raw)) == raw  # plain JSON, nothing else
    back: Any = structure(raw, cls)
    assert back == obj
    assert unstructure(back) == raw


@pytest.mark.parametrize("cls", CHECKED, ids=lambda c: c.__name__)
@settings(max_examples=25, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_output_validates_against_2025_11_25_schema(cls: type, data: st.DataObject) -> None:
    validator(cls).validate(unstructure(data.draw(instances(cls))))


def test_every_class_is_checked_against_a_schema() -> None:
    for cls in CHECKED:
        lookup_pointer(pointer(cls))  # raises if the schema has no such node


@pytest.mark.parametrize("cls", CHECKED, ids=lambda c: c.__name__)
def test_fields_match_the_schema(cls: type) -> None:
    """Every schema property is modelled, and every field is in the schema (or the draft)."""
    props = set(resolve(lookup_pointer(pointer(cls))))
    ours = set(wire_names(cls).values())
    assert props - ours == set(), "schema properties the class lacks"
    assert ours - props - DRAFT_FIELDS == set(), "fields the schema does not have"


SAMPLES: list[tuple[Any, dict[str, Any]]] = [
    (
        t.TextContent(text="hi", meta={"k": 1}),
        {"type": "text", "text": "hi", "_meta": {"k": 1}},
    ),
    (
        t.CallToolResult(content=[], is_error=False, structured_content={"a": 1}),
        {"content": [], "isError": False, "structuredContent": {"a": 1}},
    ),
    (
        t.ElicitationSchema(schema="https://json-schema.org/draft/2020-12/schema", properties={}),
        {
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "type": "object",
            "properties": {},
        },
    ),
    (t.ServerTasksCapability(list_={}), {"list": {}}),
    (
        t.Task(task_id="t1", status="working", created_at="a", last_updated_at="b", ttl=None),
        {"taskId": "t1", "status": "working", "createdAt": "a", "lastUpdatedAt": "b", "ttl": None},
    ),
    (t.ElicitRequestURLParams(message="m", url="u"), {"mode": "url", "message": "m", "url": "u"}),
    (t.ToolAnnotations(read_only_hint=False), {"readOnlyHint": False}),
    (t.EmptyResult(), {}),
]


@pytest.mark.parametrize(("obj", "wire"), SAMPLES, ids=lambda v: type(v).__name__)
def test_wire_names_and_omission(obj: Any, wire: dict[str, Any]) -> None:
    """camelCase, ``_meta``, explicit names, None left out, discriminators and False kept."""
    assert unstructure(obj) == wire
    assert structure(wire, type(obj)) == obj


def test_unknown_fields_are_ignored() -> None:
    got = structure({"type": "text", "text": "a", "future": [1]}, t.TextContent)
    assert got == t.TextContent(text="a")


def test_unions_structure_directly() -> None:
    assert structure({"type": "image", "data": "", "mimeType": "image/png"}, t.ContentBlock) == (
        t.ImageContent(data="", mime_type="image/png")
    )
    form = {"message": "m", "requestedSchema": {"type": "object", "properties": {}}}
    assert isinstance(structure(form, t.ElicitRequestParams), t.ElicitRequestFormParams)
    assert isinstance(
        structure({"uri": "u", "blob": ""}, t.ResourceContents), t.BlobResourceContents
    )


@pytest.mark.parametrize("revision", ["2024-11-05", "2025-03-26", "2025-06-18", "2026-07-28"])
def test_no_property_of_any_revision_is_dropped(revision: str) -> None:
    """Classes named like a schema definition model every property it had in any revision."""
    schema = json.loads((SCHEMA_DIR / revision / "schema.json").read_text())
    defs = schema.get("$defs") or schema["definitions"]

    def properties(node: dict[str, Any]) -> set[str]:
        if "$ref" in node:
            return properties(defs[node["$ref"].rsplit("/", 1)[1]])
        found = set(node.get("properties", {}))
        for part in node.get("allOf", []):
            found |= properties(part)
        return found

    checked = 0
    for cls in CLASSES:
        if cls.__name__ in defs:
            checked += 1
            assert properties(defs[cls.__name__]) <= set(wire_names(cls).values()), cls
    assert checked > 30
