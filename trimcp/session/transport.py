"""What the session engine needs from a transport: whole messages in, batches of messages out.

A transport moves bytes of complete JSON-RPC messages; it knows nothing of MCP methods. The
engine calls :meth:`Transport.receive` from exactly one task (its reader) and
:meth:`Transport.send` from exactly one task (its writer), so a transport needs no locks.
"""

from __future__ import annotations

from typing import Any, NamedTuple, Protocol

from trimcp.errors import INVALID_REQUEST, RemoteProtocolError
from trimcp.protocol.jsonrpc import RequestId


class Outgoing(NamedTuple):
    """One outgoing message, as the engine hands it to a transport: bytes plus meaning.

    Transports route by these fields, never by looking at the bytes (matching our own
    encoder's output broke on ids the encoder escapes). Most transports only write
    ``data``; Streamable HTTP uses the rest to pick the HTTP response each message goes to.
    """

    #: One JSON text (a message or a batch reply), no framing.
    data: bytes
    #: The inbound request this message was sent on behalf of (a progress notification, a
    #: log record or a server request made while handling it), or None.
    related: RequestId | None = None
    #: The inbound requests this message answers for good: the result or error of one
    #: request, every request a batch reply settles, or every request of a batch refused
    #: whole. After it, nothing more will be sent for them.
    answers: tuple[RequestId, ...] = ()


class Decoded(NamedTuple):
    """An inbound JSON text the transport already parsed (one message, or a batch array)."""

    value: Any


class MessageTooLarge(RemoteProtocolError):
    """The peer sent a message over the transport's size limit; it was skipped whole."""

    def __init__(self, limit: int, dropped: int | None = None) -> None:
        detail = f" ({dropped} bytes dropped)" if dropped is not None else ""
        super().__init__(INVALID_REQUEST, f"Message larger than the {limit}-byte limit{detail}")
        self.limit = limit
        self.dropped = dropped


class Transport(Protocol):
    """A bidirectional message pipe to one peer."""

    async def receive(self) -> bytes | Decoded:
        """The next complete message from the peer: its bytes, or its already decoded JSON
        value when the transport had to parse it anyway (it is then not parsed twice).

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
