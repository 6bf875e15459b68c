"""`trimcp config` prints a host's launch snippet; `trimcp bench` needs a checkout."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from tests.cli.support import APP, ROOT, cli


@pytest.mark.parametrize("host", ["claude", "cursor"])
def test_claude_and_cursor_use_mcp_servers(host: str) -> None:
    completed = cli("config", host, "tests/cli/app_server.py")
    assert completed.returncode == 0, completed.stderr
    assert json.loads(completed.stdout) == {
        "mcpServers": {
            "app_server": {
                "command": sys.executable,
                "args": ["-m", "trimcp", "run", APP],
            }
        }
    }


def test_vscode_uses_servers_with_a_type_and_takes_name_and_env() -> None:
    completed = cli(
        "config", "vscode", f"{APP}:app", "--name", "memo", "--env", "TOKEN=abc", "--env", "N=1"
    )
    assert completed.returncode == 0, completed.stderr
    assert json.loads(completed.stdout) == {
        "servers": {
            "memo": {
                "type": "stdio",
                "command": sys.executable,
                "args": ["-m", "trimcp", "run", f"{APP}:app"],
                "env": {"TOKEN": "abc", "N": "1"},
            }
        }
    }
    assert "VS Code" in completed.stderr


def test_config_of_a_missing_file_fails() -> None:
    completed = cli("config", "claude", "nowhere/server.py")
    assert completed.returncode == 1
    assert completed.stderr.startswith("trimcp: no such file: ")
    assert cli("config", "emacs", APP).returncode == 2


def test_bench_runs_the_suite_from_a_checkout() -> None:
    completed = cli("bench", "--list", cwd=ROOT)
    assert completed.returncode == 0, completed.stderr
    assert "workload" in completed.stdout


def test_bench_outside_a_checkout_says_where_the_suite_is(tmp_path: Path) -> None:
    # The child imports this checkout's trimcp and nothing else from it, whatever the
    # caller's PYTHONPATH: one holding a checkout (the usual way to test a worktree) would
    # make that checkout's ``benchmarks`` importable, and the suite would be found.
    only_trimcp = tmp_path / "path"
    only_trimcp.mkdir()
    (only_trimcp / "trimcp").symlink_to(ROOT / "trimcp", target_is_directory=True)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    completed = cli("bench", "--list", cwd=elsewhere, env={"PYTHONPATH": str(only_trimcp)})
    assert completed.returncode == 1
    assert "the benchmark suite is not installed" in completed.stderr
    assert "from a trimcp checkout" in completed.stderr
