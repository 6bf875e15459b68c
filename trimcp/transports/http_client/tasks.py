"""Background tasks of one HTTP client transport, each in its own cancel scope.

The tasks run in the nursery of ``open_http_client_transport``, whose cancel scope also
covers the caller's ``async with`` body; so closing the transport must not cancel that
scope. Instead every task gets its own :class:`trio.CancelScope`, and :meth:`cancel_all`
cancels them one by one.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import trio


class TaskSet:
    """Start tasks in a nursery; cancel them all at once, leaving the nursery alone."""

    def __init__(self, nursery: trio.Nursery) -> None:
        self._nursery = nursery
        self._scopes: set[trio.CancelScope] = set()
        self.closed = False

    def spawn(
        self,
        fn: Callable[..., Awaitable[Any]],
        *args: Any,
        scope: trio.CancelScope | None = None,
    ) -> trio.CancelScope:
        """Start ``fn(*args)`` in its own (or the given) cancel scope and return it.

        After :meth:`cancel_all` the task starts already cancelled.
        """
        if scope is None:
            scope = trio.CancelScope()
        if self.closed:
            scope.cancel()
        self._scopes.add(scope)
        self._nursery.start_soon(self._run, scope, fn, args, name=fn)
        return scope

    async def _run(
        self, scope: trio.CancelScope, fn: Callable[..., Awaitable[Any]], args: tuple[Any, ...]
    ) -> None:
        try:
            with scope:
                await fn(*args)
        finally:
            self._scopes.discard(scope)

    def cancel_all(self) -> None:
        """Cancel every task started so far, and every task started from now on."""
        self.closed = True
        for scope in list(self._scopes):
            scope.cancel()
