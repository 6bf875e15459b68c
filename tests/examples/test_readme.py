"""examples/README.md lists every example, and every file it names exists."""

from __future__ import annotations

import re

from tests.examples.helpers import EXAMPLES


def test_every_example_is_listed_and_every_named_file_exists() -> None:
    readme = (EXAMPLES / "README.md").read_text(encoding="utf-8")
    named = set(re.findall(r"`([\w/]+\.py)`", readme))
    scripts = {path.name for path in EXAMPLES.glob("*.py")}
    assert scripts <= named, f"not in examples/README.md: {sorted(scripts - named)}"
    for name in named:
        # Bare names and docs/... are examples; tests/... are relative to the repository.
        where = EXAMPLES.parent if name.startswith("tests/") else EXAMPLES
        assert (where / name).exists(), f"examples/README.md names a missing {name}"
