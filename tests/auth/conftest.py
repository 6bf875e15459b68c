"""Fixtures of the authorization tests: a real authorization server (oidc-provider on
127.0.0.1, installed by ``examples/oidc/setup.sh``) and a free port for a protected
trimcp server.

``oidc_provider`` (session): the provider process; skipped when npm is missing, except
under CI (``CI`` set), where a missing peer fails.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
from collections.abc import Generator, Iterator
from pathlib import Path

import attrs
import pytest

from tests.ci import missing_peer

HERE = Path(__file__).resolve().parent
OIDC = HERE.parent.parent / "examples" / "oidc"
SETUP = OIDC / "setup.sh"
PROVIDER = OIDC / "provider.mjs"
SETUP_TIMEOUT = 600.0
START_TIMEOUT = 20.0


@attrs.frozen
class OidcProvider:
    issuer: str
    process: subprocess.Popen[bytes]

    @property
    def token_url(self) -> str:
        return f"{self.issuer}/token"


def _need_peer(reason: str) -> None:
    missing_peer(reason, "CI must run the authorization-server tests")


def start_provider(**env: str) -> Generator[OidcProvider]:
    """oidc-provider (installed when missing) with ``env`` on top of the defaults, for as
    long as the generator is suspended; skips without npm (fails under CI)."""
    if shutil.which("npm") is None:
        _need_peer("npm is not installed")
    setup = subprocess.run(
        ["bash", str(SETUP), "--quiet"], capture_output=True, text=True, timeout=SETUP_TIMEOUT
    )
    if setup.returncode != 0:
        pytest.fail(f"examples/oidc/setup.sh failed:\n{setup.stderr[-2000:]}")
    values = dict(line.split("=", 1) for line in setup.stdout.splitlines() if "=" in line)
    process = subprocess.Popen(
        [values["OIDC_NODE"], str(PROVIDER)],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env={**os.environ, "OIDC_MODULES": values["OIDC_MODULES"], "ACCESS_TTL": "300", **env},
        start_new_session=True,
    )
    try:
        assert process.stdout is not None
        line = _read_line(process, START_TIMEOUT)
        issuer = json.loads(line)["issuer"]
        yield OidcProvider(issuer=issuer, process=process)
    finally:
        with_timeout_kill(process)
        if process.stdout is not None:
            process.stdout.close()


@pytest.fixture(scope="session")
def oidc_provider() -> Iterator[OidcProvider]:
    yield from start_provider()


def _read_line(process: subprocess.Popen[bytes], timeout: float) -> bytes:
    import selectors

    assert process.stdout is not None
    selector = selectors.DefaultSelector()
    selector.register(process.stdout, selectors.EVENT_READ)
    if not selector.select(timeout):
        raise RuntimeError(f"oidc-provider printed nothing within {timeout:g} s")
    line = process.stdout.readline()
    if not line:
        raise RuntimeError(f"oidc-provider exited with {process.wait(5)}")
    return line


def with_timeout_kill(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(5)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(5)


@pytest.fixture
def free_port() -> int:
    """A port that was free a moment ago (the protected server's URL must be known before
    it listens: it is the token audience)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port
