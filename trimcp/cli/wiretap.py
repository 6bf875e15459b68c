"""``--verbose``: a transport wrapper that shows every message it moves, on stderr."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from trimcp.protocol.jsonrpc import dump_json
from trimcp.session.transport import Decoded, Outgoing, Transport

#: Characters of one message shown; the rest is summarised so a huge result stays readable.
MAX_SHOWN = 4000


def describe(data: bytes, limit: int = MAX_SHOWN) -> str:
    """One message as one line of text, cut to ``limit`` characters."""
    text = data.decode("utf-8", "replace").strip().replace("\n", "\\n")
    if len(text) > limit:
        return f"{text[:limit]}... ({len(data)} bytes)"
    return text


class WireTap:
    """Wraps a :class:`Transport`; ``show`` gets ``"-> message"`` for each message sent and
    ``"<- message"`` for each one received, before it moves on.

    It adds no buffering and no task: cancellation and errors are the inner transport's.
    """

    def __init__(self, inner: Transport, show: Callable[[str], None]) -> None:
        self.inner = inner
        self._show = show

    async def receive(self) -> bytes | Decoded:
        data = await self.inner.receive()
        self._show(f"<- {describe(data if isinstance(data, bytes) else dump_json(data.value))}")
        return data

    async def send(self, messages: Sequence[Outgoing]) -> None:
        for message in messages:
            self._show(f"-> {describe(message.data)}")
        await self.inner.send(list(messages))

    async def aclose(self) -> None:
        await self.inner.aclose()
