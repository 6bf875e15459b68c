"""``trimcp config``: the JSON an MCP host needs to launch a server over stdio.

The snippet runs ``<this python> -m trimcp run <absolute target>``, so the host uses the
interpreter (and virtual environment) trimcp is installed in, whatever its own PATH is.
Nothing is imported: printing a config never runs the server's code.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from trimcp.cli.arguments import parse_pairs
from trimcp.cli.errors import EXIT_OK, CliError
from trimcp.cli.loader import parse_target

HOSTS = ("claude", "cursor", "vscode")


def launch_args(target_text: str) -> tuple[list[str], str]:
    """The ``args`` after the interpreter, and a default server name, for ``target_text``."""
    target = parse_target(target_text)
    if target.file is not None:
        if not target.file.is_file():
            raise CliError(f"no such file: {target.file}")
        where = str(target.file) + (f":{target.attr}" if target.attr else "")
        name = target.file.stem
    else:
        assert target.module is not None
        where = target.display
        name = target.module.rsplit(".", 1)[-1]
    return ["-m", "trimcp", "run", where], name


def snippet(host: str, target_text: str, *, name: str | None, env: dict[str, str]) -> Any:
    """The configuration object for ``host`` (``claude``, ``cursor`` or ``vscode``)."""
    args, default_name = launch_args(target_text)
    entry: dict[str, Any] = {"command": sys.executable, "args": args}
    if env:
        entry["env"] = env
    if host == "vscode":
        return {"servers": {name or default_name: {"type": "stdio", **entry}}}
    return {"mcpServers": {name or default_name: entry}}


WHERE = {
    "claude": "Claude Desktop: add to claude_desktop_config.json (Settings > Developer)",
    "cursor": "Cursor: add to ~/.cursor/mcp.json or .cursor/mcp.json in the project",
    "vscode": "VS Code: add to .vscode/mcp.json in the workspace",
}


def run_config(args: argparse.Namespace) -> int:
    """Print the snippet on stdout (where it goes, on stderr)."""
    env = {key: str(value) for key, value in parse_pairs(args.env, raw=True).items()}
    print(json.dumps(snippet(args.host, args.target, name=args.name, env=env), indent=2))
    sys.stderr.write(f"trimcp: {WHERE[args.host]}\n")
    return EXIT_OK
