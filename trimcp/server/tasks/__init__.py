"""Tasks: tool calls that outlive their request (2025-11-25 tasks and the
``io.modelcontextprotocol/tasks`` extension). See ``docs/tasks.md``.

- :mod:`~trimcp.server.tasks.store`: :class:`TaskRecord`, the :class:`TaskStore`
  interface and :class:`MemoryTaskStore`;
- :mod:`~trimcp.server.tasks.manager`: :class:`TaskManager` (the server-owned nursery the
  tasks run in) and :class:`TaskOptions`;
- :mod:`~trimcp.server.tasks.context`: what a tool running as a task gets as ``ctx``;
- :mod:`~trimcp.server.tasks.methods`: the ``tasks/*`` methods on the wire.
"""

from trimcp.server.tasks.context import TaskContext as TaskContext
from trimcp.server.tasks.manager import TaskManager as TaskManager
from trimcp.server.tasks.manager import TaskOptions as TaskOptions
from trimcp.server.tasks.methods import start_task as start_task
from trimcp.server.tasks.store import MemoryTaskStore as MemoryTaskStore
from trimcp.server.tasks.store import TaskRecord as TaskRecord
from trimcp.server.tasks.store import TaskStore as TaskStore
from trimcp.server.tasks.store import TaskStoreFull as TaskStoreFull

__all__ = [
    "MemoryTaskStore",
    "TaskContext",
    "TaskManager",
    "TaskOptions",
    "TaskRecord",
    "TaskStore",
    "TaskStoreFull",
    "start_task",
]
