"""What the session engine needs from a transport: whole messages in, batches of messages out.

A transport moves bytes of complete JSON-RPC messages; it knows nothing of MCP methods. The
engine calls :meth:`Transport.receive` from exactly one task (its reader) and
:meth:`Transport.send` from exactly one task (its writer), so a transport needs no locks.
"""

from __future__ import annotations

from typing import Protocol

from trimcp.errors import INVALID_REQUEST, RemoteProtocolError

#: One outgoing message: its bytes (one JSON text, no framing) and the id of the inbound
#: request it belongs to, if any (Streamable HTTP routes it onto that request's stream).
Outgoing = tuple[bytes, "int | str | None"]


class MessageTooLarge(RemoteProtocolError):
    """The peer sent a message over the transport's size limit; it was skipped whole."""

    def __init__(self, limit: int, dropped: int | None = None) -> None:
        detail = f" ({dropped} bytes dropped)" if dropped is not None else ""
        super().__init__(INVALID_REQUEST, f"Message larger than the {limit}-byte limit{detail}")
        self.limit = limit
        self.dropped = dropped


class Transport(Protocol):
    """A bidirectional message pipe to one peer."""

    async def receive(self) -> bytes:
        """The next complete message from the peer.

        Raises ``trio.EndOfChannel`` when the peer has closed its side, and
        :class:`MessageTooLarge` for a message that was dropped (reading can go on after it).
        Cancellation: safe; no message is lost or split by a cancelled ``receive``.
        """
        ...

    async def send(self, messages: list[Outgoing]) -> None:
        """Write messages, in order, as one batch where the transport can.

        Raises ``trio.BrokenResourceError`` / ``trio.ClosedResourceError`` when the peer is
        gone. Cancellation: may leave a batch partly written; the engine only cancels its
        writer when the session is being torn down.
        """
        ...

    async def aclose(self) -> None:
        """Close both directions. Idempotent. The peer sees end-of-stream."""
        ...
