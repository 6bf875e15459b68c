"""``trimcp call --task`` against examples/everything_server.py over stdio (subprocesses)."""

from __future__ import annotations

import sys

from tests.cli.support import ROOT, cli

EVERYTHING_ARGV = ["--", sys.executable, str(ROOT / "examples" / "everything_server.py")]


def test_call_as_task_prints_states_then_the_result() -> None:
    completed = cli(
        "call",
        "slow_compute",
        "seconds=0.2",
        "label=cli",
        "--task",
        "--ttl",
        "60",
        *EVERYTHING_ARGV,
    )
    assert completed.returncode == 0, completed.stderr
    assert completed.stdout == "Computed cli after 0.2s\n"
    states = [line for line in completed.stderr.splitlines() if line.startswith("task ")]
    assert states[0].endswith(": working")
    assert states[-1].endswith(": completed")


def test_call_as_task_reports_a_tool_error() -> None:
    completed = cli("call", "failing_job", "--task", *EVERYTHING_ARGV)
    assert completed.returncode == 1
    assert "simulated tool error" in completed.stderr


def test_call_as_task_of_a_tool_that_cannot_be_one() -> None:
    # 2026-07-28 (the default era here): the server decides, and answers at once.
    completed = cli("call", "greet", "name=x", "--task", *EVERYTHING_ARGV)
    assert completed.returncode == 0, completed.stderr
    assert completed.stdout == "Hello, x!\n"
    # 2025-11-25: asking for a task of a tool that forbids it is an error.
    legacy = cli("call", "greet", "name=x", "--task", "--mode", "legacy", *EVERYTHING_ARGV)
    assert legacy.returncode != 0
    assert "forbidden" in legacy.stderr


def test_call_as_task_in_the_2025_era() -> None:
    completed = cli(
        "call", "slow_compute", "seconds=0.1", "--task", "--mode", "legacy", *EVERYTHING_ARGV
    )
    assert completed.returncode == 0, completed.stderr
    assert completed.stdout == "Computed result after 0.1s\n"
    assert completed.stderr.splitlines()[-1].endswith(": completed")


def test_call_as_task_shows_the_tasks_progress() -> None:
    # 2025-11-25: progress under the creating call's token, after the handle came back.
    server = ROOT / "tests" / "peers" / "trimcp_task_server.py"
    completed = cli(
        "call", "count", "steps=3", "--task", "--mode", "legacy", "--", sys.executable, str(server)
    )
    assert completed.returncode == 0, completed.stderr
    assert completed.stdout == "counted to 3\n"
    progress = [line for line in completed.stderr.splitlines() if "step " in line]
    assert len(progress) == 3, completed.stderr
    assert [line.split("step ")[-1] for line in progress] == ["1", "2", "3"]
