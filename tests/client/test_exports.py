"""The public surface of trimcp.client: every name is re-exported explicitly and importable."""

from __future__ import annotations

import ast
from pathlib import Path

import trimcp.client

EXPECTED = {
    "Callback",
    "Client",
    "ClientHandlers",
    "ClientKwargs",
    "DEFAULT_MAX_PAGES",
    "ElicitationHandler",
    "ElicitationMode",
    "Era",
    "InputRoundsExceeded",
    "ListenEvent",
    "ListenNotAcknowledged",
    "MalformedInputRequest",
    "MissingInputHandler",
    "NoCommonVersion",
    "HandlerKwargs",
    "ListChangedCallback",
    "NotificationCallback",
    "PageIterator",
    "PaginationError",
    "Progress",
    "RootsProvider",
    "SamplingHandler",
    "SchemaUnsupported",
    "SchemaViolation",
    "Subscription",
    "SubscriptionLost",
    "TaskHandle",
    "ToolOutputError",
    "connect_http",
    "connect_memory",
    "connect_stdio",
    "connect_transport",
    "connect_websocket",
}


def test_every_public_name_is_reexported_as_itself() -> None:
    tree = ast.parse(Path(trimcp.client.__file__).read_text())
    exported = set()
    for node in tree.body:
        if isinstance(node, ast.ImportFrom):
            for alias in node.names:
                assert alias.asname == alias.name, f"{alias.name} must be imported 'as' itself"
                exported.add(alias.name)
    assert exported == EXPECTED
    for name in EXPECTED:
        assert getattr(trimcp.client, name) is not None
