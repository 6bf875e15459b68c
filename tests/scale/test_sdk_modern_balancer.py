"""The official SDK client in 2026-07-28 uses every feature through nginx.

Three ``trimcp run examples/everything_server.py --store redis://...`` replicas behind
nginx (round-robin, no stickiness); ``tests/peers/sdk_modern_client.py`` (PyPI ``mcp``,
``mode="auto"``, importing nothing from trimcp) negotiates 2026-07-28 through the balancer
and runs every feature: its requests spread over the replicas, so input rounds are
retried on replicas other than the one that asked (the sealed ``requestState`` opens
there: the keyring is shared through Redis), and its ``subscriptions/listen`` stream hears
a tools list change raised by a call another replica ran. The report is checked with the
same checks as the one-server interop test (tests/interop/test_sdk_modern_client.py).
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest

from tests.interop import test_sdk_modern_client as checks
from tests.scale.peers import ROOT, Nginx, RedisServer, Replica

CHECKS = sorted(name for name in dir(checks) if name.startswith("test_"))


@pytest.fixture(scope="module")
def report(
    scale_tools: dict[str, str],
    redis_server: RedisServer,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[dict[str, Any]]:
    replicas: list[Replica] = []
    nginx: Nginx | None = None
    try:
        replicas = [
            Replica(redis_server.url, app=ROOT / "examples" / "everything_server.py")
            for _ in range(3)
        ]
        nginx = Nginx(
            scale_tools["SCALE_NGINX"], tmp_path_factory.mktemp("nginx"), [r.port for r in replicas]
        )
        done = subprocess.run(
            [sys.executable, str(checks.PEER), "--url", nginx.url],
            capture_output=True,
            text=True,
            timeout=checks.TIMEOUT,
            check=False,
        )
        logs = "\n".join(f"--- replica {r.port}:\n{r.output()[-2000:]}" for r in replicas)
        assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:] + logs
        found: dict[str, Any] = json.loads(done.stdout)
        found["transport"] = "http"
        yield found
    finally:
        if nginx is not None:
            nginx.stop()
        for replica in replicas:
            replica.stop()


def test_every_check_of_the_interop_test_runs_here() -> None:
    assert len(CHECKS) >= 6


@pytest.mark.parametrize("check", CHECKS)
def test_the_sdk_2026_client_through_the_balancer(report: dict[str, Any], check: str) -> None:
    getattr(checks, check)(report)
