"""The README's first command runs examples/demo.py: it must work and tell its story."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_demo_transcript() -> None:
    completed = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "demo.py")],
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
        check=False,
    )
    assert completed.returncode == 0, completed.stderr
    out = completed.stdout
    # The client's auto mode speaks the current revision with our server.
    assert "connected to trimcp-everything-server 1.0.0 (protocol 2026-07-28)" in out
    assert "progress 50/100: half way" in out
    assert "[server log info] Tool execution started" in out
    assert "-> 'LLM response: Paris'" in out
    assert '"username": "ada"' in out
    assert "complete arg1='te' -> ['test', 'testing', 'tested']" in out
    assert "progress 2/10: counted 2" in out
    assert "cancelled: the server was sent notifications/cancelled" in out
    assert "the session goes on: add(2, 40) -> {'result': 42.0}" in out
