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
    assert "connected to demo 1.0.0 (protocol 2025-11-25)" in out
    assert "add(2, 40) -> {'result': 42.0}" in out
    assert "progress 2/10: counted 2" in out
    assert "cancelled: the server was sent notifications/cancelled" in out
    assert "read demo://greeting -> 'Hello from trimcp!'" in out
