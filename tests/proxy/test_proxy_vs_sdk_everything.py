"""The proxy in front of the official SDK's everything server passes the same feature
tests as a direct connection: tests/interop/test_trimcp_client_vs_sdk_everything.py, run
again with the server command wrapped in tests/peers/proxy_peer.py."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

import tests.interop.test_trimcp_client_vs_sdk_everything as direct

PROXY = [sys.executable, str(Path(__file__).resolve().parents[1] / "peers" / "proxy_peer.py"), "--"]


@pytest.fixture(autouse=True)
def _through_the_proxy(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(direct, "SERVER", [*PROXY, *direct.SERVER])


test_handshake_tools_progress_errors_and_logging = (
    direct.test_handshake_tools_progress_errors_and_logging
)
test_sampling_elicitation_and_roots = direct.test_sampling_elicitation_and_roots
test_resources_templates_and_subscriptions = direct.test_resources_templates_and_subscriptions
test_prompts_completion_and_ping = direct.test_prompts_completion_and_ping
