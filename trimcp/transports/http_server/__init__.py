"""The Streamable HTTP server transport (and the legacy HTTP+SSE one), on Trio.

``serve_http`` serves with trimcp's lean h11 engine (hypercorn's trio worker for TLS and
the like); the ASGI app mounts in any hypercorn setup.

See docs/transports-http.md for the behaviour, the limits and how to mount the app.
"""

from trimcp.stores.events import EventStore as EventStore
from trimcp.stores.events import InMemoryEventStore as InMemoryEventStore
from trimcp.transports.http_server.app import McpHttpApp as McpHttpApp
from trimcp.transports.http_server.app import create_asgi_app as create_asgi_app
from trimcp.transports.http_server.asgi import HttpRejection as HttpRejection
from trimcp.transports.http_server.config import LOCALHOST_NAMES as LOCALHOST_NAMES
from trimcp.transports.http_server.config import Authenticate as Authenticate
from trimcp.transports.http_server.config import HttpServerConfig as HttpServerConfig
from trimcp.transports.http_server.serve import hypercorn_config as hypercorn_config
from trimcp.transports.http_server.serve import serve_http as serve_http
from trimcp.transports.http_server.transport import (
    close_request_stream as close_request_stream,
)

__all__ = [
    "LOCALHOST_NAMES",
    "Authenticate",
    "EventStore",
    "HttpRejection",
    "HttpServerConfig",
    "InMemoryEventStore",
    "McpHttpApp",
    "close_request_stream",
    "create_asgi_app",
    "hypercorn_config",
    "serve_http",
]
