"""Interop: the official SDK's client (PyPI ``mcp``) drives ``examples/everything_server.py``
over stdio through every feature (tests/peers/sdk_everything_client.py prints the report).

One subprocess run per module; each test checks one feature in the SDK's own view of it
(so whatever the SDK's models reject would have failed the run)."""

from __future__ import annotations

import base64
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
PEER = ROOT / "tests" / "peers" / "sdk_everything_client.py"
SERVER = ROOT / "examples" / "everything_server.py"

PNG_MAGIC = b"\x89PNG".hex()
WAV_MAGIC = b"RIFF".hex()


@pytest.fixture(scope="module")
def report() -> dict[str, Any]:
    completed = subprocess.run(
        [
            sys.executable,
            str(PEER),
            "--timeout",
            "20",
            "--overall-timeout",
            "100",
            "--",
            sys.executable,
            str(SERVER),
        ],
        capture_output=True,
        text=True,
        timeout=150,
        check=False,
    )
    assert completed.returncode == 0, completed.stdout + completed.stderr
    result: dict[str, Any] = json.loads(completed.stdout)
    return result


def is_2026_diagnostic(name: str) -> bool:
    """The everything server's fixtures for the 2026-07-28 scenarios (listed in both eras),
    the tasks fixtures included (tests/tasks covers them)."""
    return name.startswith(("test_input_required_result_", "test_trigger_")) or name in {
        "test_missing_capability",
        "test_streaming_elicitation",
        "test_logging_tool",
        "test_custom_headers",
        "greet",
        "slow_compute",
        "failing_job",
        "protocol_error_job",
        "confirm_delete",
        "multi_input",
        "test_tool_with_task",
    }


def text_of(content: list[dict[str, Any]]) -> str:
    return "".join(block.get("text", "") for block in content if block["type"] == "text")


def test_handshake_ping_and_logging_level(report: dict[str, Any]) -> None:
    assert report["protocol_version"] == "2025-11-25"
    assert report["server_info"] == {"name": "trimcp-everything-server", "version": "1.0.0"}
    caps = report["capabilities"]
    assert caps["resources"]["subscribe"] is True
    assert {"tools", "prompts", "logging", "completions"} <= set(caps)
    # Empty results are exactly {}: no _meta, nothing else.
    assert report["ping"] == report["final_ping"] == report["set_level"] == {}


def test_every_tool_is_listed_with_a_description(report: dict[str, Any]) -> None:
    tools = report["tools"]
    assert {
        "test_simple_text",
        "test_image_content",
        "test_audio_content",
        "test_embedded_resource",
        "test_multiple_content_types",
        "test_tool_with_logging",
        "test_error_handling",
        "test_tool_with_progress",
        "test_sampling",
        "test_elicitation",
        "test_elicitation_sep1034_defaults",
        "test_elicitation_sep1330_enums",
        "json_schema_2020_12_tool",
        "test_reconnection",
        "update_watched_resource",
    } == {
        name
        for name in tools
        if not is_2026_diagnostic(name) and name not in report["task_fixtures"]
    }
    for tool in tools.values():
        assert tool["description"]
        assert tool["inputSchema"]["type"] == "object"
    schema = tools["json_schema_2020_12_tool"]["inputSchema"]
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert "address" in schema["$defs"]
    assert schema["additionalProperties"] is False
    assert tools["test_sampling"]["inputSchema"]["required"] == ["prompt"]


def test_content_tools(report: dict[str, Any]) -> None:
    calls = report["calls"]
    assert calls["test_simple_text"]["content"] == [
        {"type": "text", "text": "This is a simple text response for testing."}
    ]
    [image] = calls["test_image_content"]["content"]
    assert image["mimeType"] == "image/png"
    assert calls["test_image_content"]["decoded_prefixes"] == [PNG_MAGIC]
    [audio] = calls["test_audio_content"]["content"]
    assert audio["mimeType"] == "audio/wav"
    assert calls["test_audio_content"]["decoded_prefixes"] == [WAV_MAGIC]
    [embedded] = calls["test_embedded_resource"]["content"]
    assert embedded["resource"] == {
        "uri": "test://embedded-resource",
        "mimeType": "text/plain",
        "text": "This is an embedded resource content.",
    }
    mixed = calls["test_multiple_content_types"]["content"]
    assert [block["type"] for block in mixed] == ["text", "image", "resource"]
    assert json.loads(mixed[2]["resource"]["text"]) == {"test": "data", "value": 123}
    assert not any(
        call["is_error"] for name, call in calls.items() if name != "test_error_handling"
    )


def test_error_is_a_tool_result(report: dict[str, Any]) -> None:
    call = report["calls"]["test_error_handling"]
    assert call["is_error"] is True
    assert text_of(call["content"]) == "This tool intentionally returns an error for testing"


def test_logging_and_progress_notifications(report: dict[str, Any]) -> None:
    logs = report["calls"]["test_tool_with_logging"]["logs"]
    assert [(log["level"], log["data"]) for log in logs] == [
        ("info", "Tool execution started"),
        ("info", "Tool processing data"),
        ("info", "Tool execution completed"),
    ]
    progress = report["calls"]["test_tool_with_progress"]["progress"]
    assert [(p["progress"], p["total"]) for p in progress] == [(0, 100), (50, 100), (100, 100)]


def test_sampling_round_trip(report: dict[str, Any]) -> None:
    [request] = report["sampling_requests"]
    assert request["maxTokens"] == 100
    assert request["messages"] == [
        {"role": "user", "content": {"type": "text", "text": "Test prompt for sampling"}}
    ]
    answer = text_of(report["calls"]["test_sampling"]["content"])
    assert answer == "LLM response: This is a test response from the client"


def test_elicitation_round_trips(report: dict[str, Any]) -> None:
    requests = {r["message"]: r for r in report["elicitation_requests"]}
    assert len(requests) == 3
    contact = requests["Please provide your information"]
    assert contact["mode"] == "form"
    assert contact["requestedSchema"]["required"] == ["username", "email"]
    calls = report["calls"]
    assert '"username": "testuser"' in text_of(calls["test_elicitation"]["content"])
    defaults = next(
        r
        for r in report["elicitation_requests"]
        if "verified" in r["requestedSchema"]["properties"]
    )
    props = defaults["requestedSchema"]["properties"]
    assert {name: p["default"] for name, p in props.items()} == {
        "name": "John Doe",
        "age": 30,
        "score": 95.5,
        "status": "active",
        "verified": True,
    }
    assert '"name": "Jane Smith"' in text_of(calls["test_elicitation_sep1034_defaults"]["content"])
    enums = next(
        r
        for r in report["elicitation_requests"]
        if "legacyEnum" in r["requestedSchema"]["properties"]
    )
    props = enums["requestedSchema"]["properties"]
    assert props["legacyEnum"]["enumNames"] == ["Option One", "Option Two", "Option Three"]
    assert [o["const"] for o in props["titledMulti"]["items"]["anyOf"]] == [
        "value1",
        "value2",
        "value3",
    ]
    text = text_of(calls["test_elicitation_sep1330_enums"]["content"])
    assert text.startswith("Elicitation completed: action=accept")


def test_other_tools(report: dict[str, Any]) -> None:
    calls = report["calls"]
    assert text_of(calls["json_schema_2020_12_tool"]["content"]) == "Hello Ann from Paris"
    # Over stdio there is no stream to close: the answer comes straight back.
    reconnection = text_of(calls["test_reconnection"]["content"])
    assert reconnection == "Reconnection test completed successfully"


def test_resources_templates_and_reads(report: dict[str, Any]) -> None:
    # The conformance fixtures; the Skills fixture's skill:// files are checked elsewhere.
    listed = {r["uri"]: r for r in report["resources"] if not r["uri"].startswith("skill://")}
    assert set(listed) == {"test://static-text", "test://static-binary", "test://watched-resource"}
    assert all(r["name"] and r["description"] and r["mimeType"] for r in listed.values())
    assert [t["uriTemplate"] for t in report["templates"]] == ["test://template/{id}/data"]
    reads = report["reads"]
    assert reads["test://static-text"] == [
        {
            "uri": "test://static-text",
            "mimeType": "text/plain",
            "text": "This is the content of the static text resource.",
        }
    ]
    [binary] = reads["test://static-binary"]
    assert binary["mimeType"] == "image/png"
    assert base64.b64decode(binary["blob"]).startswith(b"\x89PNG")
    [templated] = reads["test://template/123/data"]
    assert templated["mimeType"] == "application/json"
    assert json.loads(templated["text"]) == {
        "id": "123",
        "templateTest": True,
        "data": "Data for ID: 123",
    }


def test_subscription_delivers_updates_until_unsubscribed(report: dict[str, Any]) -> None:
    sub = report["subscription"]
    assert sub["subscribe_result"] == sub["unsubscribe_result"] == {}
    assert sub["update_received"] is True
    assert sub["read_after_update"][0]["text"] == "changed by the SDK client"
    assert sub["updates_after_unsubscribe"] == 0
    assert report["notifications"].count("notifications/resources/updated") == 1


def test_prompts_and_completion(report: dict[str, Any]) -> None:
    prompts = report["prompts"]
    assert set(prompts) == {
        "test_simple_prompt",
        "test_prompt_with_arguments",
        "test_prompt_with_embedded_resource",
        "test_prompt_with_image",
        "test_input_required_result_prompt",
    }
    assert all(p["description"] for p in prompts.values())
    args = prompts["test_prompt_with_arguments"]["arguments"]
    assert [(a["name"], a["required"]) for a in args] == [("arg1", True), ("arg2", True)]
    messages = report["prompt_messages"]
    assert messages["test_prompt_with_arguments"] == [
        {
            "role": "user",
            "content": {
                "type": "text",
                "text": "Prompt with arguments: arg1='testValue1', arg2='testValue2'",
            },
        }
    ]
    embedded = messages["test_prompt_with_embedded_resource"]
    assert embedded[0]["content"]["resource"]["uri"] == "test://example-resource"
    assert [m["content"]["type"] for m in messages["test_prompt_with_image"]] == ["image", "text"]
    assert report["completion"] == {
        "values": ["test", "testing", "tested"],
        "total": 3,
        "hasMore": False,
    }
