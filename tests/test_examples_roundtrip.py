"""Example messages from the MCP documents and schema round-trip through the converter.

Two sources: every example under ``tests/data/schema/2026-07-28/examples`` (one folder per
schema type), and the JSON quoted in the reference documents trimcp was built from, shipped
in document order as ``tests/data/seeds/examples.json`` (``extract.py`` next to it redoes
the extraction). A
whole JSON-RPC message is checked by its ``params`` (typed by the method registry), its
``result`` (typed by the registry entry of the request it answers) or its ``error``; loose
objects (a content block, a capabilities object) by their shape. Examples we cannot use are
in ``UNUSABLE`` with the reason; they are expected to fail, strictly, so the list stays
exact.
"""

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import attrs
import pytest

import trimcp.types as t
from tests.data.seeds.extract import json_objects
from trimcp.protocol.methods import lookup
from trimcp.serde import ShapeError, structure, unstructure

EXAMPLES = Path(__file__).parent / "data" / "schema" / "2026-07-28" / "examples"
#: The JSON objects quoted in each reference document, in order, by the document's prefix.
SEEDS = Path(__file__).parent / "data" / "seeds" / "examples.json"

UNUSABLE = {
    "001#7:some_method": "a placeholder method in the base protocol text",
    "001#41:result": "a tools/call result shown without its request (id 4 is reused)",
    "003#5:initialize": "abbreviated in the document: params hold only protocolVersion",
    "003#6:initialize result": "abbreviated in the document: result holds only protocolVersion",
    "003#7:initialize": "abbreviated in the document: params hold only protocolVersion",
    "003#8:initialize result": "abbreviated in the document: result holds only protocolVersion",
    "003#9:initialize": "abbreviated in the document: params hold only protocolVersion",
}

Case = tuple[str, Any, Any]  # (where, type or None when there is none, JSON)

SERVER_CAPABILITIES = {
    *("experimental", "logging", "completions", "prompts", "resources", "tools", "tasks")
}
CLIENT_CAPABILITIES = {"experimental", "roots", "sampling", "elicitation", "tasks"}


def _message_case(where: str, msg: dict[str, Any], answers: str | None) -> Case:
    """The case for one JSON-RPC message; ``answers`` is the method a response answers."""
    if "method" in msg:
        spec = lookup(msg["method"])
        params_type = None if spec is None else spec.params_type
        return f"{where}:{msg['method']}", params_type, msg.get("params", {})
    if "result" in msg:
        spec = lookup(answers) if answers else None
        result_type = None if spec is None else spec.result_type
        label = f"{where}:{answers} result" if answers else f"{where}:result"
        return label, result_type, msg["result"]
    return f"{where}:error", t.Error, msg["error"]


def _loose_case(where: str, obj: dict[str, Any]) -> Case | None:
    """A case for an object quoted on its own, by its shape; None if it is not one of ours."""
    keys = set(obj)
    if isinstance(obj.get("type"), str):
        tool = obj["type"] in ("tool_use", "tool_result")
        return f"{where}:content", t.SamplingContent if tool else t.ContentBlock, obj
    if "uri" in keys and keys & {"text", "blob"}:
        return f"{where}:contents", t.ResourceContents, obj
    if "uri" in keys and keys <= {"uri", "name", "_meta"}:
        return f"{where}:root", t.Root, obj
    if keys == {"name"}:
        return f"{where}:hint", t.ModelHint, obj
    if keys == {"capabilities"}:
        return _loose_case(where, obj["capabilities"])
    if keys and keys <= SERVER_CAPABILITIES and keys - CLIENT_CAPABILITIES:
        return f"{where}:server capabilities", t.ServerCapabilities, obj
    if keys and keys <= CLIENT_CAPABILITIES:
        return f"{where}:client capabilities", t.ClientCapabilities, obj
    return None


def draft_cases() -> Iterator[Case]:
    input_methods: dict[str, str] = {}
    for path in sorted(EXAMPLES.glob("InputRequests/*.json")):
        for key, request in json.loads(path.read_text()).items():
            input_methods[key] = request["method"]
    for path in sorted(EXAMPLES.glob("*/*.json")):
        name, data = path.parent.name, json.loads(path.read_text())
        where = f"{name}/{path.stem}"
        target = getattr(t, name, None)
        if isinstance(target, type) and attrs.has(target):
            yield where, target, data
        elif name == "InputRequests":
            for key, request in data.items():
                yield _message_case(f"{where}[{key}]", request, None)
        elif name == "InputResponses":
            # Keys match the InputRequests example: each is its request's result.
            for key, response in data.items():
                yield _message_case(f"{where}[{key}]", {"result": response}, input_methods[key])
        elif name.endswith("ResultResponse"):
            yield where, getattr(t, name.removesuffix("Response")), data["result"]
        elif name.endswith("Error"):
            yield where, t.Error, data.get("error", data)
        else:
            yield _message_case(where, data, None)


def seed_cases() -> Iterator[Case]:
    for prefix, document in json.loads(SEEDS.read_text()).items():
        latest: tuple[str, str] | None = None  # (JSON id, method) of the latest request
        for index, obj in enumerate(document["objects"]):
            where = f"{prefix}#{index}"
            if not {"method", "result", "error"} & obj.keys():
                case = _loose_case(where, obj)
                if case is not None:
                    yield case
                continue
            msg_id = json.dumps(obj.get("id"))
            spec = lookup(obj.get("method", ""))
            if spec is not None and spec.kind == "request":
                latest = (msg_id, spec.name)
            # A response answers the request just shown before it, if the ids agree
            # (abbreviated examples leave ids out on both sides).
            answers = latest[1] if latest is not None and latest[0] == msg_id else None
            yield _message_case(where, obj, answers)


def _params(cases: Iterator[Case]) -> list[Any]:
    params = []
    for where, cls, data in cases:
        marks = []
        if where in UNUSABLE:
            marks.append(
                pytest.mark.xfail(
                    strict=True, raises=(ShapeError, LookupError), reason=UNUSABLE[where]
                )
            )
        params.append(pytest.param(cls, data, id=where, marks=marks))
    return params


DRAFT = _params(draft_cases())
SEED = _params(seed_cases())


def check_roundtrip(cls: Any, data: Any) -> None:
    if cls is None:
        raise LookupError("no type for this example")
    assert unstructure(structure(data, cls)) == data


@pytest.mark.parametrize(("cls", "data"), DRAFT)
def test_draft_example_roundtrips(cls: Any, data: Any) -> None:
    check_roundtrip(cls, data)


@pytest.mark.parametrize(("cls", "data"), SEED)
def test_seed_example_roundtrips(cls: Any, data: Any) -> None:
    check_roundtrip(cls, data)


def test_every_draft_example_is_used() -> None:
    used = {re.split(r"[\[:]", param.id)[0] for param in DRAFT}
    assert used == {f"{p.parent.name}/{p.stem}" for p in EXAMPLES.glob("*/*.json")}


def test_seed_examples_are_found() -> None:
    """Every unusable example is still found; a drop in count means extraction broke."""
    ids = [param.id for param in SEED]
    assert set(UNUSABLE) <= set(ids)
    per_document: dict[str, int] = {}
    for where in ids:
        per_document[where[:3]] = per_document.get(where[:3], 0) + 1
    assert per_document == {"000": 3, "001": 64, "002": 4, "003": 24, "004": 7}


def test_the_extraction_reads_every_way_the_documents_quote_json() -> None:
    """``examples.json`` is redone by ``extract.py``: fenced JSON, JSON rendered as list
    items ("- {"), ``//`` comments and objects inside objects are each read once."""
    document = "\n".join(
        [
            "Text {not json}",
            "```json",
            '{"jsonrpc": "2.0", "method": "ping", "id": 1,',
            '  "params": {"nested": {}}}',
            "```",
            '- {"jsonrpc": "2.0",',
            "-   // a comment line",
            '-   "id": 1, "result": {}}',
            '  {"broken": ',
        ]
    )
    assert list(json_objects(document)) == [
        {"jsonrpc": "2.0", "method": "ping", "id": 1, "params": {"nested": {}}},
        {"jsonrpc": "2.0", "id": 1, "result": {}},
    ]
