"""The protocol core and the wire types do no I/O: they import with trio & co. blocked."""

from __future__ import annotations

import subprocess
import sys

CHECK = """
import sys
for name in ("trio", "h11", "hypercorn", "trio_websocket", "anyio", "socket", "asyncio"):
    sys.modules[name] = None
import trimcp.protocol.connection, trimcp.protocol.framing, trimcp.protocol.sse
import trimcp.protocol.methods, trimcp.protocol.versions, trimcp.protocol.lifecycle
import trimcp.protocol.modern, trimcp.protocol.negotiated
import trimcp.types, trimcp.serde
print("ok")
"""


def test_core_imports_without_io_libraries() -> None:
    completed = subprocess.run(
        [sys.executable, "-c", CHECK], capture_output=True, text=True, timeout=60, check=False
    )
    assert completed.returncode == 0, completed.stderr
    assert completed.stdout.strip() == "ok"


def test_the_check_notices_an_io_import() -> None:
    completed = subprocess.run(
        [sys.executable, "-c", CHECK.replace('print("ok")', "import trimcp.session")],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert completed.returncode != 0
