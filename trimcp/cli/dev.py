"""``trimcp dev TARGET [run flags]``: serve with ``trimcp run`` and restart it whenever a
Python file next to the target changes (development only).

The server runs as a child process (``python -m trimcp run TARGET ...``, HTTP unless a
``--transport`` is given: a stdio client cannot follow a restart). Every ``interval``
seconds the ``*.py`` files under the target's directory are checked (modification times;
no extra dependency); on a change the child is stopped (SIGTERM, then SIGKILL after
``STOP_TIMEOUT``) and started again, its startup line naming the new address. Ctrl-C or
SIGTERM stops the child and ``trimcp dev`` (exit 0). A child that exits by itself (an
error in the code) is started again at the next change. ``--port 0`` picks a free port
once, here, and every restart listens on it: a client keeps its URL.
"""

from __future__ import annotations

import argparse
import functools
import os
import signal
import socket
import sys
from pathlib import Path

import trio

from trimcp._signals import run_until_interrupted
from trimcp.cli.errors import EXIT_OK, CliError
from trimcp.cli.loader import parse_target

STOP_TIMEOUT = 5.0
#: Files watched at most (a huge tree is a mistake: point dev at a project, not at /).
MAX_FILES = 5000


def _say(line: str) -> None:
    sys.stderr.write(f"trimcp: {line}\n")
    sys.stderr.flush()


def snapshot(root: Path) -> dict[Path, float]:
    """Modification time of every ``*.py`` file under ``root`` (hidden and venv dirs skipped)."""
    found: dict[Path, float] = {}
    for directory, subdirs, files in os.walk(root):
        subdirs[:] = [
            d
            for d in subdirs
            if not d.startswith(".") and d not in ("__pycache__", "node_modules", "venv")
        ]
        for file in files:
            if file.endswith(".py"):
                path = Path(directory) / file
                try:
                    found[path] = path.stat().st_mtime
                except OSError:
                    continue
                if len(found) >= MAX_FILES:
                    return found
    return found


def pinned_port(run_args: list[str]) -> list[str]:
    """``run_args`` with ``--port 0`` replaced by a port free now (on ``--host``, default
    127.0.0.1), so that every restart listens on the same one. Another process could take
    it between two restarts: then that start fails and says so, as any busy port does."""
    args = list(run_args)
    host = "127.0.0.1"
    for index, arg in enumerate(args):
        if arg == "--host" and index + 1 < len(args):
            host = args[index + 1]
        elif arg.startswith("--host="):
            host = arg.split("=", 1)[1]
    for index, arg in enumerate(args):
        if arg == "--port" and index + 1 < len(args) and args[index + 1] == "0":
            value = index + 1
        elif arg == "--port=0":
            args[index : index + 1] = ["--port", "0"]
            value = index + 1
        else:
            continue
        try:
            family = socket.AF_INET6 if ":" in host else socket.AF_INET
            with socket.socket(family) as probe:
                probe.bind((host.strip("[]"), 0))
                args[value] = str(probe.getsockname()[1])
        except OSError:
            pass  # the child says what is wrong with the host
        break
    return args


async def _stop(process: trio.Process) -> None:
    if process.returncode is not None:
        return
    process.send_signal(signal.SIGTERM)
    with trio.move_on_after(STOP_TIMEOUT):
        await process.wait()
        return
    process.kill()
    await process.wait()


async def supervise(argv: list[str], root: Path, interval: float) -> int:
    """Run ``argv``, restarting it on changes under ``root``, until cancelled."""
    seen = snapshot(root)
    while True:
        process = await trio.lowlevel.open_process(argv)
        try:
            while True:
                await trio.sleep(interval)
                now = snapshot(root)
                if now != seen:
                    changed = sorted(
                        {
                            *now.keys() ^ seen.keys(),
                            *(p for p in now if p in seen and now[p] != seen[p]),
                        }
                    )
                    seen = now
                    names = ", ".join(str(p.relative_to(root)) for p in changed[:3])
                    _say(f"{names}{' ...' if len(changed) > 3 else ''} changed: restarting")
                    break
        finally:
            with trio.CancelScope(shield=True):
                await _stop(process)


def run_dev(args: argparse.Namespace) -> int:
    target = parse_target(args.target)
    if target.file is None:
        raise CliError("trimcp dev watches a file: give path/to/server.py[:app]")
    if not target.file.is_file():
        raise CliError(f"no such file: {target.file}")
    run_args: list[str] = list(args.run_args)
    if not any(a == "--transport" or a.startswith("--transport=") for a in run_args):
        run_args = ["--transport", "http", *run_args]
    argv = [sys.executable, "-m", "trimcp", "run", args.target, *pinned_port(run_args)]
    root = target.file.parent
    _say(f"watching {root} for changes (Ctrl-C to stop)")

    async def work() -> int:
        await supervise(argv, root, args.interval)
        return EXIT_OK

    signals = [signal.SIGINT] + ([signal.SIGTERM] if hasattr(signal, "SIGTERM") else [])
    trio.run(functools.partial(run_until_interrupted, work, signals=signals))
    return EXIT_OK
