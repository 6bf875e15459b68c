"""The converter's hooks are made on first use (cold start); every wire class still gets
them (what import used to check), and a round trip through lazily made hooks works."""

from __future__ import annotations

import subprocess
import sys

from trimcp import serde
from trimcp.types import CallToolRequestParams


def test_every_wire_class_gets_its_hooks() -> None:
    assert serde.build_all_hooks() > 100


def test_importing_serde_builds_no_hooks_and_first_use_does() -> None:
    code = (
        "from trimcp import serde\n"
        "before = len(serde._FAST_STRUCTURE_HOOKS)\n"
        "from trimcp.types import Implementation\n"
        "serde.structure({'name': 'a', 'version': '1'}, Implementation)\n"
        "print(before, len(serde._FAST_STRUCTURE_HOOKS) > before)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert out.stdout.split() == ["0", "True"]


def test_round_trip() -> None:
    params = CallToolRequestParams(name="add", arguments={"a": 1})
    assert serde.structure(serde.unstructure(params), CallToolRequestParams) == params
