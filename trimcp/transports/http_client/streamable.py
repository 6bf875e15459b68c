"""The client side of the Streamable HTTP transport (2025-03-26 and later).

Every message is one POST to the MCP endpoint. A POST carrying a request runs in its own
task (at most ``max_connections`` at once) and ends when the answer has arrived, as a JSON
body or on an SSE stream; everything the server sends on the way goes to the inbox.
Notifications and responses are POSTed by the writer itself, one at a time, so they reach
the server in order (``notifications/initialized`` before the next request).

Session: the ``Mcp-Session-Id`` of the initialize answer and the ``protocolVersion`` of
the initialize result (seen as the bytes pass) are sent as headers on every later
request. After ``notifications/initialized`` the standalone GET stream is opened
(405: the server has none). An answer stream that drops before the answer is resumed
by GET with ``Last-Event-ID`` after the server's ``retry``. A 404 on a request that
carried a session id means the session expired: the stored initialize request and
``notifications/initialized`` are replayed once, without the old id, and the failed
message is resent on the new session; if that is off or fails, the message is answered
with :class:`SessionExpired` and the inbox is closed, which ends the session.
Any other failure answers the affected request with an error (see :mod:`.errors`).
"""

from __future__ import annotations

import logging

import trio

from trimcp.errors import INTERNAL_ERROR, LocalError, McpError
from trimcp.http.client import ConnectionPool, HttpConnection, Response
from trimcp.http.errors import (
    HTTP_ERRORS,
    AuthorizationRefused,
    HttpClientError,
    HttpStatusError,
    SessionExpired,
)
from trimcp.http.url import Endpoint
from trimcp.protocol.jsonrpc import RequestId
from trimcp.transports.http_client.answers import EXCERPT, AnswerReader, Sink, StreamEnd
from trimcp.transports.http_client.inbox import Inbox
from trimcp.transports.http_client.legacy import LegacySseClient
from trimcp.transports.http_client.messages import (
    INITIALIZED,
    Inbound,
    OutgoingInfo,
    describe_outgoing,
    protocol_version_of,
    split_inbound,
)
from trimcp.transports.http_client.options import HttpClientOptions
from trimcp.transports.http_client.sse_reader import SseReader
from trimcp.transports.http_client.stateless import StatelessRequests
from trimcp.transports.http_client.tasks import TaskSet

#: Statuses a balancer or proxy answers when no server could take the request just now.
_GATEWAY_ERRORS = frozenset((502, 503, 504))

logger = logging.getLogger("trimcp.http_client")

ACCEPT_POST = "application/json, text/event-stream"
ACCEPT_SSE = "text/event-stream"
_MAX_SESSION_ID = 1024


class _Expired(Exception):
    """Internal: the server answered 404 to a request carrying our session id."""


class _Reauthorize(Exception):
    """Internal: the server answered 401/403; get a better token and send again."""

    def __init__(
        self,
        status: int,
        challenge: str | None,
        used: str | None,
        body: bytes,
        nonce: str | None = None,
    ) -> None:
        super().__init__(status)
        self.status = status
        self.challenge = challenge
        self.used = used
        self.body = body
        #: The response's ``DPoP-Nonce`` (RFC 9449 §9).
        self.nonce = nonce


#: Rounds of "401/403, new token, send again" one request may take.
MAX_AUTH_ROUNDS = 4


class _FallBack(Exception):
    """Internal: POSTing ``initialize`` got 400/404/405; try the legacy transport."""

    def __init__(self, status: int) -> None:
        super().__init__(status)
        self.status = status


class _Post:
    """A request's POST under way: its scope, and once the request is written, its
    connection (for a 2026 ``tools/call``, which may be answered with a task)."""

    __slots__ = ("connection", "linger", "scope")

    def __init__(self, scope: trio.CancelScope, *, linger: bool) -> None:
        self.scope = scope
        #: Cancelled, it still reads an answer on its way (see ``_leave_post``).
        self.linger = linger
        self.connection: HttpConnection | None = None

    def sent(self, connection: HttpConnection) -> None:
        self.connection = connection


class StreamableHttpClient:
    """The state of one Streamable HTTP session; used by :class:`HttpClientTransport`."""

    def __init__(
        self,
        endpoint: Endpoint,
        options: HttpClientOptions,
        pool: ConnectionPool,
        inbox: Inbox,
        tasks: TaskSet,
    ) -> None:
        self._endpoint = endpoint
        self._options = options
        self._pool = pool
        self._inbox = inbox
        self._tasks = tasks
        self._answers = AnswerReader(endpoint, options, inbox)
        self._slots = trio.Semaphore(options.max_connections)
        self._posts: dict[RequestId, _Post] = {}
        self._reinit_lock = trio.Lock()
        self._get_scope: trio.CancelScope | None = None
        self._init_request: bytes | None = None
        self._init_id: RequestId | None = None
        self._initialized_note: bytes | None = None
        self._expired = False
        #: While the initialize POST may still turn into a legacy fallback, others wait.
        self._mode_known: trio.Event | None = None
        #: The session id the server gave (None: no session, or not yet).
        self.session_id: str | None = None
        #: The protocol version of the initialize result, sent as ``MCP-Protocol-Version``.
        self.protocol_version: str | None = None
        #: The 2024-11-05 transport in use after a fallback.
        self.legacy: LegacySseClient | None = None
        #: Re-initializations done after a 404 (for tests and statistics).
        self.reinitializations = 0
        #: What 2026-07-28 (stateless) requests need: their headers, their streams.
        self._stateless = StatelessRequests()
        #: OAuth state of this connection (``options.auth``), and the header it gives.
        self.auth = options.auth.session(endpoint.url, tasks.spawn) if options.auth else None
        self._authorization: str | None = None

    # --- outgoing -----------------------------------------------------------------------

    async def send(self, data: bytes) -> None:
        """Send one message (called by the engine's writer).

        Requests: waits for a free slot, then POSTs in a task. Others: POSTs here and
        waits for the server's acknowledgement (bounded by ``timeout``).
        Cancellation: a request already handed to its task goes on.
        """
        info = describe_outgoing(data)
        if info.cancelled_id is not None and info.cancelled_id == self._init_id:
            self._cancel_post(info.cancelled_id)
        if info.cancelled_id is not None and info.cancelled_id in self._stateless.in_flight:
            # 2026-07-28: leaving the request's stream is the cancellation; no notice.
            await self._leave_post(info.cancelled_id)
            return
        if self._mode_known is not None:
            await self._mode_known.wait()
        if self.legacy is not None:
            await self.legacy.send(data)
            return
        if info.request_ids:
            await self._start_request(data, info)
            return
        if info.method == INITIALIZED:
            self._initialized_note = data
        await self._post_other(data, info)
        if info.method == INITIALIZED:
            self._start_get_stream()
        if info.cancelled_id is not None:
            # The engine has forgotten the request; its stream only holds a connection.
            self._cancel_post(info.cancelled_id)

    async def _start_request(self, data: bytes, info: OutgoingInfo) -> None:
        await self._slots.acquire()
        if info.modern_version is not None:
            self._stateless.in_flight.add(info.request_ids[0])
        if info.is_initialize:
            self._init_request = data
            self._init_id = info.request_ids[0]
            if self._options.legacy_fallback and self.protocol_version is None:
                # Set by the initialize task once it knows (it runs; nothing can stop
                # it between here and its start without closing the transport).
                self._mode_known = trio.Event()
        scope = trio.CancelScope()
        post = _Post(scope, linger=info.modern_version is not None and info.method == "tools/call")
        for request_id in info.request_ids:
            self._posts[request_id] = post
        self._tasks.spawn(self._run_request, data, info, scope, scope=scope)

    def _cancel_post(self, request_id: RequestId) -> None:
        post = self._posts.get(request_id)
        if post is not None:
            post.scope.cancel()

    async def _leave_post(self, request_id: RequestId) -> None:
        """Cancel a 2026 request: the server takes the client leaving its stream as the
        cancel. A ``tools/call`` may have been answered already with a task that only
        that answer names: then the connection is half-closed (the server still sees the
        client leave, and cancels a task whose answer it has not written) and the answer
        on its way is still read, for ``late_answer_timeout`` at most, and handed to the
        session, which cancels the task it names (docs/concurrency.md). Otherwise, or on
        a stream that cannot half-close (TLS), the POST is closed at once."""
        post = self._posts.get(request_id)
        if post is None:
            return
        connection = post.connection
        if post.linger and connection is not None and await connection.stop_sending():
            scope = post.scope
            scope.deadline = min(
                scope.deadline, trio.current_time() + self._options.late_answer_timeout
            )
            return
        post.scope.cancel()

    async def _run_request(self, data: bytes, info: OutgoingInfo, scope: trio.CancelScope) -> None:
        pending = set(info.request_ids)
        try:
            await self._request_exchange(data, info, pending)
        except Exception as exc:
            # Never leave a caller waiting because of a bug here.
            logger.exception("the HTTP transport failed on a request")
            await self._answers.fail(
                pending, LocalError(INTERNAL_ERROR, f"HTTP client transport failure: {exc}")
            )
        finally:
            for request_id in info.request_ids:
                post = self._posts.get(request_id)
                if post is not None and post.scope is scope:
                    del self._posts[request_id]
                self._stateless.in_flight.discard(request_id)
            self._slots.release()
            if info.is_initialize and self._mode_known is not None:
                self._mode_known.set()
                self._mode_known = None

    async def _request_exchange(
        self, data: bytes, info: OutgoingInfo, pending: set[RequestId]
    ) -> None:
        attempt = rounds = 0
        while attempt < 2:
            attempt += 1
            session_id = self.session_id
            try:
                end = await self._post_request(data, info, pending)
            except _Reauthorize as again:
                rounds += 1
                if rounds > MAX_AUTH_ROUNDS:
                    # Answered, not left to time out (a caller in auto mode would take
                    # the silence for an older server and log in all over again).
                    await self._answers.fail(
                        pending,
                        AuthorizationRefused(
                            again.status,
                            self._endpoint.url,
                            again.body.decode("utf-8", "replace"),
                            f"still refused after {MAX_AUTH_ROUNDS} rounds of authorization; "
                            "check the scopes and the account the server expects",
                        ),
                    )
                    return
                if await self._reauthorize(again, pending):
                    attempt -= 1
                    continue
                return
            except _Expired:
                if attempt == 1 and await self._reinitialize(session_id):
                    continue
                await self._session_lost(pending)
                return
            except _FallBack as fallback:
                await self._fall_back(data, fallback.status, pending)
                return
            if end is not None:
                await self._resume(info, pending, end)
            return

    async def _post_request(
        self, data: bytes, info: OutgoingInfo, pending: set[RequestId]
    ) -> StreamEnd | None:
        options = self._options
        session_id = None if info.is_initialize else self.session_id
        modern = info.modern_version is not None
        await self._update_authorization()
        headers = self._headers(ACCEPT_POST, body=True, session=not (info.is_initialize or modern))
        if modern:
            headers.update(self._stateless.headers(info))
        post = self._posts.get(info.request_ids[0]) if info.request_ids else None
        try:
            async with self._pool.request(
                "POST",
                self._endpoint,
                headers,
                data,
                head_timeout=options.sse_read_timeout,
                on_sent=post.sent if post is not None and post.linger else None,
            ) as response:
                status = response.status
                if status in (401, 403) and self.auth is not None:
                    body = await response.read_excerpt(EXCERPT, options.timeout)
                    raise _Reauthorize(
                        status,
                        response.headers.get("www-authenticate"),
                        headers.get("authorization"),
                        body,
                        response.headers.get("dpop-nonce"),
                    )
                if status == 404 and session_id is not None:
                    raise _Expired
                if info.is_initialize and self._mode_known is not None:
                    if status in (400, 404, 405):
                        raise _FallBack(status)
                    self._mode_known.set()
                    self._mode_known = None
                if not 200 <= status < 300:
                    await self._answers.fail_status(response, pending)
                    return None
                if info.is_initialize:
                    self._take_session_id(response)
                sink = self._sink_for(info)
                if response.content_type == "application/json":
                    await self._answers.read_json(response, pending, sink)
                    return None
                if response.content_type == "text/event-stream":
                    return await self._answers.read_sse(response, pending, sink)
                detail = (
                    "the server accepted the request but sent no answer"
                    if status == 202 or response.headers.get("content-length") == "0"
                    else f"unexpected content type {response.content_type!r}"
                )
                await self._answers.fail(
                    pending, HttpStatusError(status, self._endpoint.url, "", detail)
                )
                return None
        except HttpClientError as exc:
            await self._answers.fail(pending, exc)
            return None

    async def _post_other(self, data: bytes, info: OutgoingInfo) -> None:
        """POST a notification or response and wait for the server's 202."""
        options = self._options
        authorized = False
        for attempt in (1, 2):
            session_id = self.session_id
            await self._update_authorization()
            headers = self._headers(ACCEPT_POST, body=True)
            try:
                async with self._pool.request(
                    "POST",
                    self._endpoint,
                    headers,
                    data,
                    head_timeout=options.timeout,
                ) as response:
                    # Bodies of answers to notifications mean nothing; read a bounded
                    # part so a small one leaves the connection reusable.
                    body = await response.read_excerpt(EXCERPT, options.timeout)
                    status = response.status
                    challenge = response.headers.get("www-authenticate")
                    nonce = response.headers.get("dpop-nonce")
            except HttpClientError as exc:
                logger.warning("could not send %s: %s", info.method or "a message", exc.message)
                return
            if status in (401, 403) and self.auth is not None and not authorized:
                authorized = True
                again = _Reauthorize(status, challenge, headers.get("authorization"), body, nonce)
                if await self._reauthorize(again, set()):
                    continue
                return
            if status == 404 and session_id is not None and attempt == 1:
                if await self._reinitialize(session_id):
                    if info.method == INITIALIZED:
                        return  # the re-initialization sent it already
                    continue
                await self._session_lost(set())
                return
            if not 200 <= status < 300:
                logger.warning(
                    "the server refused %s: HTTP %d %s",
                    info.method or "a message",
                    status,
                    body[:200].decode("utf-8", "replace"),
                )
            return

    async def _update_authorization(self) -> None:
        if self.auth is not None:
            self._authorization = await self.auth.authorization()

    async def _reauthorize(self, again: _Reauthorize, pending: set[RequestId]) -> bool:
        """Get a better token after a 401/403; False (``pending`` answered with the
        reason) when that failed."""
        from trimcp.auth.errors import AuthError

        assert self.auth is not None
        try:
            if again.nonce is not None:
                self.auth.remember_dpop_nonce(again.nonce)
            await self.auth.challenge(again.status, again.challenge, again.used)
        except AuthError as exc:
            from trimcp.auth.discovery import parse_challenge

            logger.warning("authorization failed: %s", exc)
            # The server's own words (error_description) say what to fix: keep them.
            detail = str(exc)
            said = parse_challenge(again.challenge).reason
            if said is not None and said not in detail:
                detail = f"{detail} (the server said: {said})"
            await self._answers.fail(
                pending,
                AuthorizationRefused(
                    again.status,
                    self._endpoint.url,
                    again.body.decode("utf-8", "replace"),
                    detail,
                ),
            )
            return False
        await self._update_authorization()
        return True

    def _headers(
        self, accept: str, *, body: bool = False, session: bool = True, method: str = "POST"
    ) -> dict[str, str]:
        headers = dict(self._options.headers)
        if self._authorization is not None:
            headers["authorization"] = self._authorization
            if self.auth is not None and self._authorization.startswith("DPoP "):
                # A DPoP token goes with a fresh proof each time.
                headers.update(
                    self.auth.proof_headers(method, self._endpoint.url, self._authorization)
                )
        headers["accept"] = accept
        if body:
            headers["content-type"] = "application/json"
        if session and self.session_id is not None:
            headers["mcp-session-id"] = self.session_id
        if session and self.protocol_version is not None:
            headers["mcp-protocol-version"] = self.protocol_version
        return headers

    def _take_session_id(self, response: Response) -> None:
        session_id = response.headers.get("mcp-session-id")
        if session_id is None:
            return
        if (
            not session_id
            or len(session_id) > _MAX_SESSION_ID
            or any(not 0x21 <= ord(c) <= 0x7E for c in session_id)
        ):
            logger.warning("ignoring a session id with characters outside visible ASCII")
            return
        self.session_id = session_id

    # --- incoming -----------------------------------------------------------------------

    def _sink_for(self, info: OutgoingInfo) -> Sink:
        if info.method == "tools/list" and info.modern_version is not None:
            return self._stateless.tools_list_sink(self._answers.deliver)
        if not info.is_initialize:
            return self._answers.deliver

        async def deliver_initialize(item: Inbound, pending: set[RequestId]) -> None:
            if item.answers == self._init_id and item.answers in pending:
                version = protocol_version_of(item.result)
                if version is not None:
                    # Before the engine sees the result: its next message needs the header.
                    self.protocol_version = version
            await self._answers.deliver(item, pending)

        return deliver_initialize

    async def _resume(self, info: OutgoingInfo, pending: set[RequestId], end: StreamEnd) -> None:
        """Reconnect by GET with ``Last-Event-ID`` until the answers arrive (bounded)."""
        options = self._options
        last_event_id: str = end.last_event_id or ""
        retry_ms = end.retry_ms
        failures = 0
        last_error: McpError | None = end.error
        sink = self._sink_for(info)
        while pending:
            await trio.sleep(options.reconnect_wait(retry_ms, failures))
            headers = self._headers(ACCEPT_SSE, method="GET")
            headers["last-event-id"] = last_event_id
            session_id = self.session_id
            result: StreamEnd | None = None
            try:
                async with self._pool.request(
                    "GET", self._endpoint, headers, head_timeout=options.timeout
                ) as response:
                    if response.status == 404 and session_id is not None:
                        await self._answers.fail(
                            pending,
                            SessionExpired("the session expired while an answer was awaited"),
                        )
                        return
                    if response.status in _GATEWAY_ERRORS:
                        # A balancer with no replica to hand the resume to right now (one
                        # just died): a later attempt may reach one (counted as failed).
                        excerpt = await response.read_excerpt(EXCERPT, options.timeout)
                        body = excerpt.decode("utf-8", "replace").strip()
                        detail = f"{response.reason} ({body[:200]})" if body else response.reason
                        raise HttpStatusError(response.status, self._endpoint.url, body, detail)
                    if response.status != 200 or response.content_type != "text/event-stream":
                        await self._answers.fail_status(response, pending)
                        return
                    result = await self._answers.read_sse(response, pending, sink, last_event_id)
            except (HttpClientError, HttpStatusError) as exc:
                last_error = exc
                failures += 1
            else:
                if result is None:
                    return
                last_event_id = result.last_event_id or last_event_id
                retry_ms = result.retry_ms if result.retry_ms is not None else retry_ms
                last_error = result.error
                failures = 0 if result.progressed else failures + 1
            if failures >= options.max_reconnect_attempts:
                detail = f": {last_error.message}" if last_error is not None else ""
                await self._answers.fail(
                    pending,
                    HttpClientError(
                        f"the answer stream could not be resumed after {failures} attempts{detail}"
                    ),
                )
                return

    # --- the standalone GET stream ------------------------------------------------------

    def _start_get_stream(self) -> None:
        # Only with a session: without one the server cannot address a stream to us.
        if self.session_id is not None and self._get_scope is None and not self._tasks.closed:
            self._get_scope = self._tasks.spawn(self._run_get_stream)

    def _stop_get_stream(self) -> None:
        if self._get_scope is not None:
            self._get_scope.cancel()
            self._get_scope = None

    async def _run_get_stream(self) -> None:
        """Hold the server-to-client stream; reconnect when it ends (bounded)."""
        options = self._options
        last_event_id: str | None = None
        retry_ms: int | None = None
        failures = 0
        authorized = False
        while True:
            await self._update_authorization()
            headers = self._headers(ACCEPT_SSE, method="GET")
            if last_event_id is not None:
                headers["last-event-id"] = last_event_id
            progressed = False
            again: _Reauthorize | None = None
            try:
                async with self._pool.request(
                    "GET", self._endpoint, headers, head_timeout=options.timeout
                ) as response:
                    if response.status in (401, 403) and self.auth is not None and not authorized:
                        again = _Reauthorize(
                            response.status,
                            response.headers.get("www-authenticate"),
                            headers.get("authorization"),
                            b"",
                            response.headers.get("dpop-nonce"),
                        )
                    elif response.status != 200 or response.content_type != "text/event-stream":
                        # 405: the server offers no stream. Anything else: it will not.
                        logger.debug("no GET stream: HTTP %d", response.status)
                        return
                    reader = SseReader(
                        response,
                        max_event_bytes=options.max_message_bytes,
                        idle_timeout=options.sse_read_timeout,
                    )
                    try:
                        await self._answers.pump(reader)
                    finally:
                        last_event_id = reader.last_event_id or last_event_id
                        retry_ms = reader.retry_ms if reader.retry_ms is not None else retry_ms
                        progressed = reader.progressed
            except HttpClientError as exc:
                logger.debug("the GET stream failed: %s", exc.message)
            if again is not None:
                authorized = True
                if await self._reauthorize(again, set()):
                    continue
                return
            failures = 0 if progressed else failures + 1
            if failures >= options.max_reconnect_attempts:
                logger.info("giving up the GET stream after %d attempts", failures)
                return
            await trio.sleep(options.reconnect_wait(retry_ms, failures))

    # --- session expiry and fallback ------------------------------------------------------

    async def _reinitialize(self, expired: str | None) -> bool:
        """Start a new session after a 404 for ``expired``; True if the message may be
        resent. Concurrent callers for the same expired session wait for one attempt."""
        if not self._options.reinitialize or self._init_request is None:
            return False
        async with self._reinit_lock:
            if self._expired:
                return False
            if self.session_id != expired:
                return True  # another task already started a new session
            self._stop_get_stream()
            self.session_id = None
            ok = False
            with trio.move_on_after(self._options.timeout):
                ok = await self._replay_initialize()
            if not ok:
                self._expired = True
                return False
            self.reinitializations += 1
            self._start_get_stream()
            return True

    async def _replay_initialize(self) -> bool:
        assert self._init_request is not None
        assert self._init_id is not None
        options = self._options
        pending: set[RequestId] = {self._init_id}
        answer: list[Inbound] = []

        async def capture(item: Inbound, pending: set[RequestId]) -> None:
            if item.answers == self._init_id:
                pending.discard(self._init_id)
                answer.append(item)
            elif item.answers is None:
                await self._inbox.put(item.data)

        try:
            async with self._pool.request(
                "POST",
                self._endpoint,
                self._headers(ACCEPT_POST, body=True, session=False),
                self._init_request,
                head_timeout=options.timeout,
            ) as response:
                if not 200 <= response.status < 300:
                    logger.warning("re-initialization refused: HTTP %d", response.status)
                    return False
                self._take_session_id(response)
                if response.content_type == "application/json":
                    body = await response.read_all(options.max_message_bytes, options.timeout)
                    for item in split_inbound(body):
                        await capture(item, pending)
                elif response.content_type == "text/event-stream":
                    await self._answers.read_sse(response, pending, capture)
        except HttpClientError as exc:
            logger.warning("re-initialization failed: %s", exc.message)
            return False
        version = protocol_version_of(answer[0].result) if answer else None
        if version is None or version != self.protocol_version:
            logger.warning(
                "re-initialization did not give a result for version %s", self.protocol_version
            )
            return False
        if self._initialized_note is not None:
            try:
                async with self._pool.request(
                    "POST",
                    self._endpoint,
                    self._headers(ACCEPT_POST, body=True),
                    self._initialized_note,
                    head_timeout=options.timeout,
                ) as response:
                    await response.read_excerpt(EXCERPT, options.timeout)
                    if not 200 <= response.status < 300:
                        return False
            except HttpClientError:
                return False
        logger.info("the session expired; started a new one")
        return True

    async def _session_lost(self, pending: set[RequestId]) -> None:
        """The session is gone for good: answer ``pending`` and end the session."""
        await self._answers.fail(pending, SessionExpired("the server ended the session (HTTP 404)"))
        self._expired = True
        self._inbox.close()

    async def _fall_back(self, data: bytes, status: int, pending: set[RequestId]) -> None:
        """Switch to the 2024-11-05 HTTP+SSE transport and send ``initialize`` there."""
        legacy = LegacySseClient(self._endpoint, self._options, self._pool, self._inbox)
        self._tasks.spawn(legacy.run)
        try:
            await legacy.wait_ready()
        except HTTP_ERRORS as exc:
            await self._answers.fail(
                pending,
                HttpClientError(
                    f"HTTP {status} from {self._endpoint.url} for initialize, and no HTTP+SSE "
                    f"transport there either: {exc.message}",
                    {"httpStatus": status},
                ),
            )
            return
        logger.info("%s speaks the 2024-11-05 HTTP+SSE transport; using it", self._endpoint.url)
        self.legacy = legacy
        pending.clear()
        await legacy.send(data)

    # --- closing --------------------------------------------------------------------------

    async def terminate(self) -> None:
        """DELETE the session, if there is one (bounded by ``delete_timeout``; 405 is fine)."""
        if self.session_id is None or self.legacy is not None or self._expired:
            return
        options = self._options
        with trio.move_on_after(options.delete_timeout):
            try:
                async with self._pool.request(
                    "DELETE",
                    self._endpoint,
                    self._headers(ACCEPT_POST, method="DELETE"),
                    head_timeout=options.delete_timeout,
                ) as response:
                    await response.read_excerpt(EXCERPT, options.delete_timeout)
                    if not (200 <= response.status < 300 or response.status in (404, 405)):
                        logger.info("DELETE of the session got HTTP %d", response.status)
            except (HttpClientError, trio.ClosedResourceError) as exc:
                logger.info("could not DELETE the session: %s", exc)
