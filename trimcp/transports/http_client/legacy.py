"""The client side of the 2024-11-05 HTTP+SSE transport.

One long-lived GET opens an event stream; its first event, ``endpoint``, names the URL to
POST messages to (resolved against the stream's URL, and refused unless it is on the same
origin, so headers such as ``Authorization`` never go to another server). Every message
from the server arrives on that stream as a ``message`` event. The stream cannot be
resumed: when it ends, the session is over, and the inbox is closed so the session engine
sees end-of-stream.
"""

from __future__ import annotations

import logging

import trio

from trimcp.http.client import ConnectionPool
from trimcp.http.errors import HTTP_ERRORS, HttpClientError, HttpStatusError
from trimcp.http.url import Endpoint
from trimcp.protocol.sse import EventTooLarge
from trimcp.session.transport import MessageTooLarge
from trimcp.transports.http_client.inbox import Inbox
from trimcp.transports.http_client.messages import describe_outgoing, error_reply, split_inbound
from trimcp.transports.http_client.options import HttpClientOptions
from trimcp.transports.http_client.sse_reader import SseReader

logger = logging.getLogger("trimcp.http_client")

#: Bytes of an error body kept for messages.
_EXCERPT = 4096


class LegacySseClient:
    """One HTTP+SSE session: run :meth:`run` in a task, wait :meth:`wait_ready`, then
    :meth:`send` from the engine's writer."""

    def __init__(
        self, endpoint: Endpoint, options: HttpClientOptions, pool: ConnectionPool, inbox: Inbox
    ) -> None:
        self._endpoint = endpoint
        self._options = options
        self._pool = pool
        self._inbox = inbox
        self._ready = trio.Event()
        self._error: BaseException | None = None
        self._ended = False
        #: Where messages are POSTed, once the server has said.
        self.post_endpoint: Endpoint | None = None

    def _headers(self, accept: str) -> dict[str, str]:
        headers = dict(self._options.headers)
        headers["accept"] = accept
        return headers

    async def wait_ready(self) -> Endpoint:
        """Wait until the ``endpoint`` event arrived; raise what prevented it.

        Bounded: :meth:`run` gives up after ``options.timeout`` without an endpoint.
        """
        await self._ready.wait()
        if self.post_endpoint is None:
            assert self._error is not None
            raise self._error
        return self.post_endpoint

    async def run(self) -> None:
        """Hold the event stream: find the endpoint, then feed messages to the inbox.

        Returns when the stream ends or fails (the inbox is then closed). Cancellation:
        the stream's connection is closed.
        """
        try:
            await self._run_stream()
        except HTTP_ERRORS as exc:
            if not self._ready.is_set():
                self._error = exc
            else:
                logger.info("the HTTP+SSE stream from %s failed: %s", self._endpoint.url, exc)
        finally:
            self._ended = True
            self._ready.set()
            if self._error is None:
                self._error = HttpClientError(
                    f"the HTTP+SSE stream from {self._endpoint.url} ended"
                )
            if self.post_endpoint is not None:
                # The session lived on this stream; the engine must see it end.
                self._inbox.close()

    async def _run_stream(self) -> None:
        options = self._options
        async with self._pool.request(
            "GET",
            self._endpoint,
            self._headers("text/event-stream"),
            head_timeout=options.timeout,
        ) as response:
            if response.status != 200 or response.content_type != "text/event-stream":
                body = await response.read_excerpt(_EXCERPT, options.timeout)
                raise HttpStatusError(
                    response.status,
                    self._endpoint.url,
                    body.decode("utf-8", "replace"),
                    f"expected an event stream (got {response.content_type or 'no body type'})",
                )
            reader = SseReader(
                response,
                max_event_bytes=options.max_message_bytes,
                idle_timeout=options.sse_read_timeout,
            )
            with trio.move_on_after(options.timeout) as waiting:
                await self._find_endpoint(reader)
            if waiting.cancelled_caught:
                raise HttpClientError(
                    f"no endpoint event from {self._endpoint.url} within {options.timeout:g} s"
                )
            self._ready.set()
            await self._pump(reader)

    async def _find_endpoint(self, reader: SseReader) -> None:
        while True:
            event = await reader.next_event()
            if event is None:
                raise HttpClientError(
                    f"the stream from {self._endpoint.url} ended before its endpoint event"
                )
            if isinstance(event, EventTooLarge):
                continue
            if event.event != "endpoint":
                logger.debug("ignoring a %r event before the endpoint event", event.event)
                continue
            try:
                endpoint = self._endpoint.resolve(event.data.strip())
            except ValueError as exc:
                raise HttpClientError(f"the server sent an unusable endpoint: {exc}") from None
            if endpoint.origin != self._endpoint.origin:
                raise HttpClientError(
                    f"the server's endpoint {endpoint.url} is not on the origin of "
                    f"{self._endpoint.url}; refusing to send messages there"
                )
            self.post_endpoint = endpoint
            return

    async def _pump(self, reader: SseReader) -> None:
        while (event := await reader.next_event()) is not None:
            if isinstance(event, EventTooLarge):
                await self._inbox.put(MessageTooLarge(self._options.max_message_bytes))
                continue
            if event.event != "message" or not event.data:
                continue
            for item in split_inbound(event.data.encode("utf-8")):
                await self._inbox.put(item.data)
        logger.info("the HTTP+SSE stream from %s ended", self._endpoint.url)

    async def send(self, data: bytes) -> None:
        """POST one message to the endpoint. A request that cannot be delivered is
        answered locally with an error; nothing is raised for HTTP failures.

        Raises ``trio.ClosedResourceError`` when the stream is gone (the session is over).
        Cancellation: the POST is abandoned; the server may or may not have it.
        """
        endpoint = self.post_endpoint
        if endpoint is None or self._ended:
            raise trio.ClosedResourceError("the HTTP+SSE session has ended")
        info = describe_outgoing(data)
        options = self._options
        headers = self._headers("application/json, text/event-stream")
        headers["content-type"] = "application/json"
        error: HttpClientError | HttpStatusError
        try:
            async with self._pool.request(
                "POST", endpoint, headers, data, head_timeout=options.timeout
            ) as response:
                body = await response.read_excerpt(_EXCERPT, options.timeout)
                if 200 <= response.status < 300:
                    return
                error = HttpStatusError(
                    response.status, endpoint.url, body.decode("utf-8", "replace")
                )
        except HttpClientError as exc:
            error = exc
        logger.warning("POST to %s failed: %s", endpoint.url, error.message)
        for request_id in info.request_ids:
            await self._inbox.put(error_reply(request_id, error))
