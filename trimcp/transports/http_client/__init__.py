"""MCP over HTTP, client side: Streamable HTTP (with fallback) and legacy HTTP+SSE.

h11 over Trio streams; see ``docs/transports-http-client.md``.
"""

from trimcp.http.errors import HttpClientError as HttpClientError
from trimcp.http.errors import HttpStatusError as HttpStatusError
from trimcp.http.errors import SessionExpired as SessionExpired
from trimcp.transports.http_client.options import HttpClientOptions as HttpClientOptions
from trimcp.transports.http_client.transport import HttpClientTransport as HttpClientTransport
from trimcp.transports.http_client.transport import (
    open_http_client_transport as open_http_client_transport,
)
from trimcp.transports.http_client.transport import (
    open_legacy_sse_client_transport as open_legacy_sse_client_transport,
)

__all__ = [
    "HttpClientError",
    "HttpClientOptions",
    "HttpClientTransport",
    "HttpStatusError",
    "SessionExpired",
    "open_http_client_transport",
    "open_legacy_sse_client_transport",
]
