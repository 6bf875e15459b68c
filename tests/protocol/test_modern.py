"""The shared 2026-07-28 rules (trimcp.protocol.modern): envelope, headers, errors, results."""

from __future__ import annotations

from typing import Any

import pytest

from trimcp.errors import (
    HEADER_MISMATCH,
    INVALID_PARAMS,
    METHOD_NOT_FOUND,
    MISSING_REQUIRED_CLIENT_CAPABILITY,
    UNSUPPORTED_PROTOCOL_VERSION,
    RemoteProtocolError,
)
from trimcp.protocol import modern as m
from trimcp.types import ClientCapabilities, Implementation, ServerCapabilities

V = "2026-07-28"


def meta(**extra: Any) -> dict[str, Any]:
    return {m.META_PROTOCOL_VERSION: V, m.META_CLIENT_CAPABILITIES: {}, **extra}


# --- era and envelope ---------------------------------------------------------------------


def test_is_modern_needs_the_version_in_meta() -> None:
    assert m.is_modern({"_meta": meta()})
    assert not m.is_modern({"_meta": {"progressToken": 1}})
    assert not m.is_modern({"protocolVersion": V})
    assert not m.is_modern(None)
    assert not m.is_modern([])


def test_read_request_meta_reads_every_field() -> None:
    read = m.read_request_meta(
        {
            "_meta": meta(
                **{
                    m.META_CLIENT_CAPABILITIES: {"sampling": {}, "elicitation": {"form": {}}},
                    m.META_CLIENT_INFO: {"name": "c", "version": "1"},
                    m.META_LOG_LEVEL: "warning",
                    "traceparent": "00-0af7651916cd43dd8448eb211c80319c-00f067aa0ba902b7-01",
                    "baggage": "k=v",
                }
            )
        }
    )
    assert read.protocol_version == V
    assert read.client_capabilities.sampling is not None
    assert read.client_info == Implementation(name="c", version="1")
    assert read.log_level == "warning"
    assert read.trace == m.TraceContext(
        traceparent="00-0af7651916cd43dd8448eb211c80319c-00f067aa0ba902b7-01", baggage="k=v"
    )


def test_repeated_capabilities_are_read_once_but_never_confused() -> None:
    # Structured values are kept by their exact encoding: a client repeating its
    # capabilities gets the same value; 1 is not taken for true.
    good = {"_meta": meta(**{m.META_CLIENT_CAPABILITIES: {"roots": {"listChanged": True}}})}
    first = m.read_request_meta(good).client_capabilities
    assert m.read_request_meta(good).client_capabilities is first
    bad = {"_meta": meta(**{m.META_CLIENT_CAPABILITIES: {"roots": {"listChanged": 1}}})}
    with pytest.raises(RemoteProtocolError) as caught:
        m.read_request_meta(bad)
    assert caught.value.code == INVALID_PARAMS
    for i in range(100):  # many distinct values: the cache stays bounded and correct
        caps: dict[str, Any] = {"experimental": {f"x{i}": {}}}
        read = m.read_request_meta({"_meta": meta(**{m.META_CLIENT_CAPABILITIES: caps})})
        assert read.client_capabilities.experimental == {f"x{i}": {}}
    assert len(m._RECENT_CAPABILITIES._seen) <= 32


def test_a_repeated_envelope_is_read_once_with_each_requests_own_trace() -> None:
    # A client sends the same envelope with every request: it is read once (the same
    # value back), while the trace context, which changes per request, is read every time.
    info = {"name": "c", "version": "1"}
    same = {"_meta": meta(**{m.META_CLIENT_INFO: info, m.META_LOG_LEVEL: "info"})}
    first = m.read_request_meta(same)
    assert m.read_request_meta(dict(same)) is first
    traced = {"_meta": {**same["_meta"], "traceparent": "00-a-b-01", "progressToken": 7}}
    read = m.read_request_meta(traced)
    assert read.trace == m.TraceContext(traceparent="00-a-b-01")
    assert read.client_info is first.client_info
    assert read.log_level == "info"
    assert m.read_request_meta(same).trace is None  # never another request's trace
    # Another log level, version or client is another envelope, and a bad one is refused
    # even after a good one was read.
    assert m.read_request_meta({"_meta": meta(**{m.META_LOG_LEVEL: "debug"})}).log_level == (
        "debug"
    )
    with pytest.raises(RemoteProtocolError) as caught:
        m.read_request_meta({"_meta": meta(**{m.META_PROTOCOL_VERSION: "2099-01-01"})})
    assert caught.value.code == UNSUPPORTED_PROTOCOL_VERSION
    with pytest.raises(RemoteProtocolError):
        m.read_request_meta({"_meta": meta(**{m.META_LOG_LEVEL: "loud"})})


def test_an_agreement_is_shared_until_the_server_offers_something_else() -> None:
    read = m.read_request_meta({"_meta": meta()})
    server = Implementation(name="s", version="1")
    caps = ServerCapabilities()
    first = m.negotiated(read, server_info=server, server_capabilities=caps)
    assert m.negotiated(read, server_info=server, server_capabilities=caps) is first
    changed = ServerCapabilities(logging={})
    other = m.negotiated(read, server_info=server, server_capabilities=changed)
    assert other is not first
    assert other.server_capabilities is changed
    told = m.negotiated(read, server_info=server, server_capabilities=caps, instructions="x")
    assert told.instructions == "x"
    assert first.instructions is None


def test_the_meta_cache_is_bounded_in_bytes_and_skips_large_values() -> None:
    # Issue 21: 40 large anonymous requests kept ~270 MiB for good. The cache is keyed by
    # content (the value is a pure function of the key, so no caller sees another's
    # data); it keeps only small values and bounds its bytes (its own accounting).
    for cache in (m._RECENT_CAPABILITIES, m._RECENT_INFO):
        cache.clear()
    big = "x" * 200_000
    for i in range(40):
        caps: dict[str, Any] = {"experimental": {f"x{i}": {"blob": big}}}
        info = {"name": f"client-{i}", "version": big}
        read = m.read_request_meta(
            {"_meta": meta(**{m.META_CLIENT_CAPABILITIES: caps, m.META_CLIENT_INFO: info})}
        )
        assert read.client_capabilities.experimental == {f"x{i}": {"blob": big}}
        assert read.client_info is not None
        assert read.client_info.name == f"client-{i}"
    for cache in (m._RECENT_CAPABILITIES, m._RECENT_INFO):
        held = sum(len(key) for key in cache._seen)
        assert held == 0  # nothing over the per-entry size is cached
        assert cache.bytes == 0
    for i in range(100):  # small distinct values: cached, within both bounds
        small = {"experimental": {f"y{i}": {"pad": "p" * 900}}}
        m.read_request_meta({"_meta": meta(**{m.META_CLIENT_CAPABILITIES: small})})
    cache = m._RECENT_CAPABILITIES
    held = sum(len(key) for key in cache._seen)
    assert cache.bytes == held
    assert 0 < held <= m.META_CACHE_BYTES
    assert len(cache._seen) <= m.META_CACHE_ENTRIES


def test_client_info_log_level_and_trace_are_optional() -> None:
    read = m.read_request_meta({"_meta": meta()})
    assert read.client_info is None
    assert read.log_level is None
    assert read.trace is None


@pytest.mark.parametrize(
    ("params", "path"),
    [
        ({}, "params._meta"),
        (None, "params._meta"),
        ({"_meta": "x"}, "params._meta"),
        ({"_meta": {m.META_CLIENT_CAPABILITIES: {}}}, f"params._meta.{m.META_PROTOCOL_VERSION}"),
        (
            {"_meta": {m.META_PROTOCOL_VERSION: 7, m.META_CLIENT_CAPABILITIES: {}}},
            f"params._meta.{m.META_PROTOCOL_VERSION}",
        ),
        ({"_meta": {m.META_PROTOCOL_VERSION: V}}, f"params._meta.{m.META_CLIENT_CAPABILITIES}"),
        (
            {"_meta": meta(**{m.META_CLIENT_CAPABILITIES: []})},
            f"params._meta.{m.META_CLIENT_CAPABILITIES}",
        ),
        (
            {"_meta": meta(**{m.META_CLIENT_CAPABILITIES: {"sampling": 3}})},
            f"params._meta.{m.META_CLIENT_CAPABILITIES}.sampling",
        ),
        (
            {"_meta": meta(**{m.META_CLIENT_INFO: {"name": 1}})},
            f"params._meta.{m.META_CLIENT_INFO}.name",
        ),
        ({"_meta": meta(**{m.META_LOG_LEVEL: "loud"})}, f"params._meta.{m.META_LOG_LEVEL}"),
    ],
)
def test_a_malformed_envelope_is_invalid_params_naming_the_field(params: Any, path: str) -> None:
    with pytest.raises(RemoteProtocolError) as caught:
        m.read_request_meta(params)
    assert caught.value.code == INVALID_PARAMS
    assert caught.value.data["path"] == path


def test_an_unsupported_version_names_the_supported_ones() -> None:
    params = {"_meta": meta(**{m.META_PROTOCOL_VERSION: "1900-01-01"})}
    with pytest.raises(RemoteProtocolError) as caught:
        m.read_request_meta(params, advertise=(V, "2025-11-25"))
    error = caught.value
    assert error.code == UNSUPPORTED_PROTOCOL_VERSION
    assert error.data == {"supported": [V, "2025-11-25"], "requested": "1900-01-01"}
    # A session-era version in the envelope is not a stateless request either.
    with pytest.raises(RemoteProtocolError) as caught:
        m.read_request_meta({"_meta": meta(**{m.META_PROTOCOL_VERSION: "2025-11-25"})})
    assert caught.value.code == UNSUPPORTED_PROTOCOL_VERSION


def test_negotiated_is_built_per_request() -> None:
    read = m.read_request_meta({"_meta": meta(**{m.META_LOG_LEVEL: "info"})})
    server = Implementation(name="s", version="2")
    agreed = m.negotiated(read, server_info=server, server_capabilities=ServerCapabilities())
    assert agreed.protocol_version == V
    assert agreed.stateless
    assert agreed.client_info is None
    assert agreed.log_level == "info"
    assert agreed.server_info == server


def test_request_meta_builds_the_client_envelope() -> None:
    built = m.request_meta(
        V,
        ClientCapabilities(),
        Implementation(name="c", version="1"),
        log_level="debug",
        extra={"progressToken": 5},
    )
    assert built == {
        "progressToken": 5,
        m.META_PROTOCOL_VERSION: V,
        m.META_CLIENT_CAPABILITIES: {},
        m.META_CLIENT_INFO: {"name": "c", "version": "1"},
        m.META_LOG_LEVEL: "debug",
    }
    assert m.read_request_meta({"_meta": built}).log_level == "debug"


# --- errors and statuses ------------------------------------------------------------------


def test_error_constructors_carry_the_spec_data() -> None:
    assert m.header_mismatch("x").code == HEADER_MISMATCH
    missing = m.missing_capabilities({"sampling": {}})
    assert missing.code == MISSING_REQUIRED_CLIENT_CAPABILITY
    assert missing.data == {"requiredCapabilities": {"sampling": {}}}
    removed = m.removed_method("logging/setLevel")
    assert removed.code == METHOD_NOT_FOUND
    assert m.META_LOG_LEVEL in removed.message


def test_http_status_per_code() -> None:
    assert m.http_status(METHOD_NOT_FOUND) == 404
    assert m.http_status(HEADER_MISMATCH) == 400
    assert m.http_status(MISSING_REQUIRED_CLIENT_CAPABILITY) == 400
    assert m.http_status(UNSUPPORTED_PROTOCOL_VERSION) == 400
    assert m.http_status(INVALID_PARAMS) == 200
    assert m.http_status(INVALID_PARAMS, malformed=True) == 400


def test_removed_methods() -> None:
    for method in (
        "initialize",
        "ping",
        "logging/setLevel",
        "resources/subscribe",
        "notifications/roots/list_changed",
    ):
        assert method in m.REMOVED_METHODS
    assert "tools/call" not in m.REMOVED_METHODS
    assert {"tools/call", "prompts/get", "resources/read"} == m.INPUT_METHODS


# --- results ------------------------------------------------------------------------------


def test_stamp_result_adds_type_and_server_info() -> None:
    info = {"name": "s", "version": "1"}
    assert m.stamp_result({"tools": []}, info) == {
        "tools": [],
        "resultType": "complete",
        "_meta": {m.META_SERVER_INFO: info},
    }
    kept = m.stamp_result({"_meta": {"k": 1}}, info, "input_required")
    assert kept == {"_meta": {"k": 1, m.META_SERVER_INFO: info}, "resultType": "input_required"}
    assert m.stamp_result({}, None) == {"resultType": "complete"}


def test_result_type_of_defaults_to_complete() -> None:
    assert m.result_type_of({}) == "complete"
    assert m.result_type_of({"resultType": "input_required"}) == "input_required"
    assert m.subscription_meta(3) == {m.META_SUBSCRIPTION_ID: 3}


# --- headers ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "wire"),
    [
        ("us-west1", "us-west1"),
        ("two words", "two words"),
        ("Hello, 世界", "=?base64?SGVsbG8sIOS4lueVjA==?="),
        (" padded ", "=?base64?IHBhZGRlZCA=?="),
        ("line1\nline2", "=?base64?bGluZTEKbGluZTI=?="),
        ("=?base64?literal?=", "=?base64?PT9iYXNlNjQ/bGl0ZXJhbD89?="),
        ("\tTab", "=?base64?CVRhYg==?="),
        ("", "=?base64??="),
    ],
)
def test_header_values_round_trip(value: str, wire: str) -> None:
    assert m.encode_header_value(value) == wire
    assert m.decode_header_value(wire) == value


@pytest.mark.parametrize("bad", ["=?base64?***?=", "=?base64?/w==?=", "caf\u00e9", "a\x01b"])
def test_bad_header_values_are_refused(bad: str) -> None:
    with pytest.raises(ValueError, match=r"bad Base64 value|outside visible ASCII"):
        m.decode_header_value(bad)


def test_header_text_of_primitives() -> None:
    assert m.header_text(True) == "true"
    assert m.header_text(False) == "false"
    assert m.header_text(-7) == "-7"
    assert m.header_text("x y") == "x y"
    assert m.header_text(None) is None
    assert m.header_text(1.5) is None
    assert m.header_text({"a": 1}) is None


def call(name: str = "get_weather", **params: Any) -> dict[str, Any]:
    return {"name": name, "_meta": meta(), **params}


def good_headers(method: str = "tools/call", name: str | None = "get_weather") -> dict[str, str]:
    headers = {"mcp-protocol-version": V, "mcp-method": method}
    if name is not None:
        headers["mcp-name"] = name
    return headers


def test_check_headers_accepts_matching_headers() -> None:
    m.check_headers(good_headers(), "tools/call", call())
    m.check_headers(good_headers("tools/list", None), "tools/list", {"_meta": meta()})
    uri = "file:///caf\u00e9.txt"
    m.check_headers(
        good_headers("resources/read", m.encode_header_value(uri)),
        "resources/read",
        {"uri": uri, "_meta": meta()},
    )


@pytest.mark.parametrize(
    ("headers", "fragment"),
    [
        ({"mcp-method": "tools/call", "mcp-name": "get_weather"}, "MCP-Protocol-Version"),
        ({**good_headers(), "mcp-protocol-version": "2025-11-25"}, "does not match"),
        ({"mcp-protocol-version": V, "mcp-name": "get_weather"}, "Mcp-Method header is missing"),
        ({**good_headers(), "mcp-method": "tools/list"}, "Mcp-Method header 'tools/list'"),
        (good_headers(name=None), "Mcp-Name header is missing"),
        (good_headers(name="other"), "does not match body name"),
        (good_headers(name="=?base64?@@?="), "malformed"),
    ],
)
def test_check_headers_names_the_header_at_fault(headers: dict[str, str], fragment: str) -> None:
    with pytest.raises(RemoteProtocolError) as caught:
        m.check_headers(headers, "tools/call", call())
    assert caught.value.code == HEADER_MISMATCH
    assert fragment in caught.value.message


def test_standard_headers_for_the_client() -> None:
    assert m.standard_headers("tools/call", {"name": "t\u00e9"}, V) == {
        "MCP-Protocol-Version": V,
        "Mcp-Method": "tools/call",
        "Mcp-Name": m.encode_header_value("t\u00e9"),
    }
    assert "Mcp-Name" not in m.standard_headers("tools/list", {}, V)


SCHEMA = {
    "type": "object",
    "properties": {
        "region": {"type": "string", "x-mcp-header": "Region"},
        "priority": {"type": "integer", "x-mcp-header": "Priority"},
        "verbose": {"type": "boolean", "x-mcp-header": "Verbose"},
        "nested": {
            "type": "object",
            "properties": {"tenant": {"type": "string", "x-mcp-header": "Tenant"}},
        },
        "query": {"type": "string"},
    },
}


def test_header_parameters_reads_annotations() -> None:
    assert m.header_parameters(SCHEMA) == {
        "region": ("region",),
        "priority": ("priority",),
        "verbose": ("verbose",),
        "tenant": ("nested", "tenant"),
    }
    assert m.header_parameters({"type": "object"}) == {}


@pytest.mark.parametrize(
    "prop",
    [
        {"type": "string", "x-mcp-header": ""},
        {"type": "string", "x-mcp-header": "My Region"},
        {"type": "string", "x-mcp-header": "Region:Primary"},
        {"type": "string", "x-mcp-header": "R\u00e9gion"},
        {"type": "number", "x-mcp-header": "Score"},
        {"type": "object", "x-mcp-header": "Data"},
        {"type": "array", "items": {"type": "string"}, "x-mcp-header": "Items"},
    ],
)
def test_invalid_annotations_are_refused(prop: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match=r"x-mcp-header of 'p' (must be|needs type)"):
        m.header_parameters({"type": "object", "properties": {"p": prop}})


def test_annotations_must_be_statically_reachable_and_unique() -> None:
    through_items = {
        "type": "object",
        "properties": {
            "list": {"type": "array", "items": {"type": "string", "x-mcp-header": "Item"}}
        },
    }
    with pytest.raises(ValueError, match="reachable"):
        m.header_parameters(through_items)
    through_any_of = {"anyOf": [{"properties": {"a": {"type": "string", "x-mcp-header": "A"}}}]}
    with pytest.raises(ValueError, match="reachable"):
        m.header_parameters(through_any_of)
    twice = {
        "type": "object",
        "properties": {
            "a": {"type": "string", "x-mcp-header": "MyField"},
            "b": {"type": "string", "x-mcp-header": "myfield"},
        },
    }
    with pytest.raises(ValueError, match="twice"):
        m.header_parameters(twice)


def test_parameter_headers_round_trip_through_the_check() -> None:
    annotations = m.header_parameters(SCHEMA)
    arguments = {
        "region": "us-west1",
        "priority": 42,
        "verbose": None,
        "nested": {"tenant": " t\u00e9 "},
        "query": "q",
    }
    sent = m.parameter_headers(arguments, annotations)
    assert sent == {
        "Mcp-Param-region": "us-west1",
        "Mcp-Param-priority": "42",
        "Mcp-Param-tenant": m.encode_header_value(" t\u00e9 "),
    }
    lowered = {name.lower(): value for name, value in sent.items()}
    m.check_parameter_headers(lowered, arguments, annotations)
    # Integers compare as numbers.
    m.check_parameter_headers({**lowered, "mcp-param-priority": "42.0"}, arguments, annotations)


@pytest.mark.parametrize(
    ("change", "fragment"),
    [
        ({"mcp-param-region": None}, "Mcp-Param-region is missing"),
        ({"mcp-param-region": "eu"}, "does not match"),
        ({"mcp-param-priority": "forty"}, "does not match"),
        ({"mcp-param-priority": "43"}, "does not match"),
        ({"mcp-param-verbose": "true"}, "has no value"),
        ({"mcp-param-region": "caf\u00e9"}, "malformed"),
    ],
)
def test_parameter_header_mismatches(change: dict[str, str | None], fragment: str) -> None:
    annotations = m.header_parameters(SCHEMA)
    arguments = {"region": "us-west1", "priority": 42}
    headers: dict[str, str] = {"mcp-param-region": "us-west1", "mcp-param-priority": "42"}
    for name, value in change.items():
        if value is None:
            headers.pop(name)
        else:
            headers[name] = value
    with pytest.raises(RemoteProtocolError) as caught:
        m.check_parameter_headers(headers, arguments, annotations)
    assert caught.value.code == HEADER_MISMATCH
    assert fragment in caught.value.message


def test_boolean_parameter_headers() -> None:
    annotations = m.header_parameters(SCHEMA)
    m.check_parameter_headers({"mcp-param-verbose": "false"}, {"verbose": False}, annotations)
    with pytest.raises(RemoteProtocolError):
        m.check_parameter_headers({"mcp-param-verbose": "False"}, {"verbose": False}, annotations)
