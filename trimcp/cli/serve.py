"""``trimcp run``: serve a ``trimcp.Server`` (or ``LowLevelServer``) over stdio, HTTP or
WebSocket until the client leaves or Ctrl-C / SIGTERM.

The startup line and every diagnostic go to stderr: under stdio, stdout carries the protocol.
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import functools
import signal
import socket
import sys
from collections.abc import Iterator
from typing import Any

import trio

from trimcp._groups import single_exception
from trimcp.cli.errors import EXIT_OK, CliError, UsageError
from trimcp.cli.loader import load_server, server_label
from trimcp.cli.signals import run_until_interrupted
from trimcp.cli.wiretap import WireTap
from trimcp.protocol.lifecycle import Role
from trimcp.session import serve_session
from trimcp.transports.base import Transport

DEFAULT_PORTS = {"http": 8000, "ws": 8765}
#: After Ctrl-C, the longest a graceful stop may take before everything is cancelled.
STOP_BOUND = 15.0


def _say(line: str) -> None:
    sys.stderr.write(f"trimcp: {line}\n")
    sys.stderr.flush()


async def _serve_one(server: Any, transport: Transport) -> None:
    # A trimcp.Server also runs its notification delivery next to the session.
    serve = getattr(server, "serve_session", None)
    if callable(serve):
        await serve(transport)
    else:
        await serve_session(transport, server, role=Role.SERVER)


async def serve_stdio(server: Any, label: str, verbose: bool) -> None:
    from trimcp.transports.stdio import open_stdio_server_transport

    _say(f"serving {label} over stdio")
    async with open_stdio_server_transport() as transport:
        wire: Transport = WireTap(transport, _say) if verbose else transport
        await _serve_one(server, wire)


async def serve_http(
    server: Any, label: str, host: str, port: int, allow: list[str], stop: trio.Event
) -> None:
    from trimcp.transports.http_server import HttpServerConfig, serve_http

    config = HttpServerConfig(allowed_hosts=tuple(allow)) if allow else HttpServerConfig()

    async with trio.open_nursery() as nursery:
        try:
            with _listen_errors(host, port):
                bound: int = await nursery.start(
                    functools.partial(
                        serve_http, server, host=host, port=port, config=config,
                        shutdown_trigger=stop.wait,
                    )
                )
        except ValueError as exc:  # e.g. a public address without --allow-host
            raise CliError(str(exc)) from None
        _say(f"serving {label} at http://{_netloc(host, bound)}{config.path} (Ctrl-C to stop)")


async def serve_ws(
    server: Any, label: str, host: str, port: int, allow: list[str]
) -> None:
    from trimcp.transports.websocket import LOCAL_HOSTS, serve_websocket

    allowed = frozenset(allow) if allow else LOCAL_HOSTS

    async with trio.open_nursery() as nursery:
        with _listen_errors(host, port):
            bound: int = await nursery.start(
                functools.partial(
                    serve_websocket, server, host=host, port=port, allowed_hosts=allowed
                )
            )
        _say(f"serving {label} at ws://{_netloc(host, bound)}/mcp (Ctrl-C to stop)")


@contextlib.contextmanager
def _listen_errors(host: str, port: int) -> Iterator[None]:
    """A failure to bind becomes one line naming the address (and what to do)."""
    try:
        yield
    except (OSError, BaseExceptionGroup) as exc:
        leaf = exc if isinstance(exc, OSError) else single_exception(exc)
        if not isinstance(leaf, OSError):
            raise
        hint = None
        if leaf.errno == errno.EADDRINUSE:
            hint = "another process listens there: stop it, or pick another --port (0: any free)"
        elif leaf.errno == errno.EACCES:
            hint = "ports below 1024 need privileges: pick another --port"
        elif leaf.errno == errno.EADDRNOTAVAIL or isinstance(leaf, socket.gaierror):
            hint = "--host must be an address of this machine (default 127.0.0.1)"
        raise CliError(
            f"cannot listen on {_netloc(host, port)}: {leaf.strerror or leaf}", hint=hint
        ) from None


def _is_loopback(host: str) -> bool:
    from trimcp.transports.http_server.serve import is_loopback

    return is_loopback(host)


def _netloc(host: str, port: int) -> str:
    return f"[{host.strip('[]')}]:{port}" if ":" in host else f"{host}:{port}"


def run_server(args: argparse.Namespace) -> int:
    """The ``run`` command: load the target, serve it, return the exit code.

    Stopping: stdio ends when the client closes stdin. Ctrl-C or SIGTERM stops any
    transport gracefully (HTTP closes every session with its bounded sequence; stdio and
    WebSocket cancel, which closes sessions the same way), within ``STOP_BOUND`` seconds;
    a second Ctrl-C exits at once. A stop by signal is a normal stop: exit code 0.
    """
    transport: str = args.transport
    host: str = args.host
    port: int = DEFAULT_PORTS.get(transport, 0) if args.port is None else args.port
    allow: list[str] = args.allow_host
    if transport != "stdio" and not _is_loopback(host):
        if not allow:
            raise UsageError(
                f"--host {host} is not a loopback address: clients will reach this server by "
                "some name, and it answers only the names given with --allow-host",
                hint="add --allow-host NAME for each name or address clients use (e.g. "
                "--allow-host myhost.example), or --allow-host '*' to accept any Host header",
            )
        _say(f"warning: listening on {host} makes the server reachable from other machines")
    if transport == "stdio":
        # Under stdio, stdout carries the protocol: a print() while the module is
        # imported must not reach it.
        with contextlib.redirect_stdout(sys.stderr):
            server, _ = load_server(args.target)
    else:
        server, _ = load_server(args.target)
    label = server_label(server)
    stop = trio.Event()

    async def work() -> int:
        if transport == "stdio":
            await serve_stdio(server, label, args.verbose)
        elif transport == "http":
            await serve_http(server, label, host, port, allow, stop)
        else:
            await serve_ws(server, label, host, port, allow)
        return EXIT_OK

    def on_signal(signum: int) -> None:
        _say(f"{signal.Signals(signum).name}: stopping")

    signals = [signal.SIGINT] + ([signal.SIGTERM] if hasattr(signal, "SIGTERM") else [])
    code, received = trio.run(
        functools.partial(
            run_until_interrupted,
            work,
            signals=signals,
            on_interrupt=on_signal,
            graceful=stop.set if transport == "http" else None,
            hard_bound=STOP_BOUND,
        )
    )
    if received is not None:
        _say("stopped")
        return EXIT_OK
    return code
