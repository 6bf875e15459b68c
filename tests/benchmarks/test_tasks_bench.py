"""A smoke run of benchmarks/tasks_bench.py with tiny counts (no timing assertions)."""

from __future__ import annotations

import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from benchmarks import tasks_bench  # noqa: E402


async def test_concurrent_tasks_run_to_completion() -> None:
    run = await tasks_bench.concurrent_tasks(20, 0.01, 0.01)
    assert run["polls"] >= 0
    assert run["changes"] >= 20


async def test_memory_per_finished_task_is_measured() -> None:
    per_task = await tasks_bench.memory_per_finished_task(50)
    assert per_task > 0


async def test_the_client_runs_many_tasks_for_a_server() -> None:
    run = await tasks_bench.client_run_tasks(20, 0.01, 0.01)
    assert run["polls"] >= 20
