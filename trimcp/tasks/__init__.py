"""The task engine, for whichever side runs tasks: a server for its clients
(:mod:`trimcp.server.tasks`, the wire methods and a tool's task context) or a client for
its server (:mod:`trimcp.client.task_receiver`). It imports neither framework.

- :mod:`~trimcp.tasks.store`: :class:`TaskRecord`, the :class:`TaskStore` interface and
  :class:`MemoryTaskStore` (bounded, expiring);
- :mod:`~trimcp.tasks.manager`: :class:`TaskManager` (the nursery tasks run in, one cancel
  scope each, TTL as deadline) and :class:`TaskOptions`;
- :mod:`~trimcp.tasks.inputs`: the questions a running task waits on;
- :mod:`~trimcp.tasks.wire`: records in 2025-11-25 wire form.
"""

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
    "TaskManager",
    "TaskOptions",
    "TaskRecord",
    "TaskStore",
    "TaskStoreFull",
]
