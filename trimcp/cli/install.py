"""``trimcp install HOST TARGET``: add a server to an MCP host's configuration file.

The entry is the one ``trimcp config`` prints (this interpreter running ``-m trimcp run``
on the absolute target). The file is read, the entry added or replaced under its name
(other servers and settings kept), the previous file copied to ``<file>.bak`` first, and
the new one written atomically (a temporary file renamed over it). Before anything is
written, the entry's own command checks that the server loads (``trimcp run --check`` in
a child process, with the entry's environment): a host would otherwise show a server
that fails at every start. Replacing an entry keeps the ``env`` values it had, unless
``--env`` gives new ones for the same names.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from trimcp.cli.arguments import parse_pairs
from trimcp.cli.errors import EXIT_OK, CliError
from trimcp.cli.hosts import launch_args, snippet

#: Bound of the child process that checks the server loads.
CHECK_TIMEOUT = 60.0


def config_path(host: str, *, project: bool = False) -> Path:
    """Where ``host`` reads its MCP servers (``project``: the project's own file)."""
    home = Path.home()
    if host == "claude":
        if sys.platform == "darwin":
            return (
                home / "Library" / "Application Support" / "Claude" / "claude_desktop_config.json"
            )
        if sys.platform == "win32":
            return Path(os.environ.get("APPDATA", home)) / "Claude" / "claude_desktop_config.json"
        return home / ".config" / "Claude" / "claude_desktop_config.json"
    if host == "cursor":
        return Path.cwd() / ".cursor" / "mcp.json" if project else home / ".cursor" / "mcp.json"
    return Path.cwd() / ".vscode" / "mcp.json"


def merged(existing: Any, entry: dict[str, Any], path: Path) -> tuple[dict[str, Any], str, bool]:
    """``existing`` with ``entry``'s one server added; (result, its name, replaced?)."""
    if not isinstance(existing, dict):
        raise CliError(f"{path} does not hold a JSON object; fix or move it, then try again")
    [(section, servers)] = entry.items()
    [(name, server)] = servers.items()
    current = existing.get(section, {})
    if not isinstance(current, dict):
        raise CliError(f"{path}: {section!r} is not a JSON object; fix it, then try again")
    replaced = name in current
    before = current.get(name)
    kept = before.get("env") if isinstance(before, dict) else None
    if isinstance(kept, dict) and kept:  # values given before stay unless given anew
        server = {**server, "env": {**kept, **server.get("env", {})}}
    return {**existing, section: {**current, name: server}}, name, replaced


def check_loads(target: str, env: dict[str, str]) -> None:
    """Run the entry's command with ``--check`` (import the target, find its server, do
    not serve) in a child process with ``env``; CliError with its lines if it fails.
    Bounded by ``CHECK_TIMEOUT``."""
    args, _ = launch_args(target)
    command = [sys.executable, *args, "--check"]
    try:
        done = subprocess.run(
            command,
            capture_output=True,
            text=True,
            stdin=subprocess.DEVNULL,
            timeout=CHECK_TIMEOUT,
            env={**os.environ, **env},
            check=False,
        )
    except subprocess.TimeoutExpired:
        raise CliError(
            f"importing {target} took over {CHECK_TIMEOUT:g} s: nothing installed",
            hint="does the module do work at import time (a network call, input())?",
        ) from None
    if done.returncode != 0:
        lines = [line.removeprefix("trimcp: ") for line in done.stderr.strip().splitlines()]
        why = "; ".join(lines[-3:]) or f"exit status {done.returncode}"
        raise CliError(
            f"the server does not load, so nothing was installed: {why}",
            hint=f"see for yourself: trimcp run {args[-1]} --check",
        )


def install(
    host: str, target: str, *, path: Path, name: str | None, env: dict[str, str]
) -> tuple[str, bool, Path | None]:
    """Write the entry into ``path``; returns (server name, replaced?, backup or None)."""
    entry = snippet(host, target, name=name, env=env)
    existing: Any = {}
    text = path.read_text(encoding="utf-8") if path.exists() else ""
    if text.strip():
        try:
            existing = json.loads(text)
        except json.JSONDecodeError as exc:
            raise CliError(
                f"{path} is not valid JSON ({exc.msg}, line {exc.lineno}): nothing changed",
                hint="fix the file by hand, or move it away and run again",
            ) from None
    result, server_name, replaced = merged(existing, entry, path)
    [section] = entry
    check_loads(target, result[section][server_name].get("env", {}))
    backup: Path | None = None
    if path.exists():
        backup = path.with_name(path.name + ".bak")
        shutil.copy2(path, backup)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=path.name, dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            json.dump(result, out, indent=2)
            out.write("\n")
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return server_name, replaced, backup


def run_install(args: argparse.Namespace) -> int:
    env = {key: str(value) for key, value in parse_pairs(args.env, raw=True).items()}
    path = Path(args.config) if args.config else config_path(args.host, project=args.project)
    name, replaced, backup = install(args.host, args.target, path=path, name=args.name, env=env)
    verb = "replaced" if replaced else "added"
    saved = f" (previous file saved as {backup})" if backup is not None else ""
    sys.stderr.write(f"trimcp: {verb} server {name!r} in {path}{saved}\n")
    if args.host == "claude":
        sys.stderr.write("trimcp: restart Claude Desktop to load it\n")
    return EXIT_OK
