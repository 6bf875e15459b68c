"""Ctrl-C for the CLI: see :mod:`trimcp._signals` (shared with ``Server.run``)."""

from __future__ import annotations

from trimcp._signals import run_until_interrupted as run_until_interrupted

__all__ = ["run_until_interrupted"]
