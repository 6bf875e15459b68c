"""Settings every test runs under: no Hypothesis deadline, and pytest-timeout's bound.

The profile is loaded in ``tests/conftest.py`` (the reason is there); these tests check it
reaches every property the suite has, including the ones with their own ``@settings``.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any

import pytest
from hypothesis import settings
from hypothesis.stateful import RuleBasedStateMachine

ROOT = Path(__file__).resolve().parents[1]
#: The test modules that use Hypothesis (found by what they import).
PROPERTY_MODULES = sorted(
    str(path.relative_to(ROOT).with_suffix("")).replace("/", ".")
    for path in (ROOT / "tests").rglob("test_*.py")
    if "from hypothesis" in path.read_text() and path.name != Path(__file__).name
)


def _properties(module: Any) -> dict[str, settings]:
    """The settings each property of ``module`` runs with, by name."""
    found: dict[str, settings] = {}
    for name, value in vars(module).items():
        if getattr(value, "is_hypothesis_test", False):
            found[name] = value._hypothesis_internal_use_settings
        elif isinstance(value, type) and issubclass(value, RuleBasedStateMachine):
            found[name] = value.TestCase.settings
    return found


def test_the_default_profile_has_no_deadline() -> None:
    assert settings.default is not None
    assert settings.default.deadline is None


@pytest.mark.parametrize("module_name", PROPERTY_MODULES)
def test_no_property_has_a_deadline(module_name: str) -> None:
    properties = _properties(importlib.import_module(module_name))
    assert properties, f"{module_name} imports hypothesis but has no property"
    timed = {name: s.deadline for name, s in properties.items() if s.deadline is not None}
    assert timed == {}


def test_every_test_has_a_timeout(pytestconfig: pytest.Config) -> None:
    """pytest-timeout is on with a default: a hung test fails instead of eating CI's time."""
    assert 0 < float(pytestconfig.getini("timeout")) <= 300
