"""Whether the tests run under CI, and what a missing peer means there.

Outside CI a missing peer (npm, redis-server, nginx) skips the tests that need it: a
contributor without them still gets a useful run. Under CI the same gap fails, so a broken
CI image cannot pass by skipping. CI services set ``CI`` to different things (``true``,
``1``, ``yes``), so any non-empty value counts except ``0`` and ``false``, which say "not
CI" explicitly. Every skip-or-fail decision in the suite goes through :func:`missing_peer`
(``tests/test_ci.py`` checks that no other place reads ``CI``).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import NoReturn

import pytest

#: Values of ``CI`` that mean "not CI" (compared without case or surrounding blanks).
NOT_CI = frozenset({"", "0", "false"})


def under_ci(environ: Mapping[str, str] | None = None) -> bool:
    """True when ``CI`` (in ``environ``, default ``os.environ``) says the run is CI."""
    value = (os.environ if environ is None else environ).get("CI", "")
    return value.strip().lower() not in NOT_CI


def missing_peer(reason: str, under_ci_hint: str = "CI must provide it") -> NoReturn:
    """Skip the current test because a peer is missing; under CI fail it instead.

    ``reason`` names what is missing; ``under_ci_hint`` says what CI has to provide.
    """
    if under_ci():
        pytest.fail(f"{reason} ({under_ci_hint}; CI={os.environ.get('CI')!r})")
    pytest.skip(reason)
