"""The method registry agrees with the schemas of every revision."""

import json
from pathlib import Path
from typing import Any

import pytest

import trimcp.types as t
from trimcp.protocol.methods import DRAFT_REVISION, METHODS, REVISIONS, Method, lookup

SCHEMA_DIR = Path(__file__).parent.parent / "data" / "schema"
ALL_REVISIONS = (*REVISIONS, DRAFT_REVISION)
UNIONS = {
    "ClientRequest": ("request", "client"),
    "ServerRequest": ("request", "server"),
    "ClientNotification": ("notification", "client"),
    "ServerNotification": ("notification", "server"),
}


def definitions(revision: str) -> dict[str, Any]:
    schema = json.loads((SCHEMA_DIR / revision / "schema.json").read_text())
    defs = schema.get("$defs") or schema["definitions"]
    assert isinstance(defs, dict)
    return defs


DEFS = {revision: definitions(revision) for revision in ALL_REVISIONS}


def members(defs: dict[str, Any], union: str) -> list[str]:
    """Names of the message definitions in ``union`` (a single message is its own union)."""
    node = defs.get(union)
    if node is None:
        return []
    if "anyOf" in node:
        return [ref["$ref"].rsplit("/", 1)[1] for ref in node["anyOf"]]
    return [union]


def schema_table() -> dict[str, dict[str, Any]]:
    """method -> {kind, senders per revision, definition name per revision}."""
    table: dict[str, dict[str, Any]] = {}
    for revision, defs in DEFS.items():
        for union, (kind, sender) in UNIONS.items():
            for name in members(defs, union):
                method = defs[name]["properties"]["method"]["const"]
                entry = table.setdefault(method, {"kind": kind, "senders": {}, "defs": {}})
                assert entry["kind"] == kind
                entry["senders"].setdefault(revision, set()).add(sender)
                entry["defs"][revision] = name
    return table


TABLE = schema_table()


def test_revisions_are_the_schema_folders() -> None:
    folders = sorted(p.name for p in SCHEMA_DIR.iterdir() if (p / "schema.json").exists())
    assert folders == list(ALL_REVISIONS)


def test_registry_has_exactly_the_schema_methods() -> None:
    assert set(METHODS) == set(TABLE)


@pytest.mark.parametrize("method", sorted(TABLE))
def test_kind_revisions_and_sender(method: str) -> None:
    spec = lookup(method)
    assert spec is not None
    assert spec.name == method
    entry = TABLE[method]
    assert spec.kind == entry["kind"]
    assert spec.revisions == frozenset(entry["senders"])
    stable = [r for r in REVISIONS if r in entry["senders"]] or [DRAFT_REVISION]
    senders = set().union(*(entry["senders"][r] for r in stable))
    assert spec.sender == ("both" if len(senders) == 2 else senders.pop())
    if spec.kind == "notification":
        assert spec.result_type is None


def _params_def(method: str) -> tuple[str, dict[str, Any]]:
    entry = TABLE[method]
    revision = "2025-11-25" if "2025-11-25" in entry["defs"] else DRAFT_REVISION
    defs = DEFS[revision]
    return revision, defs[entry["defs"][revision]]["properties"].get("params", {})


@pytest.mark.parametrize("method", sorted(TABLE))
def test_params_type_matches_the_schema(method: str) -> None:
    spec = METHODS[method]
    _, params = _params_def(method)
    if "$ref" in params:
        assert spec.params_type == getattr(t, params["$ref"].rsplit("/", 1)[1])
    else:  # params defined inline: we name the class after the request
        assert isinstance(spec.params_type, type)
        assert spec.params_type.__name__.endswith("Params")


@pytest.mark.parametrize("method", sorted(m for m in TABLE if TABLE[m]["kind"] == "request"))
def test_result_type_follows_the_schema_naming(method: str) -> None:
    spec = METHODS[method]
    revision, _ = _params_def(method)
    request = TABLE[method]["defs"][revision]
    result = request.removesuffix("Request") + "Result"
    if method == "tasks/result":  # the original request's result, whatever it was
        assert spec.result_type is None
    elif result in DEFS[revision]:
        assert spec.result_type is getattr(t, result)
    else:
        assert spec.result_type is t.EmptyResult


def _has_path(defs: dict[str, Any], capabilities: str, path: tuple[str, ...]) -> bool:
    node = defs[capabilities]
    for part in path:
        props = node.get("properties", {})
        if part not in props:
            return False
        node = props[part]
    return True


@pytest.mark.parametrize("spec", [s for s in METHODS.values() if s.capability], ids=str)
def test_capability_paths_exist_in_the_schema(spec: Method[Any, Any]) -> None:
    assert spec.capability is not None
    # Requests need the receiver's capability, notifications the sender's.
    if spec.sender == "both":
        sides = {"Client", "Server"}
    elif spec.kind == "request":
        sides = {"Server" if spec.sender == "client" else "Client"}
    else:
        sides = {spec.sender.capitalize()}
    newest = max(r for r in spec.revisions if r in REVISIONS)
    for side in sides:
        assert _has_path(DEFS[newest], f"{side}Capabilities", spec.capability)


def test_capabilities_of_note() -> None:
    assert METHODS["ping"].capability is None
    assert METHODS["initialize"].capability is None
    assert METHODS["completion/complete"].capability == ("completions",)
    assert METHODS["resources/subscribe"].capability == ("resources", "subscribe")
    assert METHODS["elicitation/create"].capability == ("elicitation",)
    assert METHODS["tasks/list"].capability == ("tasks", "list")
    assert METHODS["notifications/message"].capability == ("logging",)


def test_unknown_method() -> None:
    assert lookup("tools/frobnicate") is None
