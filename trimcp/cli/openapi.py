"""``trimcp run --openapi SPEC``: a REST API served from its OpenAPI document, no Python
file (see :mod:`trimcp.server.openapi` and docs/openapi.md).

Credentials for the API come from the environment, never from flags (other users of the
machine can read a process's arguments): ``TRIMCP_OPENAPI_TOKEN`` (a bearer token) and
``TRIMCP_OPENAPI_HEADERS`` (``Name: value`` lines, e.g. an API key header).
"""

from __future__ import annotations

import argparse
import functools
import os
import sys
from typing import Any

import trio

from trimcp.cli.errors import CliError, UsageError


def _say(line: str) -> None:
    sys.stderr.write(f"trimcp: {line}\n")
    sys.stderr.flush()


def load_openapi(args: argparse.Namespace) -> Any:
    """The server for ``--openapi SPEC`` (its document read, fetched when a URL, and
    checked): one line and exit status 1 when it cannot be served."""
    from trimcp.server.openapi import OpenApiError, OpenApiProvider, openapi_server

    if args.target is not None:
        raise UsageError(
            f"give a server to run ({args.target}) or --openapi SPEC, not both",
            hint="trimcp run --openapi api.json [--base-url URL] [--tool-search]",
        )
    if args.workers > 1:
        raise UsageError("--workers needs a server file; serve --openapi with one process")
    options: dict[str, Any] = {
        "base_url": args.base_url,
        "tool_search": args.tool_search,
        "unsupported": "skip" if args.openapi_skip_unsupported else "refuse",
        "environ": os.environ,
    }
    try:
        app = trio.run(functools.partial(openapi_server, args.openapi, **options))
    except OpenApiError as exc:
        raise CliError(f"--openapi {args.openapi}: {exc}") from None
    for provider in app.providers:
        if isinstance(provider, OpenApiProvider):
            for problem in provider.skipped:
                _say(f"--openapi: skipped {problem}")
    return app


def add_tool_search(server: Any) -> None:
    """``--tool-search`` on a server file: its tools behind a search tool."""
    from trimcp.server.app import Server
    from trimcp.server.transforms import ToolSearch

    if not isinstance(server, Server):
        raise UsageError("--tool-search needs a trimcp.Server (or --openapi)")
    server.add_transform(ToolSearch())
