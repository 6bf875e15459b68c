"""Loading an example as a module, and running one as a subprocess (bounded)."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path
from types import ModuleType

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def load_example(name: str) -> ModuleType:
    """Import ``examples/<name>.py`` under a private module name (its ``__main__`` block
    does not run)."""
    spec = importlib.util.spec_from_file_location(f"example_{name}", EXAMPLES / f"{name}.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    # Registered first: resolving string annotations (``from __future__ import
    # annotations``) looks the module up in sys.modules.
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def run_example(name: str, *args: str, timeout: float = 60.0) -> list[str]:
    """Run ``examples/<name>.py`` with ``args``; its stdout lines (it must exit 0)."""
    completed = subprocess.run(
        [sys.executable, str(EXAMPLES / f"{name}.py"), *args],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    assert completed.returncode == 0, completed.stdout + completed.stderr
    assert "Traceback" not in completed.stderr, completed.stderr
    return completed.stdout.splitlines()
