"""How long the fuzzing pass runs: briefly in CI, longer on demand.

``TRIMCP_FUZZ_EXAMPLES=20000 pytest tests/fuzz`` runs each target with that many examples
(default 40 per target, a few seconds in all). See docs/testing.md.
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

EXAMPLES = int(os.environ.get("TRIMCP_FUZZ_EXAMPLES", "40"))

FUZZ = settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    derandomize=os.environ.get("TRIMCP_FUZZ_RANDOM") is None,
)
