"""Task records in wire form (2025-11-25), for whichever side runs the tasks: the
``Task`` members of a record, and the final answer of ``tasks/result``."""

from __future__ import annotations

import datetime
from typing import Any

from trimcp.errors import INTERNAL_ERROR, McpError
from trimcp.tasks.store import TaskRecord
from trimcp.types import RELATED_TASK_META_KEY


def iso(unix: float) -> str:
    """An ISO 8601 UTC timestamp with milliseconds, e.g. ``2025-11-25T10:30:00.000Z``."""
    moment = datetime.datetime.fromtimestamp(unix, datetime.UTC)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def task_fields(record: TaskRecord) -> dict[str, Any]:
    """The ``Task`` members of ``record`` as keyword arguments of the 2025-11-25 types."""
    return {
        "task_id": record.task_id,
        "status": record.status,
        "status_message": record.status_message,
        "created_at": iso(record.created_at),
        "last_updated_at": iso(record.updated_at),
        "ttl": record.ttl_ms,
        "poll_interval": record.poll_interval_ms,
    }


def final_answer(record: TaskRecord) -> dict[str, Any]:
    """The stored result with the related-task ``_meta``; raises the stored error."""
    if record.error is not None:
        error = record.error
        raise McpError(
            int(error.get("code", INTERNAL_ERROR)), str(error.get("message")), error.get("data")
        )
    if record.result is None:
        raise McpError(
            INTERNAL_ERROR,
            f"Task {record.task_id} was cancelled before it produced a result "
            f"({record.status_message or 'no reason given'})",
        )
    result = dict(record.result)
    meta = result.get("_meta")
    result["_meta"] = {
        **(meta if isinstance(meta, dict) else {}),
        RELATED_TASK_META_KEY: {"taskId": record.task_id},
    }
    return result
