"""The ``trimcp`` command (also ``python -m trimcp``); see ``trimcp --help``.

``main(argv)`` never raises and never calls ``sys.exit``: it returns the exit code (0 ok,
1 failure, 2 usage, 130 interrupted) after printing results on stdout and one clear line
per problem on stderr.
"""

from __future__ import annotations

import argparse
import functools
import importlib
import logging
import os
import sys
import traceback
from collections.abc import Sequence

import trio

from trimcp._groups import single_exception
from trimcp.cli.errors import (
    EXIT_FAILURE,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_USAGE,
    CliError,
    UsageError,
)
from trimcp.errors import (
    LocalProtocolError,
    McpError,
    RemoteProtocolError,
    RequestTimeout,
    SessionClosed,
    made_here,
)

__all__ = ["CliError", "UsageError", "main"]


#: How a line names an error this client made up, against "the server answered ..."
#: (after the "trimcp: " every line starts with).
CLIENT_SIDE = "on the client side"


def _say(line: str) -> None:
    sys.stderr.write(f"trimcp: {line}\n")
    sys.stderr.flush()


def run_bench(argv: Sequence[str]) -> int:
    """``trimcp bench ARGS``: ``benchmarks.__main__.main(ARGS)`` from a trimcp checkout.

    The suite lives in the repository's ``benchmarks/`` directory, not in the wheel; it is
    found when it is importable or in the current directory.
    """
    try:
        bench = importlib.import_module("benchmarks.__main__")
    except ModuleNotFoundError as exc:
        if exc.name not in ("benchmarks", "benchmarks.__main__"):
            raise
        if os.getcwd() in sys.path:
            bench = None
        else:
            sys.path.insert(0, os.getcwd())
            try:
                bench = importlib.import_module("benchmarks.__main__")
            except ModuleNotFoundError as again:
                if again.name not in ("benchmarks", "benchmarks.__main__"):
                    raise
                bench = None
    if bench is None or not callable(getattr(bench, "main", None)):
        raise CliError(
            "the benchmark suite is not installed: it lives in the benchmarks/ directory of "
            "the trimcp repository, not in the package",
            hint="run `trimcp bench` (or `python -m benchmarks`) from a trimcp checkout",
        )
    code = bench.main(list(argv))
    return int(code or 0)


def _dispatch(argv: Sequence[str]) -> int:
    if argv and argv[0] == "bench":
        return run_bench(argv[1:])
    from trimcp.cli.parser import parse

    args = parse(argv)
    if args.command == "run":
        from trimcp.cli.serve import run_server

        return run_server(args)
    if args.command == "config":
        from trimcp.cli.hosts import run_config

        return run_config(args)
    if args.command == "install":
        from trimcp.cli.install import run_install

        return run_install(args)
    if args.command == "dev":
        from trimcp.cli.dev import run_dev

        return run_dev(args)
    return _run_client(args)


def _run_client(args: argparse.Namespace) -> int:
    from trimcp.cli.client import ServerStderr, err, run_client_command
    from trimcp.cli.signals import run_until_interrupted

    stderr = ServerStderr(verbose=bool(args.verbose))
    _client_logging(verbose=bool(args.verbose))

    def on_interrupt(signum: int) -> None:
        err("trimcp: interrupted; cancelling")

    work = functools.partial(run_client_command, args, stderr)
    code, received = trio.run(
        functools.partial(run_until_interrupted, work, on_interrupt=on_interrupt)
    )
    return EXIT_INTERRUPTED if received is not None else code


def _client_logging(*, verbose: bool) -> None:
    """trimcp's own log lines in a client command: with ``--verbose``, prefixed on stderr;
    else none (the command reports what went wrong in its own one or two lines)."""
    logger = logging.getLogger("trimcp")
    if logger.handlers:
        return
    if verbose:
        handler: logging.Handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("trimcp: [%(name)s] %(message)s"))
        logger.setLevel(logging.INFO)
    else:
        handler = logging.NullHandler()
    logger.addHandler(handler)


def _leaf(exc: BaseException) -> BaseException:
    while isinstance(exc, BaseExceptionGroup):
        only = single_exception(exc)
        if only is None:
            return exc
        exc = only
    return exc


def describe_error(exc: BaseException) -> tuple[str, int]:
    """The one line to print for ``exc`` and the exit code."""
    if isinstance(exc, CliError):
        return exc.message, exc.exit_code
    if isinstance(exc, RequestTimeout):
        return f"no answer in time ({exc.message}); try --timeout", EXIT_FAILURE
    if isinstance(exc, SessionClosed):
        return _closed(exc), EXIT_FAILURE
    if isinstance(exc, LocalProtocolError):
        # Refused here, before anything was sent: not an answer from the server.
        return f"not sent: {exc.message}", EXIT_FAILURE
    if isinstance(exc, RemoteProtocolError):
        # Found wrong here (a result that breaks its schema, a listing that never ends):
        # the server sent an answer, not this error.
        return f"the server's answer is invalid: {exc.message}", EXIT_FAILURE
    if isinstance(exc, McpError):
        if made_here(exc):
            # Made up here (a failed connection, an HTTP status without a JSON-RPC answer,
            # a limit of the client): the server sent no such error.
            return f"{CLIENT_SIDE}: {exc.message}", EXIT_FAILURE
        return f"the server answered error {exc.code}: {exc.message}", EXIT_FAILURE
    if isinstance(exc, OSError):
        return f"{exc.strerror or exc}", EXIT_FAILURE
    text = str(exc)
    if not text and exc.__cause__ is not None:
        # trio-websocket raises a bare HandshakeError from the real cause.
        text, _ = describe_error(exc.__cause__)
    if type(exc).__module__.split(".")[0] == "trio_websocket":
        status = getattr(exc, "status_code", None)
        if isinstance(status, int):  # ConnectionRejected: the server answered the handshake
            body = getattr(exc, "body", None) or b""
            reason = body[:200].decode("utf-8", "replace").strip()
            return (
                f"the server refused the WebSocket connection: HTTP {status}"
                + (f" {reason}" if reason else ""),
                EXIT_FAILURE,
            )
        return f"WebSocket {type(exc).__name__}: {text}", EXIT_FAILURE
    return f"{type(exc).__name__}: {text}", EXIT_FAILURE


def _closed(exc: SessionClosed) -> str:
    data = exc.data if isinstance(exc.data, dict) else {}
    if "returncode" not in data:  # a network server went away
        return f"the server closed the connection ({exc.message})"
    # A stdio child: its last stderr lines were shown just before this line.
    code = data["returncode"]
    if isinstance(code, int) and code < 0:
        return f"the server process was killed by signal {-code} before it answered"
    if code:
        return f"the server process exited with code {code} before it answered"
    if data.get("stderr"):
        return "the server process closed the connection before it answered"
    return (
        "the server process closed the connection before it answered, saying nothing on "
        "stderr; is it an MCP server over stdio?"
    )


def main(argv: list[str] | None = None) -> int:
    """Run ``trimcp`` with ``argv`` (default ``sys.argv[1:]``) and return the exit code."""
    words = sys.argv[1:] if argv is None else list(argv)
    verbose = "-v" in words or "--verbose" in words
    try:
        return _dispatch(words)
    except KeyboardInterrupt:
        _say("interrupted")
        return EXIT_INTERRUPTED
    except SystemExit as exc:  # --help and --version exit through argparse
        return (
            exc.code if isinstance(exc.code, int) else EXIT_OK if exc.code is None else EXIT_USAGE
        )
    except BaseException as exc:
        leaf = _leaf(exc)
        if isinstance(leaf, KeyboardInterrupt):
            _say("interrupted")
            return EXIT_INTERRUPTED
        if not isinstance(leaf, Exception):
            raise
        message, code = describe_error(leaf)
        if verbose and not isinstance(leaf, CliError):
            traceback.print_exception(leaf)
        elif verbose and leaf.__cause__ is not None:  # e.g. the error importing a target
            traceback.print_exception(leaf.__cause__)
        _say(message)
        if isinstance(leaf, CliError) and leaf.hint:
            _say(leaf.hint)
        return code
