"""Helpers for testing MCP servers and clients built with trimcp (see ``docs/testing.md``).

- :func:`open_test_client`: an in-memory client for your server (autojump-clock friendly);
- :func:`make_client_fixture` and the ``mcp_client`` fixture: the same for pytest-trio;
- :class:`ScriptedServer`: a fake server you script, to test clients.

``mcp_client`` needs pytest, so it is created on first access: in ``conftest.py`` write
``from trimcp.testing import mcp_client`` and define an ``mcp_server`` fixture.
"""

from typing import Any

from trimcp.testing.client import make_client_fixture as make_client_fixture
from trimcp.testing.client import open_test_client as open_test_client
from trimcp.testing.scripted import ALL_CAPABILITIES as ALL_CAPABILITIES
from trimcp.testing.scripted import Expectation as Expectation
from trimcp.testing.scripted import ScriptedServer as ScriptedServer
from trimcp.testing.scripted import ScriptError as ScriptError


def __getattr__(name: str) -> Any:
    if name == "mcp_client":
        from trimcp.testing.client import mcp_client_fixture

        return mcp_client_fixture()
    raise AttributeError(f"module 'trimcp.testing' has no attribute {name!r}")


__all__ = [
    "ALL_CAPABILITIES",
    "Expectation",
    "ScriptError",
    "ScriptedServer",
    "make_client_fixture",
    "mcp_client",
    "open_test_client",
]
