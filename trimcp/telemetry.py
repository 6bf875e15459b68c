"""OpenTelemetry tracing for servers and clients (the optional extra ``trimcp[otel]``).

    app = Server("weather", middleware=[trimcp.telemetry.ServerTracing()])
    async with connect_http(url, middleware=[trimcp.telemetry.ClientTracing()]) as client:
        ...

Spans follow the OpenTelemetry semantic conventions for MCP: one span per request or
notification, kind SERVER on the receiving side and CLIENT on the sending side, named
``{mcp.method.name} {target}`` (the tool or prompt name) or ``{mcp.method.name}``, with
``mcp.method.name``, ``jsonrpc.request.id``, ``mcp.protocol.version``,
``gen_ai.operation.name`` (``execute_tool``), ``gen_ai.tool.name``,
``gen_ai.prompt.name`` and ``mcp.resource.uri`` where they apply. A JSON-RPC error sets
``error.type`` and ``rpc.response.status_code`` to its code and the span status to
ERROR; a tool's ``isError`` result sets ``error.type`` ``tool_error``; an unexpected
exception its class name; a cancelled request ``cancelled``.

Context propagation: the client injects W3C trace context (``traceparent``,
``tracestate``, ``baggage``) into each request's ``params._meta`` with the global
propagator; the server extracts it from there (2026-07-28 requests: from the trace
context the request carried), so a trace continues across trimcp and the official SDK in
both directions. Without it the server span's parent is whatever span is current (for
instance one an ASGI instrumentation made from the HTTP headers).

Only ``opentelemetry-api`` is needed at run time; nothing here is imported unless you use
it, so a server without tracing pays nothing. Configure a tracer provider (the SDK, an
exporter) as usual, or pass ``tracer_provider=``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

import trio

from trimcp.client.middleware import ClientNext, OutgoingCall
from trimcp.errors import McpError
from trimcp.protocol.methods import METHODS, Method
from trimcp.server.middleware import Call, Next
from trimcp.types import CallToolResult

try:
    from opentelemetry import context as otel_context
    from opentelemetry import propagate, trace
    from opentelemetry.context import Context as OtelContext
    from opentelemetry.trace import SpanKind, StatusCode
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise ImportError(
        "trimcp.telemetry needs OpenTelemetry: pip install 'trimcp[otel]' (opentelemetry-api)"
    ) from exc

INSTRUMENTATION = "trimcp"
#: The GenAI semantic conventions' attribute naming the component a request uses, by the
#: method table's ``target`` (resources are named by ``mcp.resource.uri``).
_GEN_AI_NAME: Final = {"tool": "gen_ai.tool.name", "prompt": "gen_ai.prompt.name"}
_META_KEYS = ("traceparent", "tracestate", "baggage")


def _attributes(method: str, params: Any, request_id: Any, version: str | None) -> dict[str, Any]:
    attributes: dict[str, Any] = {"mcp.method.name": method}
    if request_id is not None:
        attributes["jsonrpc.request.id"] = str(request_id)
    if version is not None:
        attributes["mcp.protocol.version"] = version
    spec = METHODS.get(method)
    target = spec.target if spec is not None else None
    if target == "tool":
        attributes["gen_ai.operation.name"] = "execute_tool"
    name = _target_name(spec, params)
    if name is not None and target in _GEN_AI_NAME:
        attributes[_GEN_AI_NAME[target]] = name
    uri = _param(params, "uri")
    if uri is not None:
        attributes["mcp.resource.uri"] = uri
    return attributes


def _param(params: Any, key: str) -> str | None:
    value = params.get(key) if isinstance(params, Mapping) else getattr(params, key, None)
    return value if isinstance(value, str) else None


def _target_name(spec: Method[Any, Any] | None, params: Any) -> str | None:
    """The name of the component a request uses (the method table's ``target_field``)."""
    field = spec.target_field if spec is not None else None
    return _param(params, field) if field is not None else None


def span_name(method: str, params: Any) -> str:
    """``{method} {tool or prompt name}``, or the method alone (low cardinality: a
    resource's URI is an attribute, never part of the name)."""
    spec = METHODS.get(method)
    if spec is not None and spec.target in _GEN_AI_NAME:
        name = _target_name(spec, params)
        if name is not None:
            return f"{method} {name}"
    return method


def _meta_of(params: Any) -> Mapping[str, Any] | None:
    meta = params.get("_meta") if isinstance(params, Mapping) else getattr(params, "meta", None)
    return meta if isinstance(meta, Mapping) else None


def extract_context(carrier: Mapping[str, Any] | None) -> OtelContext | None:
    """The trace context in ``carrier`` (a ``_meta`` dict), or None when it holds no valid
    ``traceparent`` (then the current span stays the parent)."""
    if not carrier:
        return None
    text = {k: v for k, v in carrier.items() if k in _META_KEYS and isinstance(v, str)}
    if "traceparent" not in text:
        return None
    context = propagate.extract(text)
    if not trace.get_current_span(context).get_span_context().is_valid:
        return None
    return context


def _finish(span: Any, error: BaseException | None, result: Any) -> None:
    if error is None:
        if isinstance(result, CallToolResult) and result.is_error:
            span.set_attribute("error.type", "tool_error")
            span.set_status(StatusCode.ERROR)
        return
    if isinstance(error, trio.Cancelled):
        span.set_attribute("error.type", "cancelled")
        return
    if isinstance(error, McpError):
        code = str(error.code)
        span.set_attributes({"error.type": code, "rpc.response.status_code": code})
        span.set_status(StatusCode.ERROR, error.message)
        return
    span.set_attribute("error.type", type(error).__qualname__)
    span.record_exception(error)
    span.set_status(StatusCode.ERROR, str(error))


class ServerTracing:
    """Server middleware: a SERVER span around each inbound request and notification,
    its parent taken from the request's ``_meta`` trace context (see the module docs).

    ``tracer_provider``: where spans go (default: the global one). The span is current
    while the handler runs, so spans the handler makes (and requests it sends with
    :class:`ClientTracing`) are its children. Cancellation: the span ends with
    ``error.type`` ``cancelled`` and ``Cancelled`` propagates.
    """

    def __init__(self, tracer_provider: Any = None) -> None:
        self.tracer = trace.get_tracer(INSTRUMENTATION, tracer_provider=tracer_provider)

    async def __call__(self, call: Call, call_next: Next) -> Any:
        request = call.request
        carrier = _meta_of(call.params)
        trace_context = getattr(request, "trace", None) if request is not None else None
        if trace_context is not None:
            carrier = {k: getattr(trace_context, k) for k in _META_KEYS}
        negotiated = request.negotiated if request is not None else None
        attributes = _attributes(
            call.method,
            call.params,
            call.request_id,
            negotiated.protocol_version if negotiated is not None else None,
        )
        parent = extract_context(carrier)
        # Attached (not only passed as the parent) so that baggage reaches the handler.
        token = otel_context.attach(parent) if parent is not None else None
        try:
            with self.tracer.start_as_current_span(
                span_name(call.method, call.params),
                kind=SpanKind.SERVER,
                attributes=attributes,
                record_exception=False,
                set_status_on_exception=False,
            ) as span:
                result: Any = None
                error: BaseException | None = None
                try:
                    result = await call_next(call)
                    return result
                except BaseException as exc:
                    error = exc
                    raise
                finally:
                    _finish(span, error, result)
        finally:
            if token is not None:
                otel_context.detach(token)


class ClientTracing:
    """Client middleware: a CLIENT span around each request, its trace context injected
    into ``params._meta`` (``traceparent``, ``tracestate``, ``baggage``) with the global
    propagator. ``tracer_provider``: as for :class:`ServerTracing`. Cancellation: the span
    ends with ``error.type`` ``cancelled``; the request is cancelled as usual.
    """

    def __init__(self, tracer_provider: Any = None) -> None:
        self.tracer = trace.get_tracer(INSTRUMENTATION, tracer_provider=tracer_provider)

    async def __call__(self, call: OutgoingCall, call_next: ClientNext) -> Any:
        from trimcp.client.stateless import with_meta

        version = None
        client = call.client
        negotiated = getattr(client, "_negotiated", None)
        if negotiated is not None:
            version = negotiated.protocol_version
        with self.tracer.start_as_current_span(
            span_name(call.method, call.params),
            kind=SpanKind.CLIENT,
            attributes=_attributes(call.method, call.params, None, version),
            record_exception=False,
            set_status_on_exception=False,
        ) as span:
            carrier: dict[str, str] = {}
            propagate.inject(carrier)
            if carrier:
                call.params = with_meta(call.params, carrier)
            result: Any = None
            error: BaseException | None = None
            try:
                result = await call_next(call)
                return result
            except BaseException as exc:
                error = exc
                raise
            finally:
                # The id is given when the request is sent, inside the chain.
                if call.request_id is not None:
                    span.set_attribute("jsonrpc.request.id", str(call.request_id))
                _finish(span, error, result)


__all__ = ["ClientTracing", "ServerTracing", "extract_context", "span_name"]
