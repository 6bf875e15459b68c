"""The public surface: every documented name is importable from ``trimcp`` and is the same
object as in its home module, and nothing private leaks (names re-exported explicitly)."""

from __future__ import annotations

import importlib

import trimcp
import trimcp.lowlevel

EXPECTED = {
    "AuthInfo": "trimcp.auth",
    "IntrospectionVerifier": "trimcp.auth",
    "JwtVerifier": "trimcp.auth",
    "ProtectedResource": "trimcp.auth",
    "Client": "trimcp.client",
    "connect_memory": "trimcp.client",
    "connect_stdio": "trimcp.client",
    "connect_transport": "trimcp.client",
    "McpError": "trimcp.errors",
    "LocalProtocolError": "trimcp.errors",
    "RemoteProtocolError": "trimcp.errors",
    "RequestTimeout": "trimcp.errors",
    "SessionClosed": "trimcp.errors",
    "Server": "trimcp.server",
    "Context": "trimcp.server",
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
    "TaskHandle": "trimcp.client",
    "TaskOptions": "trimcp.server.tasks",
    "TaskStore": "trimcp.server.tasks",
    "MemoryTaskStore": "trimcp.server.tasks",
    "TaskContext": "trimcp.server.tasks",
    "SessionOptions": "trimcp.session",
    "serve_stdio": "trimcp.transports.stdio",
    "serve_websocket": "trimcp.transports.websocket",
    "MemoryStore": "trimcp.stores",
    "RedisStore": "trimcp.stores",
    "StoreUnavailable": "trimcp.stores",
    "Extension": "trimcp.server.extensions",
}


#: The low-level tier (trimcp.lowlevel): the engine, the connection, the method table.
LOWLEVEL = {
    "Session": "trimcp.session",
    "extension_method": "trimcp.protocol.extensions",
    "SessionOptions": "trimcp.session",
    "SessionHandler": "trimcp.session",
    "RequestContext": "trimcp.session",
    "open_session": "trimcp.session",
    "serve_session": "trimcp.session",
    "Transport": "trimcp.session.transport",
    "Connection": "trimcp.protocol.connection",
    "Role": "trimcp.protocol.lifecycle",
    "Negotiated": "trimcp.protocol.negotiated",
    "admit_request": "trimcp.protocol.admission",
    "Method": "trimcp.protocol.methods",
    "METHODS": "trimcp.protocol.methods",
    "lookup": "trimcp.protocol.methods",
    "CALL_TOOL": "trimcp.protocol.methods",
    "LIST_TOOLS": "trimcp.protocol.methods",
    "LowLevelServer": "trimcp.server.lowlevel",
    "memory_transport_pair": "trimcp.transports.memory",
    "open_http_client_transport": "trimcp.transports.http_client",
    "open_websocket_client_transport": "trimcp.transports.websocket",
}


def test_the_low_level_tier() -> None:
    import trimcp.lowlevel

    for name, home in LOWLEVEL.items():
        assert getattr(trimcp.lowlevel, name) is getattr(importlib.import_module(home), name), name
    # Every method of the table has its typed constant there.
    constants = {
        v.name for v in vars(trimcp.lowlevel).values() if isinstance(v, trimcp.lowlevel.Method)
    }
    assert constants == set(trimcp.lowlevel.METHODS)
    assert set(LOWLEVEL) <= set(trimcp.lowlevel.__all__)


def test_the_friendly_tier_leaves_the_engine_to_lowlevel() -> None:
    for name in ("Session", "RequestContext", "open_session", "Role", "LowLevelServer"):
        assert name not in trimcp.__all__, name
        # Earlier spellings still resolve, to the same objects.
        assert getattr(trimcp, name) is getattr(trimcp.lowlevel, name), name
    assert len(trimcp.__all__) <= 50


def test_public_names_come_from_their_home_modules() -> None:
    for name, home in EXPECTED.items():
        assert getattr(trimcp, name) is getattr(importlib.import_module(home), name), name


def test_every_export_resolves() -> None:
    for name in trimcp.__all__:
        assert getattr(trimcp, name) is not None, name


def test_importing_trimcp_loads_no_io_library() -> None:
    import subprocess
    import sys

    code = "import sys; import trimcp; print('trio' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_no_private_names_are_exported() -> None:
    public = [n for n in dir(trimcp) if not n.startswith("__")]
    modules = {
        "client",
        "errors",
        "protocol",
        "server",
        "session",
        "transports",
        "types",
        "serde",
        "_groups",
        "_record",
        "_attrs_cache",
        "_fastio",
        "_sealed",
        "_signals",
        "_version",
        "_EXPORTS",
        "_LOWLEVEL",
        "_validators",
        "_jsontypes",
    }
    assert not [n for n in public if n.startswith("_") and n not in modules]
