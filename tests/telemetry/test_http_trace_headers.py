"""Trace context from HTTP headers: the server span's parent, in both eras; ``_meta`` wins."""

from __future__ import annotations

from typing import Any

import pytest
import trio
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind

from tests.http_server.helpers import running_app, tool_call
from tests.http_server.test_modern_http import post as post_2026
from trimcp.server import Server
from trimcp.telemetry import ServerTracing

TRACE = "0af7651916cd43dd8448eb211c80319c"
HEADER_PARENT = "00f067aa0ba902b7"
META_PARENT = "b7ad6b7169203331"


def traceparent(span: str) -> str:
    return f"00-{TRACE}-{span}-01"


@pytest.fixture
def exporter() -> InMemorySpanExporter:
    return InMemorySpanExporter()


def traced_app(exporter: InMemorySpanExporter) -> Server:
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    app = Server("traced", middleware=[ServerTracing(provider)])

    @app.tool()
    def echo(text: str) -> str:
        return text

    return app


def server_call_span(exporter: InMemorySpanExporter) -> Any:
    spans = [
        s
        for s in exporter.get_finished_spans()
        if s.name == "tools/call echo" and s.kind == SpanKind.SERVER
    ]
    assert len(spans) == 1
    return spans[0]


@pytest.mark.parametrize("in_meta", [False, True])
async def test_a_2025_session_takes_the_trace_context_from_the_headers(
    autojump_clock: trio.abc.Clock, exporter: InMemorySpanExporter, in_meta: bool
) -> None:
    async with running_app(server=traced_app(exporter)) as (_, client):
        session_id = await client.initialize()
        meta = {"traceparent": traceparent(META_PARENT)} if in_meta else None
        extra = [("traceparent", traceparent(HEADER_PARENT)), ("baggage", "tenant=acme")]
        reply = await client.post(
            tool_call(1, "echo", {"text": "hi"}, meta=meta), session_id=session_id, extra=extra
        )
        assert reply.status == 200, reply.body
    span = server_call_span(exporter)
    assert span.context.trace_id == int(TRACE, 16)
    assert span.parent is not None
    # _meta is the request's own: it wins over the HTTP headers.
    assert span.parent.span_id == int(META_PARENT if in_meta else HEADER_PARENT, 16)


@pytest.mark.parametrize("in_meta", [False, True])
async def test_a_2026_request_takes_the_trace_context_from_the_headers(
    autojump_clock: trio.abc.Clock, exporter: InMemorySpanExporter, in_meta: bool
) -> None:
    from tests.http_server.test_modern_http import meta

    async with running_app(server=traced_app(exporter)) as (_, client):
        envelope = meta(**({"traceparent": traceparent(META_PARENT)} if in_meta else {}))
        reply = await post_2026(
            client,
            "tools/call",
            {"name": "echo", "arguments": {"text": "hi"}, "_meta": envelope},
            extra=[("traceparent", traceparent(HEADER_PARENT))],
        )
        assert reply.status == 200, reply.body
    span = server_call_span(exporter)
    assert span.context.trace_id == int(TRACE, 16)
    assert span.parent is not None
    assert span.parent.span_id == int(META_PARENT if in_meta else HEADER_PARENT, 16)


async def test_without_a_traceparent_header_nothing_is_added(
    autojump_clock: trio.abc.Clock, exporter: InMemorySpanExporter
) -> None:
    async with running_app(server=traced_app(exporter)) as (_, client):
        session_id = await client.initialize()
        await client.call(session_id, 1, "echo", {"text": "hi"}, extra=[("baggage", "a=b")])
    span = server_call_span(exporter)
    assert span.parent is None  # a root span: no trace context came


async def test_a_request_without_params_takes_the_trace_context_from_the_headers(
    autojump_clock: trio.abc.Clock, exporter: InMemorySpanExporter
) -> None:
    # The headers make the request a params object: the request the session takes must
    # be the one with it (the body is parsed once and handed over as parsed).
    async with running_app(server=traced_app(exporter)) as (_, client):
        session_id = await client.initialize()
        reply = await client.post(
            {"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
            session_id=session_id,
            extra=[("traceparent", traceparent(HEADER_PARENT))],
        )
        assert reply.status == 200, reply.body
    spans = [s for s in exporter.get_finished_spans() if s.name.startswith("tools/list")]
    assert len(spans) == 1
    assert spans[0].parent is not None
    assert spans[0].parent.span_id == int(HEADER_PARENT, 16)
