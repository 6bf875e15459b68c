"""Tasks: tool calls that outlive their request (2025-11-25 tasks and the
``io.modelcontextprotocol/tasks`` extension). See ``docs/tasks.md``.

The engine (records, stores, the task nursery) is :mod:`trimcp.tasks`, shared with the
client, which runs tasks for its server; its names are re-exported here. The server's own:

- :mod:`~trimcp.server.tasks.context`: what a tool running as a task gets as ``ctx``;
- :mod:`~trimcp.server.tasks.methods`: the ``tasks/*`` methods on the wire (2025-11-25);
- :mod:`~trimcp.server.tasks.modern`: the 2026 extension's methods.
"""

from trimcp.server.tasks.context import TaskContext as TaskContext
from trimcp.server.tasks.methods import start_task as start_task
from trimcp.tasks.manager import TaskManager as TaskManager
from trimcp.tasks.manager import TaskOptions as TaskOptions
from trimcp.tasks.store import MemoryTaskStore as MemoryTaskStore
from trimcp.tasks.store import TaskBudget as TaskBudget
from trimcp.tasks.store import TaskRecord as TaskRecord
from trimcp.tasks.store import TaskStore as TaskStore
from trimcp.tasks.store import TaskStoreFull as TaskStoreFull

__all__ = [
    "MemoryTaskStore",
    "TaskBudget",
    "TaskContext",
    "TaskManager",
    "TaskOptions",
    "TaskRecord",
    "TaskStore",
    "TaskStoreFull",
    "start_task",
]
