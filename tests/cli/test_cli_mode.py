"""`--mode` picks the protocol era; the negotiated version and era are shown."""

from __future__ import annotations

import json
import sys

from tests.cli.support import PEER_ARGV, ROOT, cli, cli_json


def test_ping_json_names_the_version_and_the_era() -> None:
    answer = cli_json("ping", "--json", *PEER_ARGV)
    assert answer["era"] in ("legacy", "modern")
    assert answer["protocolVersion"] == (
        "2026-07-28" if answer["era"] == "modern" else "2025-11-25"
    )


def test_legacy_mode_sends_initialize_first_and_verbose_shows_the_agreement() -> None:
    completed = cli("ping", "--mode", "legacy", "--verbose", *PEER_ARGV)
    assert completed.returncode == 0, completed.stderr
    sent = [
        json.loads(line[3:]) for line in completed.stderr.splitlines() if line.startswith("-> ")
    ]
    assert sent[0]["method"] == "initialize"
    assert "protocol 2025-11-25 (legacy)" in completed.stderr
    assert "(protocol 2025-11-25, legacy)" in completed.stdout


def test_pinned_older_version_is_offered() -> None:
    answer = cli_json("ping", "--json", "--mode", "2025-06-18", *PEER_ARGV)
    assert answer["protocolVersion"] == "2025-06-18"
    assert answer["era"] == "legacy"


def test_an_unknown_mode_is_a_usage_error() -> None:
    completed = cli("ping", "--mode", "2020-01-01", *PEER_ARGV)
    assert completed.returncode == 2
    assert "mode '2020-01-01' is not one of" in completed.stderr


def test_call_in_auto_mode_shows_the_servers_log_lines_unless_quiet() -> None:
    # 2026: log messages come only when a request asks for them (its logLevel).
    server = ["--", sys.executable, str(ROOT / "examples" / "everything_server.py")]
    completed = cli("call", "test_tool_with_logging", *server)
    assert completed.returncode == 0, completed.stderr
    assert "[server info] Tool execution started" in completed.stderr
    assert "Tool with logging executed successfully" in completed.stdout
    quiet = cli("call", "--quiet", "test_tool_with_logging", *server)
    assert quiet.returncode == 0, quiet.stderr
    assert "[server" not in quiet.stderr
