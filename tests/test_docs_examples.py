"""Every runnable example in the docs is executed.

- Fenced blocks marked ```python in docs/*.md are complete programs: each runs in a fresh
  interpreter and must exit 0. (Fragments that are not meant to run use ```py.)
- Every script in examples/docs/ runs the same way.
- The README's ```python blocks too: the first (the server) is saved as weather.py, and
  the others run next to it.
- The shell recipe of docs/authorization.md ("A working login on loopback") needs an
  authorization server: tests/auth/test_loopback_recipe.py runs it, block by block.
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


def run(code: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        stdin=subprocess.DEVNULL,  # a script that serves stdio must see EOF, not a terminal
        text=True,
        timeout=120,
        cwd=cwd,
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


def test_readme_examples_run(tmp_path: Path) -> None:
    server, *clients = [m.group(1) for m in BLOCK.finditer((ROOT / "README.md").read_text())]
    assert clients, "the README's examples are ```python blocks"
    (tmp_path / "weather.py").write_text(server)
    assert run(server, tmp_path).returncode == 0  # serves stdio until its stdin ends
    for code in clients:
        completed = run(code, tmp_path)
        assert completed.returncode == 0, f"README:\n{completed.stdout}\n{completed.stderr}"
        assert completed.stdout == "{'result': [20.0, 21.0, 22.0]}\n"
