"""Records of outstanding work that the engine's tables hold besides its own.

A session keeps two tables of outstanding work, keyed by request id: the peer's requests
under way here (inbound) and ours awaiting the peer's answer (outbound). The engine's own
records are a :class:`~trimcp.session.context.RequestContext` (a handler task runs it) and
a :class:`~trimcp.session.outbound.Waiter` (a task waits in ``send_request``). Any other
record answers the engine's events itself through these interfaces, so the engine's
dispatch needs no branch per kind: the relay's :class:`~trimcp.session.relay.Relayed` is
one of each.
"""

from __future__ import annotations

from typing import Any, Protocol

from trimcp.errors import McpError
from trimcp.protocol.jsonrpc import RequestId
from trimcp.session.outbound import ProgressCallback


class InboundWork(Protocol):
    """A request of the peer taken on without a handler task (in the inbound table until
    it ends; it counts against ``max_in_flight`` like a handler)."""

    async def cancel(self, reason: str) -> None:
        """The peer cancelled it, or the session closes: end it, without an answer."""
        ...


class OutboundWork(Protocol):
    """A request of ours whose answer goes somewhere other than a waiting task. The engine
    drops it from its table before it passes on the answer, error or close."""

    @property
    def follow(self) -> ProgressCallback | None:
        """Who gets the progress of a task this request created, after its answer."""
        ...

    def sent_as(self, request_id: RequestId) -> None:
        """Its id on this session, once it has one (before it is queued)."""
        ...

    async def answered(self, result: Any) -> None:
        """The peer's answer (decoded JSON, untouched)."""
        ...

    async def failed(self, error: McpError) -> None:
        """The peer's error, or an answer the protocol core found unusable."""
        ...

    async def progressed(self, progress: float, total: float | None, message: str | None) -> None:
        """A progress notification for it, while it is under way."""
        ...

    async def abandoned(self, reason: str) -> None:
        """The session closed before the answer came."""
        ...
