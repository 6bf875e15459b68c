"""The CLI's own failures: each becomes one line on stderr and an exit code."""

from __future__ import annotations

#: Exit codes: success, a failure (server error, connection lost), bad usage, Ctrl-C.
EXIT_OK = 0
EXIT_FAILURE = 1
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130


class CliError(Exception):
    """Something the user should read in one line; ``exit_code`` is what ``main`` returns."""

    exit_code = EXIT_FAILURE

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint


class UsageError(CliError):
    """The command line itself is wrong (exit code 2, as argparse uses)."""

    exit_code = EXIT_USAGE
