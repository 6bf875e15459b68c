"""trimcp: a Trio-native framework for the Model Context Protocol.

The public API lives here, the friendly tier (servers, clients, connecting and serving,
errors, middleware, authorization, stores), and in ``trimcp.lowlevel`` (the session engine,
the sans-IO connection, the typed method table, raw serving), ``trimcp.testing`` and
``trimcp.types`` (the wire types); every other module is an implementation detail whose
names say what it holds.

Names are imported lazily on first use, so that ``import trimcp.protocol`` (the sans-IO
core) does not drag in Trio and the transports.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from trimcp._version import __version__ as __version__

#: public name -> the module it lives in
_EXPORTS: dict[str, str] = {
    "AuthInfo": "trimcp.auth",
    "IntrospectionVerifier": "trimcp.auth",
    "JwtVerifier": "trimcp.auth",
    "ProtectedResource": "trimcp.auth",
    "Client": "trimcp.client",
    "connect_http": "trimcp.client",
    "connect_memory": "trimcp.client",
    "connect_websocket": "trimcp.client",
    "connect_stdio": "trimcp.client",
    "connect_transport": "trimcp.client",
    "TaskHandle": "trimcp.client",
    "LocalProtocolError": "trimcp.errors",
    "McpError": "trimcp.errors",
    "RemoteProtocolError": "trimcp.errors",
    "RequestTimeout": "trimcp.errors",
    "SessionClosed": "trimcp.errors",
    "LATEST_VERSION": "trimcp.protocol.versions",
    "SUPPORTED_VERSIONS": "trimcp.protocol.versions",
    "Audio": "trimcp.server",
    "Context": "trimcp.server",
    "Field": "trimcp.server",
    "Image": "trimcp.server",
    "PromptMessage": "trimcp.server",
    "Server": "trimcp.server",
    "ToolError": "trimcp.server",
    "ErrorMaskingMiddleware": "trimcp.server.middleware",
    "LoggingMiddleware": "trimcp.server.middleware",
    "RateLimitMiddleware": "trimcp.server.middleware",
    "TimingMiddleware": "trimcp.server.middleware",
    "CacheHint": "trimcp.server.stateless",
    "StatelessOptions": "trimcp.server.stateless",
    "InputOptions": "trimcp.server.input_required",
    "RequestStateKeyring": "trimcp.stores.request_state",
    "LifespanFailed": "trimcp.server.lifespan",
    "LifespanNotRunning": "trimcp.server.lifespan",
    "MemoryTaskStore": "trimcp.server.tasks",
    "TaskContext": "trimcp.server.tasks",
    "TaskBudget": "trimcp.server.tasks",
    "TaskOptions": "trimcp.server.tasks",
    "TaskStore": "trimcp.server.tasks",
    "SessionOptions": "trimcp.session",
    "serve_stdio": "trimcp.transports.stdio",
    "serve_http": "trimcp.transports.http_server",
    "create_asgi_app": "trimcp.transports.http_server",
    "serve_websocket": "trimcp.transports.websocket",
    "MemoryStore": "trimcp.stores",
    "RedisStore": "trimcp.stores",
    "StoreUnavailable": "trimcp.stores",
    "Extension": "trimcp.server.extensions",
}

if TYPE_CHECKING:
    from trimcp.auth import AuthInfo as AuthInfo
    from trimcp.auth import IntrospectionVerifier as IntrospectionVerifier
    from trimcp.auth import JwtVerifier as JwtVerifier
    from trimcp.auth import ProtectedResource as ProtectedResource
    from trimcp.client import Client as Client
    from trimcp.client import TaskHandle as TaskHandle
    from trimcp.client import connect_http as connect_http
    from trimcp.client import connect_memory as connect_memory
    from trimcp.client import connect_stdio as connect_stdio
    from trimcp.client import connect_transport as connect_transport
    from trimcp.client import connect_websocket as connect_websocket
    from trimcp.errors import LocalProtocolError as LocalProtocolError
    from trimcp.errors import McpError as McpError
    from trimcp.errors import RemoteProtocolError as RemoteProtocolError
    from trimcp.errors import RequestTimeout as RequestTimeout
    from trimcp.errors import SessionClosed as SessionClosed
    from trimcp.protocol.versions import LATEST_VERSION as LATEST_VERSION
    from trimcp.protocol.versions import SUPPORTED_VERSIONS as SUPPORTED_VERSIONS
    from trimcp.server import Audio as Audio
    from trimcp.server import Context as Context
    from trimcp.server import Field as Field
    from trimcp.server import Image as Image
    from trimcp.server import PromptMessage as PromptMessage
    from trimcp.server import Server as Server
    from trimcp.server import ToolError as ToolError
    from trimcp.server.extensions import Extension as Extension
    from trimcp.server.input_required import InputOptions as InputOptions
    from trimcp.server.lifespan import LifespanFailed as LifespanFailed
    from trimcp.server.lifespan import LifespanNotRunning as LifespanNotRunning
    from trimcp.server.middleware import ErrorMaskingMiddleware as ErrorMaskingMiddleware
    from trimcp.server.middleware import LoggingMiddleware as LoggingMiddleware
    from trimcp.server.middleware import RateLimitMiddleware as RateLimitMiddleware
    from trimcp.server.middleware import TimingMiddleware as TimingMiddleware
    from trimcp.server.stateless import CacheHint as CacheHint
    from trimcp.server.stateless import StatelessOptions as StatelessOptions
    from trimcp.server.tasks import MemoryTaskStore as MemoryTaskStore
    from trimcp.server.tasks import TaskBudget as TaskBudget
    from trimcp.server.tasks import TaskContext as TaskContext
    from trimcp.server.tasks import TaskOptions as TaskOptions
    from trimcp.server.tasks import TaskStore as TaskStore
    from trimcp.session import SessionOptions as SessionOptions
    from trimcp.stores import MemoryStore as MemoryStore
    from trimcp.stores import RedisStore as RedisStore
    from trimcp.stores import StoreUnavailable as StoreUnavailable
    from trimcp.stores.request_state import RequestStateKeyring as RequestStateKeyring
    from trimcp.transports.http_server import create_asgi_app as create_asgi_app
    from trimcp.transports.http_server import serve_http as serve_http
    from trimcp.transports.stdio import serve_stdio as serve_stdio
    from trimcp.transports.websocket import serve_websocket as serve_websocket


#: Names of the low-level tier that earlier releases exported here too: still found
#: (from ``trimcp.lowlevel``), but no longer part of the friendly API (not in ``__all__``).
_LOWLEVEL: frozenset[str] = frozenset(
    {
        "LowLevelServer",
        "Negotiated",
        "RequestContext",
        "Role",
        "Session",
        "memory_transport_pair",
        "open_http_client_transport",
        "open_session",
        "open_websocket_client_transport",
        "serve_session",
    }
)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        if name not in _LOWLEVEL:
            raise AttributeError(f"module 'trimcp' has no attribute {name!r}")
        module = "trimcp.lowlevel"
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_EXPORTS])


__all__ = ["__version__", *_EXPORTS]
