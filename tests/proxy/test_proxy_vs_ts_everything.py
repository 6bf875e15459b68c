"""The proxy in front of the official TypeScript everything server passes the same feature
tests as a direct connection: tests/interop/test_client_vs_ts_everything.py over stdio,
with the server command wrapped in tests/peers/proxy_peer.py (the test that watches the
child's own stdin close is left out: the child is the proxy's)."""

from __future__ import annotations

import sys
from pathlib import Path

import attrs
import pytest

import tests.interop.test_client_vs_ts_everything as direct
from tests.interop.ts_everything.conftest import (
    StdioPeer,
    TsEverything,
    ts_everything_fixture,  # noqa: F401
)

PROXY = [sys.executable, str(Path(__file__).resolve().parents[1] / "peers" / "proxy_peer.py"), "--"]


@attrs.frozen(kw_only=True)
class ProxiedTs(TsEverything):
    def stdio_argv(self) -> list[str]:
        return [*PROXY, *super().stdio_argv()]


@pytest.fixture(name="peer")
def proxied_peer(ts_everything: TsEverything) -> StdioPeer:
    proxied = ProxiedTs(
        node=ts_everything.node, entry=ts_everything.entry, preload=ts_everything.preload
    )
    return StdioPeer(proxied)


test_initialize_and_ping = direct.test_initialize_and_ping
test_older_protocol_versions = direct.test_older_protocol_versions
test_tools = direct.test_tools
test_progress_also_for_concurrent_calls = direct.test_progress_also_for_concurrent_calls
test_logging_and_its_level = direct.test_logging_and_its_level
test_resource_subscriptions = direct.test_resource_subscriptions
test_sampling_elicitation_and_roots = direct.test_sampling_elicitation_and_roots
test_resources_and_templates = direct.test_resources_and_templates
test_prompts_and_completion = direct.test_prompts_and_completion
test_cancel_and_timeout_send_cancelled_and_the_session_goes_on = (
    direct.test_cancel_and_timeout_send_cancelled_and_the_session_goes_on
)
test_clean_close = direct.test_clean_close
