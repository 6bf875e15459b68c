"""OpenTelemetry spans (semantic conventions for MCP), checked with the SDK's in-memory
exporter: both sides, parentage through ``_meta``, errors, cancellation, baggage."""

from __future__ import annotations

from typing import Any

import pytest
import trio
import trio.testing
from opentelemetry import baggage, context, trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

import trimcp
from trimcp.errors import McpError
from trimcp.server import Context, Server
from trimcp.telemetry import ClientTracing, ServerTracing


@pytest.fixture
def exporter() -> InMemorySpanExporter:
    return InMemorySpanExporter()


@pytest.fixture
def provider(exporter: InMemorySpanExporter) -> TracerProvider:
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return provider


def make_app(provider: TracerProvider) -> Server:
    app = Server("traced", middleware=[ServerTracing(provider)])
    inner_tracer = provider.get_tracer("user-code")

    @app.tool()
    def add(a: int, b: int) -> int:
        with inner_tracer.start_as_current_span("inside add"):
            return a + b

    @app.tool()
    def crash() -> str:
        raise RuntimeError("boom")

    @app.tool()
    async def slow() -> str:
        await trio.sleep(100)
        return "late"

    @app.tool()
    def which_baggage() -> str:
        return str(baggage.get_baggage("tenant"))

    @app.resource("memo://today")
    def today() -> str:
        return "milk"

    @app.prompt()
    def greet(name: str, ctx: Context) -> str:
        return f"hi {name}"

    return app


def by_name(spans: tuple[ReadableSpan, ...], name: str, kind: SpanKind) -> ReadableSpan:
    return next(s for s in spans if s.name == name and s.kind == kind)


async def test_spans_on_both_sides_share_a_trace(
    autojump_clock: Any, provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    async with trimcp.connect_memory(
        make_app(provider), middleware=[ClientTracing(provider)], mode="legacy"
    ) as client:
        assert (await client.call_tool("add", {"a": 1, "b": 2})).structured_content == {"result": 3}
        await client.read_resource("memo://today")
        await client.get_prompt("greet", {"name": "Ann"})
    spans = exporter.get_finished_spans()
    sent = by_name(spans, "tools/call add", SpanKind.CLIENT)
    got = by_name(spans, "tools/call add", SpanKind.SERVER)
    inner = next(s for s in spans if s.name == "inside add")
    assert sent.context is not None
    assert got.context is not None
    assert inner.context is not None
    assert got.context.trace_id == sent.context.trace_id
    assert got.parent is not None
    assert got.parent.span_id == sent.context.span_id
    assert inner.parent is not None
    assert inner.parent.span_id == got.context.span_id
    assert got.attributes is not None
    assert got.attributes["mcp.method.name"] == "tools/call"
    assert got.attributes["gen_ai.tool.name"] == "add"
    assert got.attributes["gen_ai.operation.name"] == "execute_tool"
    assert got.attributes["mcp.protocol.version"] == "2025-11-25"
    assert "jsonrpc.request.id" in got.attributes
    # The client's span names the same request id as the server's.
    assert sent.attributes is not None
    assert sent.attributes["jsonrpc.request.id"] == got.attributes["jsonrpc.request.id"]
    read = by_name(spans, "resources/read", SpanKind.SERVER)
    assert read.attributes is not None
    assert read.attributes["mcp.resource.uri"] == "memo://today"
    prompt = by_name(spans, "prompts/get greet", SpanKind.SERVER)
    assert prompt.attributes is not None
    assert prompt.attributes["gen_ai.prompt.name"] == "greet"
    # The handshake's own spans (the server sees initialize; the client does not wrap it).
    assert any(s.name == "initialize" and s.kind == SpanKind.SERVER for s in spans)
    assert any(s.name == "notifications/initialized" for s in spans)


async def test_errors_and_cancellation_mark_the_spans(
    autojump_clock: Any, provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    async with trimcp.connect_memory(
        make_app(provider), middleware=[ClientTracing(provider)], mode="legacy"
    ) as client:
        result = await client.call_tool("crash")
        assert result.is_error
        with pytest.raises(McpError):
            await client.call_tool("nope")
        with trio.move_on_after(1):
            await client.call_tool("slow")
        await trio.testing.wait_all_tasks_blocked()
    spans = exporter.get_finished_spans()
    crash = by_name(spans, "tools/call crash", SpanKind.SERVER)
    assert crash.attributes is not None
    assert crash.attributes["error.type"] == "tool_error"
    assert crash.status.status_code == StatusCode.ERROR
    unknown = by_name(spans, "tools/call nope", SpanKind.SERVER)
    assert unknown.attributes is not None
    assert unknown.attributes["error.type"] == "-32602"
    assert unknown.attributes["rpc.response.status_code"] == "-32602"
    unknown_sent = by_name(spans, "tools/call nope", SpanKind.CLIENT)
    assert unknown_sent.status.status_code == StatusCode.ERROR
    for kind in (SpanKind.SERVER, SpanKind.CLIENT):
        slow = by_name(spans, "tools/call slow", kind)
        assert slow.attributes is not None
        assert slow.attributes["error.type"] == "cancelled"


async def test_baggage_and_an_outer_span_travel_to_the_server(
    autojump_clock: Any, provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    tracer = provider.get_tracer("app")
    async with trimcp.connect_memory(
        make_app(provider), middleware=[ClientTracing(provider)], mode="legacy"
    ) as client:
        token = context.attach(baggage.set_baggage("tenant", "acme"))
        try:
            with tracer.start_as_current_span("user action") as root:
                result = await client.call_tool("which_baggage")
        finally:
            context.detach(token)
    assert result.content[0].text == "acme"  # type: ignore[union-attr]
    spans = exporter.get_finished_spans()
    got = by_name(spans, "tools/call which_baggage", SpanKind.SERVER)
    assert got.context is not None
    assert got.context.trace_id == root.get_span_context().trace_id


async def test_without_trace_context_the_server_span_is_a_root(
    autojump_clock: Any, provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    async with trimcp.connect_memory(make_app(provider), mode="legacy") as client:
        await client.call_tool("add", {"a": 1, "b": 1})
    got = by_name(exporter.get_finished_spans(), "tools/call add", SpanKind.SERVER)
    assert got.parent is None
    assert trace.get_current_span() is trace.INVALID_SPAN


def test_a_server_without_tracing_never_imports_opentelemetry() -> None:
    import subprocess
    import sys

    code = (
        "import sys, trio, trimcp\n"
        "app = trimcp.Server('x')\n"
        "async def main():\n"
        "    async with trimcp.connect_memory(app) as client:\n"
        "        await client.ping()\n"
        "trio.run(main)\n"
        "print(any(m.startswith('opentelemetry') for m in sys.modules))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert out.stdout.strip() == "False"
