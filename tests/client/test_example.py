"""The documented example runs: two servers at once, both slow calls cancelled on a deadline.

A real subprocess (it spawns the SDK peer itself), so real time, bounded by a timeout.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "multi_server_client.py"
#: The deadline covers starting the SDK peer too (importing the SDK takes seconds on a
#: loaded machine: with 2 s the stdio server sometimes never listed its tools).
DEADLINE = 8


def test_multi_server_example_runs_and_cancels_on_the_deadline() -> None:
    completed = subprocess.run(
        [sys.executable, str(EXAMPLE), "--deadline", str(DEADLINE)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert completed.returncode == 0, completed.stdout + completed.stderr
    lines = completed.stdout.splitlines()
    for expected in [
        "[stdio] sdk-stdio-peer: tools ['echo', 'add', 'slow', 'progress']",
        "[stdio] add -> 5",
        "[stdio] slow cancelled",
        "[memory] local-weather: tools ['weather', 'crunch']",
        "[memory] weather -> sunny in Paris",
        "[memory] crunch cancelled",
        "  [local server] crunch handler stopped",
        f"deadline of {DEADLINE}s reached: both calls cancelled, both sessions closed",
    ]:
        assert expected in lines, completed.stdout
