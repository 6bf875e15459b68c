"""The ``ts_v2`` fixture for the tests that run the TypeScript SDK v2 peers of this folder.

Those tests live one directory up, where this conftest's fixtures are not visible, so they
import ``ts_v2_fixture`` (and ``node_argv`` / ``node_env``) from here by name.

``ts_v2`` (module scope) runs ``setup.sh --quiet`` (npm, cached under ``.cache/ts-v2``) and
returns what it printed (``TS_V2_NODE``, ``TS_V2_NODE_PATH``, ``TS_V2_SERVER``,
``TS_V2_PEERS``). Skipped when npm is missing, except under CI (``CI`` set), where a
missing npm fails.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.ci import missing_peer

SETUP = Path(__file__).resolve().parent / "setup.sh"
SETUP_TIMEOUT = 600.0


@pytest.fixture(scope="module", name="ts_v2")
def ts_v2_fixture() -> dict[str, str]:
    """Install (or check) the pinned packages; the environment to run the peers with.
    Skips without npm, but fails under CI."""
    if shutil.which("npm") is None:
        reason = "npm is not installed: cannot install the TypeScript SDK v2 packages"
        missing_peer(reason, "CI must provide npm")
    done = subprocess.run(
        [str(SETUP), "--quiet"],
        capture_output=True,
        text=True,
        timeout=SETUP_TIMEOUT,
        check=False,
    )
    assert done.returncode == 0, f"setup.sh failed:\n{done.stderr}"
    values = dict(line.split("=", 1) for line in done.stdout.splitlines() if "=" in line)
    return values


def node_argv(ts_v2: dict[str, str], peer: str, *extra: str) -> list[str]:
    """Run the peer script ``peer`` (a file of this folder) with the setup's node."""
    return [ts_v2["TS_V2_NODE"], str(Path(ts_v2["TS_V2_PEERS"]) / peer), *extra]


def node_env(ts_v2: dict[str, str]) -> dict[str, str]:
    """The environment that lets the peers ``require`` the installed packages."""
    return {**os.environ, "NODE_PATH": ts_v2["TS_V2_NODE_PATH"]}
