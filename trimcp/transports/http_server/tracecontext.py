"""W3C trace context from HTTP headers, for the server's tracing middleware.

A client (or a proxy, or a service mesh) may carry the trace context of a request in the
HTTP headers ``traceparent``, ``tracestate`` and ``baggage`` instead of the request's
``params._meta``. The tracing middleware (:mod:`trimcp.telemetry`) reads ``_meta``, in both
protocol eras, so the HTTP app copies the headers there before the request is handled:
into every request of the body (a batch shares its HTTP request's headers), and only where
``_meta`` holds no ``traceparent`` of its own (``_meta`` wins: it is the request's own).
Without a ``traceparent`` header nothing is copied; values are passed as they came (the
propagator ignores malformed ones), bounded by the server's header size limit.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

from trimcp.transports.http_server.asgi import RequestHeaders

__all__ = ["TRACE_HEADERS", "adopt_trace_headers", "trace_adopter"]

#: The W3C trace context headers, as the app reads them (lower case).
TRACE_HEADERS = (b"traceparent", b"tracestate", b"baggage")


def adopt_trace_headers(value: Any, headers: RequestHeaders) -> None:
    """Copy the trace headers into each request of the decoded body ``value`` (in place)."""
    if headers.get(b"traceparent") is None:
        return
    found = {
        name.decode("ascii"): text
        for name in TRACE_HEADERS
        if (text := headers.get(name)) is not None
    }
    for message in value if type(value) is list else (value,):
        if type(message) is not dict or "method" not in message or "id" not in message:
            continue  # notifications and responses carry no span of their own
        params = message.get("params")
        if params is None:
            params = message["params"] = {}
        if type(params) is not dict:
            continue
        meta = params.get("_meta")
        if meta is None:
            meta = params["_meta"] = {}
        if type(meta) is dict and "traceparent" not in meta:
            meta.update(found)


def trace_adopter(headers: RequestHeaders) -> Callable[[Any], None] | None:
    """:func:`adopt_trace_headers` for ``headers``, for ``parse_body(prepare=...)`` (before
    the body's messages are read: a request without ``params`` gets a new object); None
    without a ``traceparent`` header."""
    if headers.get(b"traceparent") is None:
        return None
    return partial(adopt_trace_headers, headers=headers)
