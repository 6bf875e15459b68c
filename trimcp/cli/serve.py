"""``trimcp run``: serve a ``trimcp.Server`` (or ``LowLevelServer``) over stdio, HTTP or
WebSocket until the client leaves or Ctrl-C / SIGTERM.

Settings come from the flags, then from a ``app.run(...)`` the file makes itself (its
arguments), then from ``TRIMCP_*`` environment variables, then the defaults (see
:mod:`trimcp.server.serving`). The startup line and every diagnostic go to stderr: under
stdio, stdout carries the protocol.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
from typing import Any

from trimcp.cli.errors import CliError, UsageError
from trimcp.cli.loader import load_server
from trimcp.cli.openapi import add_tool_search, load_openapi
from trimcp.cli.wiretap import WireTap
from trimcp.cli.workers import supervised_settings
from trimcp.server.lifespan import LifespanFailed
from trimcp.server.serving import (
    ServeSettings,
    SettingsError,
    capturing_run_calls,
    is_loopback_host,
    keyring_to_share,
    label_of,
    protection,
    run_blocking,
)

#: Flag (argparse dest) -> ServeSettings field.
FLAGS = {
    "transport": "transport",
    "host": "host",
    "port": "port",
    "path": "path",
    "stateless": "stateless",
    "json_response": "json_response",
    "log_level": "log_level",
    "allow_host": "allowed_hosts",
    "allow_origin": "allowed_origins",
    "store": "store",
    "reuse_port": "reuse_port",
    "auth_issuer": "auth_issuer",
    "auth_resource": "auth_resource",
    "auth_scope": "auth_scopes",
    "auth_dpop": "auth_dpop",
    "auth_upstream": "auth_upstream",
}


def _say(line: str) -> None:
    sys.stderr.write(f"trimcp: {line}\n")
    sys.stderr.flush()


def settings_from(args: argparse.Namespace, run_arguments: dict[str, Any]) -> ServeSettings:
    """Flags over the file's own ``run(...)`` arguments over ``TRIMCP_*`` over defaults; a
    worker of ``--workers`` takes its supervisor's settings (from its environment) as
    flags."""
    flags: dict[str, Any] = supervised_settings()
    for dest, field in FLAGS.items():
        value = getattr(args, dest, None)
        if value is not None and value != [] and value is not False:
            flags[field] = value
    try:
        return ServeSettings.from_env(**{**run_arguments, **flags})
    except SettingsError as exc:
        raise CliError(str(exc)) from None


def run_server(args: argparse.Namespace) -> int:
    """The ``run`` command: load the target, serve it, return the exit code.

    Stopping: stdio ends when the client closes stdin. Ctrl-C or SIGTERM stops any
    transport gracefully (see :mod:`trimcp.server.serving`); a second Ctrl-C exits at once.
    A stop by signal is a normal stop: exit code 0.
    """
    # Under stdio, stdout carries the protocol: a print() while the module is imported
    # must not reach it (nor may anything else: the transport is not chosen yet).
    with capturing_run_calls() as calls, contextlib.redirect_stdout(sys.stderr):
        if getattr(args, "openapi", None) is not None:
            server = load_openapi(args)
        elif args.target is None:
            raise UsageError(
                "name the server to run: path/to/server.py[:app], or --openapi SPEC",
                hint="see: trimcp run --help",
            )
        else:
            server, _ = load_server(args.target, run_calls=calls)
            if getattr(args, "tool_search", False):
                add_tool_search(server)
    run_arguments: dict[str, Any] = {}
    for call in calls:
        if call.server is server:
            run_arguments = call.arguments
    settings = settings_from(args, run_arguments)
    if getattr(args, "check", False):
        _say(f"{label_of(server)} loads from {args.target or args.openapi}")
        return 0
    host = settings.host
    if settings.transport != "stdio" and not is_loopback_host(host):
        if not settings.allowed_hosts:
            raise UsageError(
                f"--host {host} is not a loopback address: clients will reach this server by "
                "some name, and it answers only the names given with --allow-host",
                hint="add --allow-host NAME for each name or address clients use (e.g. "
                "--allow-host myhost.example), or --allow-host '*' to accept any Host header",
            )
        _say(f"warning: listening on {host} makes the server reachable from other machines")
    if (settings.store is not None or args.workers > 1) and settings.transport != "http":
        raise UsageError("--store and --workers apply to the http transport only")
    if args.workers > 1:
        from trimcp.cli.workers import run_workers

        try:  # refused here once, rather than by every worker
            auth = protection(server, settings)
        except SettingsError as exc:
            raise CliError(str(exc), hint=exc.hint) from None

        return run_workers(
            args.target,
            settings,
            args.workers,
            label_of(server),
            default_keyring=keyring_to_share(server) is not None,
            auth=auth,
        )
    wrap = (lambda transport: WireTap(transport, _say)) if args.verbose else None
    try:
        code, _ = run_blocking(server, settings, announce=_say, wrap_stdio=wrap)
    except SettingsError as exc:
        raise CliError(str(exc), hint=exc.hint) from None
    except LifespanFailed as exc:
        raise CliError(str(exc)) from None
    return code
