"""Log messages to clients: level filtering, and a bridge from Python's ``logging``.

Each session has its own threshold, set by the client with ``logging/setLevel`` (until it
does, everything is sent). Levels are RFC 5424's, least severe first: ``debug``, ``info``,
``notice``, ``warning``, ``error``, ``critical``, ``alert``, ``emergency``.

The bridge (:meth:`Server.bridge_stdlib_logging <trimcp.server.app.Server.bridge_stdlib_logging>`)
is a ``logging.Handler``. Its ``emit`` never waits for a client: it appends the record to a
bounded in-memory buffer shared by all sessions (the oldest records are dropped when it is
full) and wakes the sessions' delivery tasks; each session then sends, at its own pace,
the records its level lets through. A slow client therefore loses old records instead of
slowing the code that logs. ``emit`` may be called from any thread. Records of trimcp's own
loggers (``trimcp.*``) are never forwarded, so delivering a record cannot log another.
"""

from __future__ import annotations

import logging
import threading
from collections import deque
from collections.abc import Callable
from typing import Any, Final

from trimcp.server.convert import to_json
from trimcp.types import LOGGING_LEVELS, LoggingLevel, LoggingMessageNotificationParams

_RANK: Final[dict[str, int]] = {level: rank for rank, level in enumerate(LOGGING_LEVELS)}

#: Records the bridge keeps for sessions that have not sent them yet.
DEFAULT_LOG_BUFFER: Final = 1000


def check_level(level: str) -> LoggingLevel:
    """``level`` if it is an MCP logging level, else ``ValueError``."""
    if level not in _RANK:
        raise ValueError(f"Unknown logging level {level!r}; use one of {', '.join(_RANK)}")
    return level  # type: ignore[return-value]


def level_enabled(threshold: LoggingLevel | None, level: LoggingLevel) -> bool:
    """Whether a message at ``level`` passes a session's ``threshold`` (None: all pass)."""
    return threshold is None or _RANK[level] >= _RANK[threshold]


def mcp_level(levelno: int) -> LoggingLevel:
    """The MCP level for a ``logging`` level number."""
    if levelno >= logging.CRITICAL:
        return "critical"
    if levelno >= logging.ERROR:
        return "error"
    if levelno >= logging.WARNING:
        return "warning"
    if levelno >= logging.INFO:
        return "info"
    return "debug"


def json_data(data: Any) -> Any:
    """Log data as JSON; what cannot be JSON is sent as its ``str``."""
    try:
        return to_json(data)
    except TypeError:
        return str(data)


class LogBuffer:
    """Bridged records, numbered, bounded; each session reads from its own position."""

    def __init__(self, capacity: int = DEFAULT_LOG_BUFFER) -> None:
        if capacity < 1:
            raise ValueError("the log buffer needs room for at least one record")
        self._lock = threading.Lock()
        self._records: deque[tuple[int, LoggingMessageNotificationParams]] = deque(maxlen=capacity)
        self._last = 0
        #: Called (from the logging thread) after each push; must not block.
        self.on_push: Callable[[], None] | None = None

    @property
    def position(self) -> int:
        """The number of the newest record (a new reader starts here)."""
        return self._last

    def push(self, params: LoggingMessageNotificationParams) -> None:
        with self._lock:
            self._last += 1
            self._records.append((self._last, params))
        callback = self.on_push
        if callback is not None:
            callback()

    def since(self, position: int) -> tuple[list[LoggingMessageNotificationParams], int, int]:
        """Records after ``position``: (records, new position, how many were dropped)."""
        with self._lock:
            records = [(n, p) for n, p in self._records if n > position]
            last = self._last
        first = records[0][0] if records else last + 1
        dropped = max(0, first - position - 1)
        return [p for _, p in records], last, dropped


class StdlibBridge(logging.Handler):
    """A ``logging.Handler`` that queues records for the server's sessions (never blocks)."""

    def __init__(self, buffer: LogBuffer, level: int = logging.NOTSET) -> None:
        super().__init__(level)
        self._buffer = buffer
        self.setFormatter(logging.Formatter("%(message)s"))

    def emit(self, record: logging.LogRecord) -> None:
        if record.name == "trimcp" or record.name.startswith("trimcp."):
            return
        try:
            params = LoggingMessageNotificationParams(
                level=mcp_level(record.levelno), data=self.format(record), logger=record.name
            )
            self._buffer.push(params)
        except Exception:
            self.handleError(record)
