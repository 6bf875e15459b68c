"""The ``io.modelcontextprotocol/tasks`` extension (SEP-2663) for 2026-07-28, as data.

Sans-IO. In the stateless revision tasks left the core protocol: ``tasks/get``,
``tasks/update`` and ``tasks/cancel`` are extension methods (``tasks/result`` and
``tasks/list`` are gone), a ``tools/call`` may answer ``resultType: "task"`` (a flat
``CreateTaskResult``), and ``Mcp-Name`` carries the task id on Streamable HTTP. The core
method table (:mod:`trimcp.protocol.methods`) keeps describing the schema; what differs
for the extension is listed here.
"""

from __future__ import annotations

from typing import Any, Final

EXTENSION_ID: Final = "io.modelcontextprotocol/tasks"
"""The extension's identifier (in ``capabilities.extensions``)."""

METHODS: Final = frozenset({"tasks/get", "tasks/update", "tasks/cancel"})
"""The extension's requests (client to server), each with ``params.taskId``."""

RESULT_TYPE_TASK: Final = "task"
"""The ``resultType`` of a ``CreateTaskResult``."""


def required_capability_data() -> dict[str, Any]:
    """The ``data`` of a ``-32021`` error asking for the extension."""
    return {"requiredCapabilities": {"extensions": {EXTENSION_ID: {}}}}


def declares_extension(capabilities: Any) -> bool:
    """Whether client capabilities (wire form or typed) declare the tasks extension."""
    extensions = (
        capabilities.get("extensions")
        if isinstance(capabilities, dict)
        else getattr(capabilities, "extensions", None)
    )
    return isinstance(extensions, dict) and isinstance(extensions.get(EXTENSION_ID), dict)
