"""The deadline of one call, counted as the session counts a request's, for the part of the
call the session does not see: following the task a server made of a plain call.

:meth:`~trimcp.session.Session.send_request` bounds one request: ``timeout`` seconds from
when it is sent (the session's ``request_timeout`` by default, None: no limit), restarted by
each progress notification when the caller asked for that, never past
``max(timeout, max_request_timeout)`` from the start. A 2026-07-28 server may answer a
plain ``tools/call`` with a task; :class:`CallDeadline` carries the same clock from the
request over to following that task (:meth:`~trimcp.client.tasks.TaskHandle.follow`), so
the caller's ``timeout`` bounds the whole call.
"""

from __future__ import annotations

import math

import trio

from trimcp._validators import DEFAULT
from trimcp.client.checks import timed_out
from trimcp.errors import RequestTimeout
from trimcp.session.options import SessionOptions


class CallDeadline:
    """When one call must end (see the module docs). :meth:`restart` when an attempt of the
    call is sent (each 2026 ``input_required`` round is a new attempt, with its own
    timeout, as for plain requests)."""

    __slots__ = ("_ceiling", "default", "hard", "reset_on_progress", "seconds", "start")

    def __init__(
        self, options: SessionOptions, timeout: float | None, reset_on_progress: bool
    ) -> None:
        #: Whether the caller left ``timeout`` to the session's default.
        self.default = timeout is DEFAULT
        if timeout is DEFAULT:
            timeout = options.request_timeout
        #: The timeout in seconds (``math.inf``: none).
        self.seconds: float = math.inf if timeout is None else timeout
        self.reset_on_progress = reset_on_progress
        self._ceiling = max(self.seconds, options.max_request_timeout)
        self.start = 0.0
        self.hard = 0.0
        self.restart()

    def restart(self) -> None:
        """An attempt of the call is sent now: its clock starts."""
        self.start = trio.current_time()
        self.hard = self.start + (self._ceiling if self.reset_on_progress else self.seconds)

    @property
    def at(self) -> float:
        """The deadline without progress (Trio time)."""
        return self.start + self.seconds

    def progressed(self, scope: trio.CancelScope) -> None:
        """A sign of progress: restart ``scope``'s timeout if the caller asked for that,
        never past the hard deadline."""
        if self.reset_on_progress:
            scope.deadline = min(trio.current_time() + self.seconds, self.hard)

    def timed_out(self, method: str, target: str | None) -> RequestTimeout:
        """The error of a call past its deadline: the one a plain request raises."""
        plain = RequestTimeout(f"{method} got no answer within {self.seconds:g}s")
        return timed_out(plain, method, target, default=self.default)
