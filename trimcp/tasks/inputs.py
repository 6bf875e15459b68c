"""Requests a running task makes to its client (elicitation, sampling, roots).

A task outlives the request that created it, so it cannot ask the client on that request.
Each question becomes a :class:`PendingInput`, held by the task until a client answers it
through one of two channels:

- 2025-11-25: the client calls ``tasks/result``; that handler forwards each pending input
  as a real request on its own session (tagged with the related-task ``_meta``) and hands
  the answer back (:meth:`PendingInput.take` / :meth:`resolve` / :meth:`release`).
- ``io.modelcontextprotocol/tasks`` (2026-07-28): ``tasks/get`` lists the pending inputs as
  ``inputRequests``; ``tasks/update`` delivers ``inputResponses`` by key.

Keys are unique over a task's life (a counter), as the extension requires.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import trio

from trimcp.errors import McpError


class PendingInput:
    """One question the task waits on. ``params`` is the request's wire form (a dict)."""

    __slots__ = ("_done", "error", "forwarding", "key", "method", "params", "taken", "value")

    def __init__(self, key: str, method: str, params: dict[str, Any]) -> None:
        self.key = key
        self.method = method
        self.params = params
        #: True while a ``tasks/result`` handler is forwarding it to the client.
        self.taken = False
        self.value: Any = None
        self.error: McpError | None = None
        #: The scope of the request forwarding it: cancelled when it is settled otherwise
        #: (the task ended, another channel answered), so that request stops too.
        self.forwarding: trio.CancelScope | None = None
        self._done = trio.Event()

    @property
    def done(self) -> bool:
        return self._done.is_set()

    def take(self) -> bool:
        """Claim it for forwarding; False when someone else already did (or it is done)."""
        if self.taken or self.done:
            return False
        self.taken = True
        return True

    def release(self) -> None:
        """Give it back (the forwarding request was cancelled before an answer came)."""
        self.taken = False

    def resolve(self, value: Any = None, error: McpError | None = None) -> bool:
        """Deliver the answer (or error); False when it was answered already."""
        if self.done:
            return False
        self.value, self.error = value, error
        self._done.set()
        if self.forwarding is not None:
            self.forwarding.cancel()
        return True

    async def wait(self) -> Any:
        """Wait for the answer. Raises the client's error as :class:`McpError`.
        Cancellation: stops waiting; the question stays pending for its task to drop."""
        await self._done.wait()
        if self.error is not None:
            raise self.error
        return self.value


class InputQueue:
    """The pending inputs of one task, at most ``limit`` at a time, in arrival order."""

    __slots__ = ("_changed", "_next", "limit", "pending")

    def __init__(self, limit: int, changed: Callable[[], None]) -> None:
        self.limit = limit
        self.pending: dict[str, PendingInput] = {}
        self._next = 0
        self._changed = changed

    def add(self, method: str, params: dict[str, Any]) -> PendingInput:
        """Queue a new question. Raises :class:`McpError` when ``limit`` are already open."""
        if len(self.pending) >= self.limit:
            raise McpError(
                -32603,
                f"the task already waits on {self.limit} answers from the client; answer "
                "those first (or raise TaskOptions.max_pending_inputs)",
            )
        self._next += 1
        item = PendingInput(f"input-{self._next}", method, params)
        self.pending[item.key] = item
        self._changed()
        return item

    def remove(self, item: PendingInput) -> None:
        if self.pending.pop(item.key, None) is not None:
            self._changed()

    def first_untaken(self) -> PendingInput | None:
        for item in self.pending.values():
            if not item.taken and not item.done:
                return item
        return None
