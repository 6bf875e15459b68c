"""Ctrl-C during `trimcp call`: the call is cancelled on the server and the CLI exits 130."""

from __future__ import annotations

import signal
import sys
from pathlib import Path

from tests.cli.support import PEER_ARGV, spawn, stop, wait_for


def log_lines(path: Path) -> list[str]:
    return path.read_text().splitlines() if path.exists() else []


def test_sigint_cancels_the_call_on_the_server(tmp_path: Path) -> None:
    log = tmp_path / "peer.log"
    cli = spawn("call", "slow", "seconds=600", *PEER_ARGV, env={"TRIMCP_PEER_LOG": str(log)})
    try:
        started = wait_for(
            lambda: [line for line in log_lines(log) if line.startswith("started ")],
            "the server to start the slow call",
        )
        request_id = started[0].split()[1]
        cli.send_signal(signal.SIGINT)
        # Bounded: the cancel notification, the session close and the child's shutdown
        # ladder are each bounded (about 11 s in all, at worst).
        assert stop(cli, timeout=30) == 130
        assert f"cancelled {request_id}" in log_lines(log)
        assert f"finished {request_id}" not in log_lines(log)
        assert cli.stderr is not None
        stderr = cli.stderr.read()
        assert "progress 0/1 (0%) started" in stderr
        assert "trimcp: interrupted; cancelling" in stderr
        assert "Traceback" not in stderr
        assert cli.stdout is not None
        assert cli.stdout.read() == ""
    finally:
        if cli.poll() is None:
            cli.kill()
            cli.wait()
        for stream in (cli.stdout, cli.stderr):
            if stream is not None:
                stream.close()


def test_the_server_runs_in_its_own_process_group(tmp_path: Path) -> None:
    # A terminal's Ctrl-C goes to the foreground process group: the child must not be in
    # it, or it would die of SIGINT instead of seeing notifications/cancelled.
    probe = tmp_path / "pgid"
    script = (
        "import os, sys, pathlib; "
        f"pathlib.Path({str(probe)!r}).write_text(f'{{os.getpgid(0)}} {{os.getppid()}}'); "
        "sys.stdin.read()"
    )
    cli = spawn("ping", "--timeout", "600", "--", sys.executable, "-c", script)
    try:
        pgid, parent = map(
            int, wait_for(lambda: probe.exists() and probe.read_text(), "the probe").split()
        )
        assert parent == cli.pid  # exec kept the wrapper's pid: the CLI's own child
        assert pgid != cli.pid
        import os

        assert pgid != os.getpgid(cli.pid)
        cli.send_signal(signal.SIGINT)
        assert stop(cli) == 130
    finally:
        if cli.poll() is None:
            cli.kill()
            cli.wait()
        for stream in (cli.stdout, cli.stderr):
            if stream is not None:
                stream.close()
