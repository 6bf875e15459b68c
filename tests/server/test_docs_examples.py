"""The docs' examples (examples/docs/*.py) run and print what the docs say they print; one
of them also runs as a real stdio server process."""

from __future__ import annotations

import importlib.util
import logging
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import trio

from trimcp.client import connect_stdio
from trimcp.server.logging import StdlibBridge

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "docs"

EXPECTED = {
    "tools": """\
forecast {'type': 'integer', 'description': 'How many days', 'minimum': 1, 'maximum': 7, \
'default': 3}
{'city': 'Paris', 'temperatures': [20.0, 21.0]}
True Atlantis has no weather service; try a real city.
True Invalid arguments for tool 'forecast': days: must be at most 7
""",
    "resources": """\
application/json {"ids": [1, 2]}
text/plain Call Ann
updated: notes://2
-32002 Resource not found: notes://3 {'uri': 'notes://3'}
""",
    "prompts": """\
review [('code', True), ('focus', False)]
user Review this code, looking for style:

x = 1
assistant Here is what I found:
""",
    "completion": """\
['python']
['trio', 'typeshed'] False
""",
    "server_logging": """\
info importer imported row 0
info importer imported row 1
warning importer.summary {'skipped': 0, 'imported': 2}
""",
}


def load(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"docs_example_{name}", EXAMPLES / f"{name}.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("name", sorted(EXPECTED))
async def test_example_prints_what_the_docs_say(
    autojump_clock: Any, name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    module = load(name)
    try:
        await module.demo()
    finally:
        for logger_name in ("importer",):
            logger = logging.getLogger(logger_name)
            for handler in list(logger.handlers):
                if isinstance(handler, StdlibBridge):
                    logger.removeHandler(handler)
    assert capsys.readouterr().out == EXPECTED[name]


def test_every_example_is_checked_and_documented() -> None:
    # The server-feature examples (other pages' examples, e.g. cli_*.py, are checked by
    # their own tests; tests/test_docs_examples.py runs them all).
    server_examples = {
        p.stem for p in EXAMPLES.glob("*.py") if not p.stem.startswith(("cli_", "testing_"))
    }
    assert server_examples == set(EXPECTED)
    docs = Path(__file__).resolve().parents[2] / "docs"
    for name in EXPECTED:
        page = "logging" if name == "server_logging" else name
        assert f"examples/docs/{name}.py" in (docs / f"{page}.md").read_text()


async def test_the_tools_example_serves_over_stdio() -> None:
    # A real process: no autojump clock, a generous bound instead.
    with trio.fail_after(30):
        async with connect_stdio([sys.executable, str(EXAMPLES / "tools.py")]) as client:
            assert client.server_info.name == "weather"
            result = await client.call_tool("forecast", {"city": "Oslo", "days": 1})
    assert result.structured_content == {"city": "Oslo", "temperatures": [20.0]}
