"""Tasks (2025-11-25): task-augmented requests, task state, and the tasks/* methods.

Task-shaped results (``GetTaskResult``, ``CancelTaskResult``) and the status notification
params are the schema's ``allOf`` of ``Task`` and a result/params base, so they subclass
:class:`Task` and add ``meta`` (and ``result_type``).
"""

from typing import Any, Final, Literal, TypeAlias

import attrs

from trimcp.types.base import WireType
from trimcp.types.common import PaginatedResult, RequestParams, Result

TaskStatus: TypeAlias = Literal["working", "input_required", "completed", "failed", "cancelled"]

TERMINAL_TASK_STATUSES: Final[frozenset[str]] = frozenset({"completed", "failed", "cancelled"})
"""The statuses a task never leaves."""
"""The state of a task."""

RELATED_TASK_META_KEY = "io.modelcontextprotocol/related-task"
"""The ``_meta`` key under which a message names the task it belongs to."""


@attrs.frozen(kw_only=True, repr=False, eq=False)
class TaskMetadata(WireType):
    """Asks for task-augmented execution of a request (the ``task`` member of its params)."""

    ttl: int | None = None


@attrs.frozen(kw_only=True, repr=False, eq=False)
class RelatedTaskMetadata(WireType):
    """Ties a message to a task; sent in ``_meta`` under :data:`RELATED_TASK_META_KEY`."""

    task_id: str


@attrs.frozen(kw_only=True, repr=False, eq=False)
class TaskAugmentedRequestParams(RequestParams):
    """Params of a request that may run as a task (when ``task`` is given)."""

    task: TaskMetadata | None = None


@attrs.frozen(kw_only=True, repr=False, eq=False)
class Task(WireType):
    """The state of a task. ``ttl`` is required on the wire; ``None`` (``null``) is unlimited."""

    task_id: str
    status: TaskStatus
    created_at: str
    last_updated_at: str
    ttl: int | None
    status_message: str | None = None
    poll_interval: int | None = None


@attrs.frozen(kw_only=True, repr=False, eq=False)
class CreateTaskResult(Result):
    """The immediate answer to a task-augmented request."""

    task: Task


@attrs.frozen(kw_only=True, repr=False, eq=False)
class GetTaskRequestParams(WireType):
    """Params of ``tasks/get``."""

    task_id: str


@attrs.frozen(kw_only=True, repr=False, eq=False)
class GetTaskPayloadRequestParams(WireType):
    """Params of ``tasks/result``; its result has the shape of the original request's result."""

    task_id: str


@attrs.frozen(kw_only=True, repr=False, eq=False)
class CancelTaskRequestParams(WireType):
    """Params of ``tasks/cancel``."""

    task_id: str


@attrs.frozen(kw_only=True, repr=False, eq=False)
class GetTaskResult(Task):
    """The result of ``tasks/get``: the task's current state."""

    meta: dict[str, Any] | None = None
    result_type: str | None = None


@attrs.frozen(kw_only=True, repr=False, eq=False)
class CancelTaskResult(Task):
    """The result of ``tasks/cancel``: the task's state after cancelling."""

    meta: dict[str, Any] | None = None
    result_type: str | None = None


@attrs.frozen(kw_only=True, repr=False, eq=False)
class ListTasksResult(PaginatedResult):
    """The result of ``tasks/list``."""

    tasks: list[Task]


@attrs.frozen(kw_only=True, repr=False, eq=False)
class TaskStatusNotificationParams(Task):
    """Params of ``notifications/tasks/status``: the task's new state."""

    meta: dict[str, Any] | None = None
