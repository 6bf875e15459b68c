"""Every runnable example in the docs is executed.

- Fenced blocks marked ```python in docs/*.md are complete programs: each runs in a fresh
  interpreter and must exit 0. (Fragments that are not meant to run use ```py.)
- Every script in examples/docs/ runs the same way.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
BLOCK = re.compile(r"^```python\n(.*?)^```", re.DOTALL | re.MULTILINE)


def doc_blocks() -> list[tuple[str, str]]:
    blocks = []
    for page in sorted((ROOT / "docs").glob("*.md")):
        for index, match in enumerate(BLOCK.finditer(page.read_text())):
            blocks.append((f"{page.name}#{index}", match.group(1)))
    return blocks


def run(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        stdin=subprocess.DEVNULL,  # a script that serves stdio must see EOF, not a terminal
        text=True,
        timeout=120,
        cwd=ROOT,
        check=False,
    )


@pytest.mark.parametrize(("where", "code"), doc_blocks(), ids=[w for w, _ in doc_blocks()])
def test_doc_block_runs(where: str, code: str) -> None:
    completed = run(code)
    assert completed.returncode == 0, f"{where}:\n{completed.stdout}\n{completed.stderr}"


@pytest.mark.parametrize(
    "script", sorted((ROOT / "examples" / "docs").glob("*.py")), ids=lambda p: p.name
)
def test_example_script_runs(script: Path) -> None:
    completed = run(script.read_text())
    assert completed.returncode == 0, f"{script}:\n{completed.stdout}\n{completed.stderr}"
