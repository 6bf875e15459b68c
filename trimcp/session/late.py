"""Answers that come after their caller left: the few a caller asked to have looked at.

A request whose caller is cancelled (or times out) is forgotten, and its answer, should it
still come, is dropped: nobody waits for it. One answer must not be dropped, though: a
2026-07-28 ``tools/call`` the server ran as a task is answered with the task's id, and
that answer is the only way anyone learns the id; dropped, the task would run until its
TTL with nobody able to stop it. So a caller may give :meth:`Session.send_request
<trimcp.session.engine.Session.send_request>` a :data:`LateAnswer` (the client's
``call_tool`` does: it cancels a task it finds there); when the call is abandoned unanswered,
the session keeps it here, and runs it on the answer if one still arrives (in the session's
own nursery, never in the reader; its errors are logged).

Bounded both ways (docs/input-limits.md): at most :data:`MAX_LATE_ANSWERS` per session (the
oldest is forgotten first) and each for :data:`LATE_ANSWER_SECONDS` after its caller left.
An answer that comes later than that is dropped like any other; the server's own rule
covers the rest (it cancels a task it made of a request whose answer it could not hand
over, docs/concurrency.md).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, Final

import trio

from trimcp.protocol.jsonrpc import RequestId

#: What to do with the result of a request that came after its caller left (the decoded
#: JSON of the result, not structured).
LateAnswer = Callable[[Any], Awaitable[None]]

#: Abandoned requests whose answer is still looked at, per session (the oldest goes first).
MAX_LATE_ANSWERS: Final = 64
#: How long after its caller left an abandoned request's answer is still looked at (s).
LATE_ANSWER_SECONDS: Final = 30


class LateAnswers:
    """The abandoned requests of one session whose answer is still looked at (see the
    module docs). Synchronous; the session engine owns it."""

    __slots__ = ("_entries",)

    def __init__(self) -> None:
        #: request id -> (until when, what to do); in insertion order, which is also the
        #: order of the deadlines (they all get the same window).
        self._entries: dict[RequestId, tuple[float, LateAnswer]] = {}

    def expect(self, request_id: RequestId, handler: LateAnswer) -> None:
        """The caller of ``request_id`` left unanswered: look at its answer if it comes."""
        entries = self._entries
        self._prune()
        while len(entries) >= MAX_LATE_ANSWERS:
            del entries[next(iter(entries))]
        entries[request_id] = (trio.current_time() + LATE_ANSWER_SECONDS, handler)

    def take(self, request_id: RequestId) -> LateAnswer | None:
        """What to do with the answer to ``request_id`` that just came (None: drop it);
        asked once per request."""
        self._prune()
        entry = self._entries.pop(request_id, None)
        return None if entry is None else entry[1]

    def __len__(self) -> int:
        self._prune()
        return len(self._entries)

    def _prune(self) -> None:
        entries = self._entries
        if not entries:
            return
        now = trio.current_time()
        while entries:
            first = next(iter(entries))
            if entries[first][0] > now:
                return
            del entries[first]
