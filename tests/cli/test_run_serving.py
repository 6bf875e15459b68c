"""Serving for real: `trimcp run` flags and TRIMCP_* settings, files that call app.run()
themselves, several servers in one file, and Server.run(transport=...) with its startup
line, signals and lifespan failures."""

from __future__ import annotations

import re
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from tests.cli.support import RUN_TIMEOUT, cli, read_line, stop
from trimcp.server.serving import ServeSettings, startup_error
from trimcp.transports.http_server import HttpServerConfig
from trimcp.transports.http_server.manager import unclosed

TOOL = (
    "from trimcp import Server\n"
    "app = Server('selfrun', version='2.0')\n"
    "@app.tool()\n"
    "def hello() -> str:\n"
    "    return 'hi'\n"
)


def _write(tmp_path: Path, name: str, text: str) -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def _spawn(argv: list[str], env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    import os

    return subprocess.Popen(
        argv,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
        env={**os.environ, **(env or {})},
    )


def _url(process: subprocess.Popen[str], scheme: str = "http") -> str:
    line = read_line(process.stderr)
    found = re.search(rf"at ({scheme}://127\.0\.0\.1:\d+/\S*) \(Ctrl-C to stop\)", line)
    assert found, line
    return found.group(1)


def _finish(process: subprocess.Popen[str]) -> str:
    try:
        assert stop(process) == 0
        assert process.stderr is not None
        return process.stderr.read()
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        for stream in (process.stdout, process.stderr):
            if stream is not None:
                stream.close()


def test_run_serves_a_file_that_ends_in_a_bare_app_run(tmp_path: Path) -> None:
    target = _write(tmp_path, "selfrun.py", TOOL + "app.run()\n")
    completed = cli("call", "hello", "--", sys.executable, "-m", "trimcp", "run", target)
    assert (completed.returncode, completed.stdout) == (0, "hi\n"), completed.stderr


def test_the_files_own_run_arguments_are_defaults_flags_win(tmp_path: Path) -> None:
    target = _write(tmp_path, "selfhttp.py", TOOL + "app.run(transport='http', port=0)\n")
    server = _spawn([sys.executable, "-m", "trimcp", "run", target, "--path", "/api"])
    url = _url(server)
    assert url.endswith("/api")
    called = cli("call", "hello", "--url", url)
    assert (called.returncode, called.stdout) == (0, "hi\n"), called.stderr
    server.send_signal(signal.SIGINT)
    rest = _finish(server)
    assert "Traceback" not in rest


def test_two_servers_in_one_file_is_an_error_naming_both(tmp_path: Path) -> None:
    target = _write(
        tmp_path,
        "two.py",
        "from trimcp import Server\napp = Server('a')\nadmin = Server('b')\n",
    )
    completed = cli("run", target)
    assert completed.returncode == 1
    assert "defines 2 servers (app, admin)" in completed.stderr
    assert f"trimcp run {target}:app" in completed.stderr
    # The one that runs itself is the one meant.
    chosen = _write(tmp_path, "two_run.py", TOOL + "other = Server('other')\napp.run()\n")
    completed = cli("call", "hello", "--", sys.executable, "-m", "trimcp", "run", chosen)
    assert (completed.returncode, completed.stdout) == (0, "hi\n"), completed.stderr


def test_settings_from_the_environment(tmp_path: Path) -> None:
    target = _write(tmp_path, "envapp.py", TOOL)
    env = {
        "TRIMCP_TRANSPORT": "http",
        "TRIMCP_PORT": "0",
        "TRIMCP_PATH": "/env",
        "TRIMCP_JSON_RESPONSE": "true",
        "TRIMCP_STATELESS": "1",
        "TRIMCP_LOG_LEVEL": "info",
    }
    server = _spawn([sys.executable, "-m", "trimcp", "run", target], env)
    url = _url(server)
    assert url.endswith("/env")
    called = cli("call", "hello", "--url", url)
    assert (called.returncode, called.stdout) == (0, "hi\n"), called.stderr
    server.send_signal(signal.SIGTERM)
    _finish(server)


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"TRIMCP_PORT": "eighty"}, "TRIMCP_PORT must be a port number, got 'eighty'"),
        ({"TRIMCP_TRANSPORT": "carrier-pigeon"}, "unknown transport 'carrier-pigeon'"),
        ({"TRIMCP_STATELESS": "maybe"}, "TRIMCP_STATELESS must be true or false"),
    ],
)
def test_a_bad_setting_is_one_clear_line(tmp_path: Path, env: dict[str, str], message: str) -> None:
    target = _write(tmp_path, "bad.py", TOOL)
    completed = cli("run", target, env=env)
    assert completed.returncode == 1
    assert message in completed.stderr
    assert "Traceback" not in completed.stderr


@pytest.mark.parametrize("stop_signal", [signal.SIGINT, signal.SIGTERM])
def test_server_run_http_names_the_bound_url_and_stops_cleanly(
    tmp_path: Path, stop_signal: signal.Signals
) -> None:
    script = _write(tmp_path, "serve_http.py", TOOL + "app.run(transport='http', port=0)\n")
    server = _spawn([sys.executable, script])
    url = _url(server)
    called = cli("call", "hello", "--url", url)
    assert (called.returncode, called.stdout) == (0, "hi\n"), called.stderr
    server.send_signal(stop_signal)
    rest = _finish(server)
    # How long a graceful stop may take, and how to cut it short: the bound the sessions
    # get, the one a warning names when some did not close (it said 15 s, then 12 s).
    bound = HttpServerConfig().shutdown_bound
    assert (
        f"trimcp: {stop_signal.name}: stopping; open sessions get up to {bound:g} s to "
        "finish (Ctrl-C again stops at once)\n"
    ) in rest
    assert f"({bound:g} s)" in unclosed(1, bound)
    assert "Traceback" not in rest


def test_server_run_websocket(tmp_path: Path) -> None:
    script = _write(tmp_path, "serve_ws.py", TOOL + "app.run(transport='websocket', port=0)\n")
    server = _spawn([sys.executable, script])
    url = _url(server, "ws")
    called = cli("call", "hello", "--url", url)
    assert (called.returncode, called.stdout) == (0, "hi\n"), called.stderr
    server.send_signal(signal.SIGINT)
    assert "Traceback" not in _finish(server)


@pytest.mark.parametrize("how", ["script", "trimcp run"])
def test_a_failing_lifespan_is_one_line_and_exit_1(tmp_path: Path, how: str) -> None:
    script = _write(
        tmp_path,
        "broken.py",
        "from contextlib import asynccontextmanager\n"
        "from trimcp import Server\n"
        "@asynccontextmanager\n"
        "async def lifespan(app):\n"
        "    raise ConnectionRefusedError('database at 127.0.0.1:5432 refused')\n"
        "    yield\n"
        "app = Server('broken', lifespan=lifespan)\n"
        "if __name__ == '__main__':\n"
        "    app.run(transport='http', port=0)\n",
    )
    argv = (
        [sys.executable, script]
        if how == "script"
        else [sys.executable, "-m", "trimcp", "run", script, "--transport", "http", "--port", "0"]
    )
    completed = subprocess.run(
        argv,
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT,
        check=False,
        stdin=subprocess.DEVNULL,
    )
    assert completed.returncode == 1
    assert (
        "trimcp: the lifespan of server 'broken' failed while starting: "
        "ConnectionRefusedError: database at 127.0.0.1:5432 refused"
    ) in completed.stderr
    assert "Traceback" not in completed.stderr
    assert "serving" not in completed.stderr  # nothing was bound


def test_server_run_websocket_applies_allowed_origins(tmp_path: Path) -> None:
    script = _write(
        tmp_path,
        "serve_ws_origins.py",
        TOOL + "app.run(transport='websocket', port=0, allowed_origins=['https://app.example'])\n",
    )
    server = _spawn([sys.executable, script])
    url = _url(server, "ws")
    probe = (
        "import sys, trio, trio_websocket\n"
        "from trimcp.transports.websocket import open_websocket_client_transport\n"
        "async def main(origin):\n"
        "    try:\n"
        "        async with open_websocket_client_transport(sys.argv[1], "
        "headers=[('Origin', origin)]):\n"
        "            return 'open'\n"
        "    except trio_websocket.ConnectionRejected as exc:\n"
        "        return str(exc.status_code)\n"
        "print(trio.run(main, 'https://app.example'), trio.run(main, 'http://localhost:1'))\n"
    )
    try:
        done = subprocess.run(
            [sys.executable, "-c", probe, url],
            capture_output=True,
            text=True,
            timeout=RUN_TIMEOUT,
            check=False,
        )
        assert done.stdout.split() == ["open", "403"], done.stderr
    finally:
        server.send_signal(signal.SIGINT)
        _finish(server)


def test_server_run_and_trimcp_run_fail_to_start_with_the_same_few_lines(tmp_path: Path) -> None:
    # app.run() on a busy port printed a 59-line traceback; trimcp run printed two lines.
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        script = _write(tmp_path, "busy.py", TOOL + f"app.run(transport='http', port={port})\n")
        by_script = subprocess.run(
            [sys.executable, script], capture_output=True, text=True, timeout=RUN_TIMEOUT
        )
        by_cli = cli("run", script, "--transport", "http", "--port", str(port))
    for completed in (by_script, by_cli):
        assert completed.returncode == 1
        assert completed.stderr == (
            f"trimcp: cannot listen on 127.0.0.1:{port}: Address already in use\n"
            "trimcp: another process listens there: stop it, or pick another port "
            "(0 picks a free one)\n"
        )
    # A host that is not an address of this machine (TEST-NET-1, never local).
    far = _write(
        tmp_path,
        "far.py",
        TOOL + "app.run(transport='http', host='192.0.2.1', port=0, allowed_hosts=['*'])\n",
    )
    completed = subprocess.run(
        [sys.executable, far], capture_output=True, text=True, timeout=RUN_TIMEOUT
    )
    assert completed.returncode == 1
    assert completed.stderr.splitlines() == [
        "trimcp: cannot listen on 192.0.2.1:0: Cannot assign requested address",
        "trimcp: the host must be an address of this machine (default 127.0.0.1)",
    ]


def test_a_missing_extra_names_what_to_install() -> None:
    settings = ServeSettings.from_env({}, transport="http", store="redis://127.0.0.1:1/0")
    missing = ModuleNotFoundError("No module named 'hiredis'", name="hiredis")
    failed = startup_error(missing, settings)
    assert failed is not None
    assert (str(failed), failed.hint) == (
        "cannot serve: the module 'hiredis' is not installed",
        "pip install 'trimcp[redis]'",
    )
    assert startup_error(RuntimeError("a bug"), settings) is None


def test_trimcps_warnings_are_prefixed_when_logging_is_not_configured() -> None:
    completed = subprocess.run(
        [
            sys.executable,
            "-c",
            "import logging\n"
            "from trimcp.server.serving import configure_logging\n"
            "configure_logging(None)\n"
            "logging.getLogger('trimcp.http').warning('%d sessions did not close', 2)\n"
            "logging.getLogger('trimcp.http').info('not shown')\n",
        ],
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT,
    )
    assert completed.stderr == "trimcp: 2 sessions did not close\n"


@pytest.mark.parametrize("how", ["trimcp run", "app.run"])
def test_log_level_info_logs_one_prefixed_line_per_request(tmp_path: Path, how: str) -> None:
    if how == "app.run":
        script = _write(tmp_path, "logs.py", TOOL + "app.run('http', port=0, log_level='info')\n")
        server = _spawn([sys.executable, script])
    else:
        script = _write(tmp_path, "logs.py", TOOL)
        argv = ["run", script, "--transport", "http", "--port", "0", "--log-level", "info"]
        server = _spawn([sys.executable, "-m", "trimcp", *argv])
    url = _url(server)
    # A 2025-11-25 session: its id is what ties a request's line to the session.
    called = cli("call", "hello", "--url", url, "--mode", "2025-11-25")
    assert (called.returncode, called.stdout) == (0, "hi\n"), called.stderr
    server.send_signal(signal.SIGTERM)
    lines = _finish(server).splitlines()
    assert all(line.startswith("trimcp: ") for line in lines), lines
    calls = [line for line in lines if "trimcp.requests: tools/call" in line]
    assert len(calls) == 1, lines
    # Method, name, outcome, duration, and the HTTP session (its first 8 characters).
    found = re.search(
        r" INFO trimcp\.requests: tools/call hello ok \d+\.\d ms session=(\S{8})$", calls[0]
    )
    assert found, calls
    session = found.group(1)
    assert any("trimcp.requests: initialize ok" in line for line in lines), lines
    assert all(f"session={session}" in line for line in lines if "trimcp.requests:" in line)
