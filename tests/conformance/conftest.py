"""Registers the ``conformance`` marker: ``pytest -m conformance`` runs the official MCP
conformance suite against trimcp (see test_conformance.py and SCENARIOS.md)."""

from __future__ import annotations

import pytest


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "conformance: the official MCP conformance suite (needs npm; installs it on first use)",
    )
