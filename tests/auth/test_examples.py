"""examples/oauth_server.py and oauth_client.py load, and the server is configured as its
docstring says (metadata, scopes). The flows themselves run in test_oidc_client.py."""

from __future__ import annotations

import runpy
from pathlib import Path

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def test_oauth_server_example() -> None:
    module = runpy.run_path(str(EXAMPLES / "oauth_server.py"), run_name="example")
    protected = module["protected"]
    assert protected.metadata()["resource"] == "http://127.0.0.1:8000/mcp"
    assert protected.scopes_for("tools/call", "delete_note") == frozenset({"notes:write"})
    assert protected.hide_unauthorized


def test_oauth_client_example() -> None:
    module = runpy.run_path(str(EXAMPLES / "oauth_client.py"), run_name="example")
    assert callable(module["main"])
