"""The documented example runs: two servers at once, both slow calls cancelled on a deadline.

A real subprocess (it spawns the SDK peer itself), so real time, bounded by a timeout.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "multi_server_client.py"


def test_multi_server_example_runs_and_cancels_on_the_deadline() -> None:
    completed = subprocess.run(
        [sys.executable, str(EXAMPLE), "--deadline", "2"],
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
        "deadline of 2s reached: both calls cancelled, both sessions closed",
    ]:
        assert expected in lines, completed.stdout
