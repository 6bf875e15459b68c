"""`trimcp install` (merge into the host's file, with a backup) and `trimcp dev` (restart
on change)."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
from pathlib import Path

from tests.cli.support import APP, cli, read_line, stop
from trimcp.cli.dev import pinned_port
from trimcp.cli.install import config_path


def test_install_merges_into_the_hosts_file_and_keeps_a_backup(tmp_path: Path) -> None:
    config = tmp_path / "claude_desktop_config.json"
    original = {"mcpServers": {"other": {"command": "x"}}, "theme": "dark"}
    config.write_text(json.dumps(original))
    done = cli("install", "claude", APP, "--config", str(config), "--env", "KEY=v")
    assert done.returncode == 0, done.stderr
    assert f"added server 'app_server' in {config}" in done.stderr
    written = json.loads(config.read_text())
    assert written["theme"] == "dark"
    assert written["mcpServers"]["other"] == {"command": "x"}
    entry = written["mcpServers"]["app_server"]
    assert entry["args"][-1] == str(Path(APP).resolve())
    assert entry["env"] == {"KEY": "v"}
    assert json.loads((tmp_path / "claude_desktop_config.json.bak").read_text()) == original
    again = cli("install", "claude", APP, "--config", str(config))
    assert "replaced server 'app_server'" in again.stderr


def test_install_vscode_and_a_new_file(tmp_path: Path) -> None:
    config = tmp_path / "nested" / "mcp.json"
    done = cli("install", "vscode", APP, "--config", str(config), "--name", "demo")
    assert done.returncode == 0, done.stderr
    written = json.loads(config.read_text())
    assert written["servers"]["demo"]["type"] == "stdio"
    assert not (tmp_path / "nested" / "mcp.json.bak").exists()


def test_install_refuses_a_broken_file_and_leaves_it_alone(tmp_path: Path) -> None:
    config = tmp_path / "mcp.json"
    config.write_text("{not json")
    done = cli("install", "cursor", APP, "--config", str(config))
    assert done.returncode == 1
    assert "is not valid JSON" in done.stderr
    assert config.read_text() == "{not json"


def test_install_keeps_earlier_env_values_when_it_replaces_an_entry(tmp_path: Path) -> None:
    # Fails before: the second install dropped KEY (the entry was replaced whole).
    config = tmp_path / "mcp.json"
    first = cli("install", "cursor", APP, "--config", str(config), "--env", "KEY=v", "--env", "A=1")
    assert first.returncode == 0, first.stderr
    again = cli("install", "cursor", APP, "--config", str(config), "--env", "A=2")
    assert again.returncode == 0, again.stderr
    entry = json.loads(config.read_text())["mcpServers"]["app_server"]
    assert entry["env"] == {"KEY": "v", "A": "2"}


def test_install_refuses_a_server_that_does_not_load(tmp_path: Path) -> None:
    # Fails before: the entry was written, and the host would fail at every start.
    broken = tmp_path / "broken.py"
    broken.write_text("import no_such_module_for_trimcp_install\n")
    config = tmp_path / "mcp.json"
    done = cli("install", "cursor", str(broken), "--config", str(config))
    assert done.returncode == 1
    first, hint = done.stderr.splitlines()
    assert first.startswith("trimcp: the server does not load, so nothing was installed: ")
    assert "no_such_module_for_trimcp_install" in first
    assert hint == f"trimcp: see for yourself: trimcp run {broken} --check"
    assert not config.exists()


def test_install_checks_with_the_entrys_environment(tmp_path: Path) -> None:
    needs = tmp_path / "needs_key.py"
    needs.write_text(
        "import os\n"
        "from trimcp import Server\n"
        "KEY = os.environ['NEEDED_KEY']\n"
        "app = Server('needs-key')\n"
    )
    config = tmp_path / "mcp.json"
    refused = cli("install", "cursor", str(needs), "--config", str(config))
    assert refused.returncode == 1
    assert "NEEDED_KEY" in refused.stderr
    done = cli("install", "cursor", str(needs), "--config", str(config), "--env", "NEEDED_KEY=x")
    assert done.returncode == 0, done.stderr
    # A later install without --env keeps (and checks with) the value given before.
    again = cli("install", "cursor", str(needs), "--config", str(config))
    assert again.returncode == 0, again.stderr


def test_default_config_paths() -> None:
    assert config_path("claude").name == "claude_desktop_config.json"
    assert config_path("cursor").parts[-2:] == (".cursor", "mcp.json")
    assert config_path("vscode").parts[-2:] == (".vscode", "mcp.json")


def test_dev_restarts_the_server_when_a_file_changes(tmp_path: Path) -> None:
    app = tmp_path / "devapp.py"
    app.write_text(
        "from trimcp import Server\napp = Server('dev')\n"
        "@app.tool()\ndef one() -> str:\n    return '1'\n"
    )
    process = subprocess.Popen(
        [sys.executable, "-m", "trimcp", "dev", "--interval", "0.1", str(app), "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert "watching" in read_line(process.stderr)

        def next_url() -> str:
            while True:
                line = read_line(process.stderr)
                found = re.search(r"at (http://127\.0\.0\.1:\d+/mcp)", line)
                if found:
                    return found.group(1)

        url = next_url()
        assert cli("call", "one", "--url", url).stdout == "1\n"
        app.write_text(app.read_text() + "@app.tool()\ndef two() -> str:\n    return '2'\n")
        # --port 0: a port picked once, kept across restarts (before: a new one each time).
        assert next_url() == url
        called = cli("call", "two", "--url", url)
        assert called.stdout == "2\n", called.stderr
        process.send_signal(signal.SIGINT)
        assert stop(process) == 0
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        for stream in (process.stdout, process.stderr):
            if stream is not None:
                stream.close()


def test_dev_pins_port_zero_once_in_either_spelling() -> None:
    for given in (["--port", "0"], ["--port=0"], ["--host", "127.0.0.1", "--port=0"]):
        pinned = pinned_port(["--transport", "http", *given])
        port = int(pinned[pinned.index("--port") + 1])
        assert port > 0, pinned
    assert pinned_port(["--port", "8123"]) == ["--port", "8123"]
    assert pinned_port([]) == []
