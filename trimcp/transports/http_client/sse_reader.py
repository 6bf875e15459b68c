"""Read a ``text/event-stream`` response body as SSE events, with bounded memory and time."""

from __future__ import annotations

from trimcp.http.client import Response
from trimcp.protocol.framing import EOF, NEED_DATA
from trimcp.protocol.sse import EventTooLarge, SSEDecoder, SSEEvent


class SseReader:
    """Events of one SSE response.

    Memory is bounded by ``max_event_bytes`` plus one read; each read waits at most
    ``idle_timeout`` seconds (raising :class:`HttpClientError`), so a silent server cannot
    hold the reader forever.
    """

    def __init__(self, response: Response, *, max_event_bytes: int, idle_timeout: float) -> None:
        self._response = response
        self._decoder = SSEDecoder(max_event_bytes)
        self._idle_timeout = idle_timeout
        #: True once any event was dispatched or the server set an event id.
        self.progressed = False

    @property
    def last_event_id(self) -> str | None:
        """The id to resume from (``Last-Event-ID``), if the server gave one."""
        return self._decoder.last_event_id

    @property
    def retry_ms(self) -> int | None:
        """The latest ``retry`` the server asked for, in milliseconds."""
        return self._decoder.retry_ms

    async def next_event(self) -> SSEEvent | EventTooLarge | None:
        """The next event, an oversize report, or None when the stream ended cleanly.

        Raises :class:`HttpClientError` when the connection breaks or goes idle.
        Cancellation: the response's connection must then be discarded (the pool does so).
        """
        decoder = self._decoder
        while True:
            before = decoder.last_event_id
            event = decoder.next_event()
            if decoder.last_event_id != before:
                self.progressed = True
            if event is NEED_DATA:
                decoder.receive_data(await self._response.read_chunk(self._idle_timeout))
                continue
            if event is EOF:
                return None
            assert isinstance(event, (SSEEvent, EventTooLarge))
            if isinstance(event, SSEEvent):
                self.progressed = True
            return event
