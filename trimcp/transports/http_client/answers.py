"""Reading the server's answers to a POST: a JSON body or an SSE stream, into the inbox.

A POST that carries requests waits for one answer per request id (``pending``). Every
message on the way — notifications, server requests, the answers — goes to the inbox in
arrival order; the ids answered are taken off ``pending``. Whatever cannot be answered
(an error status, a body that is too large, a stream that ends for good) is answered
locally: a JSON-RPC error response for each pending id, so no caller waits for nothing.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable

import attrs
import trio

from trimcp._record import Record
from trimcp.errors import McpError
from trimcp.http.client import Response
from trimcp.http.errors import HttpClientError, HttpStatusError
from trimcp.http.url import Endpoint
from trimcp.protocol.jsonrpc import RequestId
from trimcp.protocol.sse import EventTooLarge
from trimcp.session.transport import MessageTooLarge
from trimcp.transports.http_client.inbox import Inbox
from trimcp.transports.http_client.messages import Inbound, error_reply, split_inbound, with_id
from trimcp.transports.http_client.options import HttpClientOptions
from trimcp.transports.http_client.sse_reader import SseReader

logger = logging.getLogger("trimcp.http_client")

#: Bytes of an error body kept for the error message (and parsed if it is JSON-RPC).
EXCERPT = 64 * 1024
#: After the answer arrived, how long the rest of an event stream may take to end
#: before its connection is closed instead of reused.
_DRAIN_GRACE = 1.0

#: Where an answer stream's messages go: ``await sink(message, pending)``.
Sink = Callable[[Inbound, set[RequestId]], Awaitable[None]]


@attrs.frozen(repr=False, eq=False)
class StreamEnd(Record):
    """An answer stream ended before every answer arrived."""

    last_event_id: str | None
    retry_ms: int | None
    progressed: bool
    error: HttpClientError | None


class AnswerReader:
    """Reads answer bodies and streams for one endpoint into one inbox."""

    def __init__(self, endpoint: Endpoint, options: HttpClientOptions, inbox: Inbox) -> None:
        self._endpoint = endpoint
        self._options = options
        self._inbox = inbox

    async def deliver(self, item: Inbound, pending: set[RequestId]) -> None:
        """Queue a message for the engine; an answer takes its id off ``pending``.

        An error with a null id on a single-request POST can only be about that request,
        so it is re-addressed to it (servers that reject a body before reading its id).
        """
        data = item.data
        if item.answers is not None:
            pending.discard(item.answers)
        elif item.null_id_error and len(pending) == 1:
            data = with_id(data, pending.pop())
        await self._inbox.put(data)

    async def read_json(self, response: Response, pending: set[RequestId], sink: Sink) -> None:
        """Read a JSON answer body (one message or a batch), at most ``max_message_bytes``."""
        options = self._options
        try:
            body = await response.read_all(options.max_message_bytes, options.sse_read_timeout)
        except HttpClientError as exc:
            await self.fail(pending, exc)
            return
        for item in split_inbound(body):
            await sink(item, pending)
        if pending:
            await self.fail(
                pending,
                HttpStatusError(
                    response.status,
                    self._endpoint.url,
                    "",
                    "the JSON answer holds no response to this request",
                ),
            )

    async def read_sse(
        self,
        response: Response,
        pending: set[RequestId],
        sink: Sink,
        resume_from: str | None = None,
    ) -> StreamEnd | None:
        """Feed an answer stream to ``sink`` until every pending id is answered.

        Returns None when done (answered, or failed and answered with an error), else
        where to resume from (``resume_from`` if this stream gave no new event id).
        """
        options = self._options
        reader = SseReader(
            response,
            max_event_bytes=options.max_message_bytes,
            idle_timeout=options.sse_read_timeout,
        )
        error: HttpClientError | None = None
        try:
            while pending:
                event = await reader.next_event()
                if event is None:
                    break
                if isinstance(event, EventTooLarge):
                    # Most likely the answer itself: fail now rather than wait for nothing.
                    await self.fail(
                        pending,
                        HttpClientError(
                            f"an event from the server exceeded the {event.limit}-byte limit",
                            {"limit": event.limit},
                        ),
                    )
                    return None
                if event.event != "message" or not event.data:
                    continue  # priming events, keep-alives, unknown event types
                for item in split_inbound(event.data.encode("utf-8")):
                    await sink(item, pending)
        except HttpClientError as exc:
            error = exc
        if not pending:
            await self.drain(response)
            return None
        last_event_id = reader.last_event_id or resume_from
        if last_event_id is None:
            reason = (
                f"the answer stream ended without an answer{f' ({error.message})' if error else ''}"
            )
            await self.fail(pending, HttpClientError(reason))
            return None
        return StreamEnd(last_event_id, reader.retry_ms, reader.progressed, error)

    async def drain(self, response: Response) -> None:
        """Read the rest of a body for a moment, so its connection can be reused."""
        with trio.move_on_after(_DRAIN_GRACE):
            try:
                while await response.read_chunk(self._options.sse_read_timeout):
                    pass
            except HttpClientError:
                pass

    async def fail_status(self, response: Response, pending: set[RequestId]) -> None:
        """Answer pending requests for an error status, passing on a JSON-RPC error body."""
        body = await response.read_excerpt(EXCERPT, self._options.timeout)
        if response.content_type == "application/json" and body:
            for item in split_inbound(body):
                if item.answers in pending or (item.null_id_error and len(pending) == 1):
                    await self.deliver(item, pending)
        if not pending:
            return
        detail = response.reason
        location = response.headers.get("location")
        if 300 <= response.status < 400 and location:
            detail = f"redirect to {location} not followed"
        await self.fail(
            pending,
            HttpStatusError(
                response.status, self._endpoint.url, body.decode("utf-8", "replace"), detail
            ),
        )

    async def fail(self, pending: set[RequestId], error: McpError) -> None:
        """Answer every pending request locally with ``error``."""
        if pending:
            logger.info("request %s failed: %s", sorted(map(str, pending)), error.message)
        for request_id in sorted(pending, key=str):
            await self._inbox.put(error_reply(request_id, error))
        pending.clear()

    async def pump(self, reader: SseReader) -> None:
        """Queue every message of a stream that answers no request (the GET stream)."""
        while (event := await reader.next_event()) is not None:
            if isinstance(event, EventTooLarge):
                await self._inbox.put(MessageTooLarge(event.limit))
            elif event.event == "message" and event.data:
                for item in split_inbound(event.data.encode("utf-8")):
                    await self._inbox.put(item.data)
