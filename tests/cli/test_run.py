"""`trimcp run`: a trimcp.Server (or LowLevelServer) over stdio, HTTP and WebSocket."""

from __future__ import annotations

import re
import signal
import sys
from pathlib import Path

import pytest

from tests.cli.support import APP, PEER, cli, read_line, reap, spawn, stop
from trimcp.server.serving import is_loopback_host


def test_run_finds_a_low_level_server_too() -> None:
    completed = cli("call", "echo", "text=hi", "--", sys.executable, "-m", "trimcp", "run", PEER)
    assert (completed.returncode, completed.stdout) == (0, "hi\n"), completed.stderr


def test_run_accepts_file_colon_attribute_and_module_colon_attribute() -> None:
    by_file = cli("ping", "--", sys.executable, "-m", "trimcp", "run", f"{APP}:app")
    assert "cli-test-app 3.1" in by_file.stdout, by_file.stderr
    by_module = cli("ping", "--", sys.executable, "-m", "trimcp", "run", "tests.cli.app_server:app")
    assert "cli-test-app 3.1" in by_module.stdout, by_module.stderr


def test_the_stdio_startup_line_goes_to_stderr() -> None:
    completed = cli("ping", "--verbose", "--", sys.executable, "-m", "trimcp", "run", APP)
    assert completed.returncode == 0, completed.stderr
    assert "[server] trimcp: serving 'cli-test-app' 3.1 over stdio" in completed.stderr


@pytest.mark.parametrize(
    ("target", "message"),
    [
        ("tests/cli/no_such_file.py", "trimcp: no such file: "),
        ("tests/cli/support.py", "trimcp: no trimcp.Server, LowLevelServer or ProxyServer found"),
        (f"{APP}:nothing", "the module has no attribute 'nothing'"),
        (f"{APP}:today", "is a RegisteredResource, not a trimcp.Server"),
        ("no_such_module_trimcp:app", "trimcp: no module named 'no_such_module_trimcp'"),
    ],
)
def test_a_bad_target_is_one_clear_line(target: str, message: str) -> None:
    completed = cli("run", target)
    assert completed.returncode == 1
    assert message in completed.stderr
    assert "Traceback" not in completed.stderr


@pytest.mark.parametrize(
    ("transport", "scheme", "stop_signal"),
    [("http", "http", signal.SIGINT), ("ws", "ws", signal.SIGTERM)],
)
def test_run_over_the_network_then_stop_with_a_signal(
    transport: str, scheme: str, stop_signal: signal.Signals
) -> None:
    server = spawn("run", APP, "--transport", transport, "--port", "0")
    try:
        line = read_line(server.stderr)
        found = re.search(rf"at ({scheme}://127\.0\.0\.1:\d+/mcp) \(Ctrl-C to stop\)", line)
        assert found, line
        url = found.group(1)
        called = cli("call", "greet", "name=Ann", "excited=true", "--url", url)
        assert (called.returncode, called.stdout) == (0, "Hello, Ann!\n"), called.stderr
        assert "progress 1/2 (50%) warming up" in called.stderr
        server.send_signal(stop_signal)
        assert stop(server) == 0
        assert server.stderr is not None
        rest = server.stderr.read()
        stopping = rest[rest.index(f"trimcp: {stop_signal.name}: stopping") :]
        assert len(stopping.splitlines()) == 1, rest  # a clean stop prints one line
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()
        for stream in (server.stdout, server.stderr):
            if stream is not None:
                stream.close()


@pytest.mark.parametrize("transport", ["http", "ws"])
def test_a_public_address_names_the_allow_host_flag(transport: str) -> None:
    completed = cli("run", APP, "--transport", transport, "--host", "0.0.0.0", "--port", "0")
    assert completed.returncode == 2
    assert completed.stderr.startswith("trimcp: --host 0.0.0.0 is not a loopback address")
    assert "add --allow-host NAME" in completed.stderr
    assert "config.allowed_hosts" not in completed.stderr  # the library's name, not the flag's


def test_a_print_while_importing_the_target_does_not_corrupt_stdio(tmp_path: Path) -> None:
    noisy = tmp_path / "noisy_app.py"
    noisy.write_text(
        "print('hello from import')\n"
        "from trimcp import Server\n"
        "app = Server('noisy')\n"
        "@app.tool()\n"
        "def ping_tool() -> str:\n"
        "    return 'pong'\n"
    )
    completed = cli(
        "call", "ping_tool", "--verbose", "--", sys.executable, "-m", "trimcp", "run", str(noisy)
    )
    assert completed.returncode == 0, completed.stderr
    assert completed.stdout == "pong\n"
    assert "[server] hello from import" in completed.stderr


def test_a_bad_target_hint_names_the_file_given() -> None:
    completed = cli("run", "tests/cli/support.py")
    assert "tests/cli/support.py:NAME" in completed.stderr
    assert "path/to/server.py" not in completed.stderr  # was a placeholder path


@pytest.mark.parametrize("ending", ["", "proxy.run()\n"])
def test_run_finds_a_proxy_server(tmp_path: Path, ending: str) -> None:
    # Fails before: "no trimcp.Server or LowLevelServer found" (and with a bare
    # proxy.run() the import itself started serving).
    proxy = tmp_path / "proxy.py"
    proxy.write_text(
        "import sys\n"
        "from trimcp.proxy import ProxyServer\n"
        f"proxy = ProxyServer.for_command([sys.executable, '-m', 'trimcp', 'run', {APP!r}])\n"
        + ending
    )
    argv = ["--", sys.executable, "-m", "trimcp", "run", str(proxy)]
    completed = cli("call", "greet", "name=Ann", "excited=true", *argv)
    assert (completed.returncode, completed.stdout) == (0, "Hello, Ann!\n"), completed.stderr


@pytest.mark.parametrize(("transport", "scheme"), [("http", "http"), ("ws", "ws")])
def test_any_loopback_address_is_loopback(transport: str, scheme: str) -> None:
    # Fails before: "--host 127.0.0.2 is not a loopback address".
    server = spawn("run", APP, "--transport", transport, "--host", "127.0.0.2", "--port", "0")
    try:
        line = read_line(server.stderr)
        found = re.search(rf"at ({scheme}://127\.0\.0\.2:\d+/mcp) \(Ctrl-C to stop\)", line)
        assert found, line
        # Clients send Host: 127.0.0.2, which the server answers without --allow-host.
        called = cli("call", "greet", "name=Ann", "--url", found.group(1))
        assert (called.returncode, called.stdout) == (0, "Hello, Ann.\n"), called.stderr
        server.send_signal(signal.SIGTERM)
        assert stop(server) == 0
    finally:
        reap(server)


def test_loopback_hosts() -> None:
    for host in ("localhost", "127.0.0.1", "127.0.0.2", "127.255.0.9", "::1", "[::1]"):
        assert is_loopback_host(host), host
    for host in ("0.0.0.0", "10.0.0.1", "::", "example.com", "128.0.0.1"):
        assert not is_loopback_host(host), host
