"""Fixtures shared by every test.

``no_leaked_tasks`` (added to every async test) fails any trio test that leaves a trimcp
task running when it ends: nothing a session starts may outlive it.

Hypothesis runs without its per-example deadline (200 ms by default): on a loaded CI
machine one slow example is a scheduling hiccup, not a finding, and it would fail the run
for a reason that does not reproduce. Each property is bounded by its ``max_examples``
instead, and every test by pytest-timeout (``timeout`` in pyproject.toml).
"""

from __future__ import annotations

import inspect
from collections.abc import AsyncIterator, Iterator

import pytest
import trio
from hypothesis import settings

settings.register_profile("trimcp", deadline=None)
settings.load_profile("trimcp")


def _all_tasks(task: trio.lowlevel.Task) -> Iterator[trio.lowlevel.Task]:
    yield task
    for nursery in task.child_nurseries:
        for child in nursery.child_tasks:
            yield from _all_tasks(child)


def trimcp_tasks() -> list[str]:
    """Names of the live tasks that run trimcp code."""
    root = trio.lowlevel.current_root_task()
    assert root is not None
    return [t.name for t in _all_tasks(root) if t.name.startswith("trimcp.")]


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        function = getattr(item, "function", None)
        if function is not None and inspect.iscoroutinefunction(function):
            item.fixturenames.append("no_leaked_tasks")  # type: ignore[attr-defined]


@pytest.fixture
async def no_leaked_tasks() -> AsyncIterator[None]:
    yield
    leaked = trimcp_tasks()
    assert not leaked, f"tasks left running after the test: {leaked}"
