"""What the MCP Apps browser test needs, from ``setup.sh``: Chromium (the Debian package)
and the host page built on the official ``@modelcontextprotocol/ext-apps`` (pinned).

``apps_browser`` (session) runs ``setup.sh --quiet``. Without npm, or without chromium and
no way to install it (not root, no apt-get), the test is skipped, except under CI (``CI``
set), where it fails.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import attrs
import pytest

from tests.ci import missing_peer

HERE = Path(__file__).resolve().parent
SETUP = HERE / "setup.sh"
SETUP_TIMEOUT = 900.0  # a cold run installs chromium (apt) and 18 npm packages


@attrs.frozen(kw_only=True)
class AppsBrowser:
    """What ``setup.sh`` printed: the browser, and the folder with the host page."""

    chromium: str
    site: Path


def _missing() -> str | None:
    if shutil.which("npm") is None:
        return "npm is not installed: cannot install @modelcontextprotocol/ext-apps"
    can_install = os.geteuid() == 0 and shutil.which("apt-get") is not None
    if shutil.which("chromium") is None and not can_install:
        return "chromium is not installed (run 'sudo apt-get install chromium')"
    return None


@pytest.fixture(scope="session")
def apps_browser() -> AppsBrowser:
    """Install (or check) Chromium and the host page. Skips without them, fails under CI."""
    reason = _missing()
    if reason is not None:
        missing_peer(reason)
    done = subprocess.run(
        [str(SETUP), "--quiet"], capture_output=True, text=True, timeout=SETUP_TIMEOUT, check=False
    )
    assert done.returncode == 0, f"setup.sh failed:\n{done.stderr}"
    values = dict(line.split("=", 1) for line in done.stdout.splitlines() if "=" in line)
    return AppsBrowser(
        chromium=values["APPS_BROWSER_CHROMIUM"], site=Path(values["APPS_BROWSER_SITE"])
    )
