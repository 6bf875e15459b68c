"""The ASGI application: one Streamable HTTP endpoint (POST, GET, DELETE), plus lifespan.

Every request passes the same gate, in this order, before anything is read or allocated:
path (404), duplicated headers (400), ``Host`` (421), ``Origin`` (403), authentication (the
hook's answer), ``MCP-Protocol-Version`` (400), method (405), media types (415, 406),
session id (400 missing, 404 unknown or another principal's), ``Content-Length`` (413).
Then the body is read within its size and time bounds, parsed, and handed to the session.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Hashable
from typing import Any, cast

import trio

from trimcp.auth.principal import AuthInfo
from trimcp.errors import CONNECTION_CLOSED, SessionClosed
from trimcp.http.security import (
    accepts,
    host_allowed,
    is_json_content_type,
    origin_allowed,
)
from trimcp.protocol.jsonrpc import (
    Message,
    Notification,
    Request,
    RequestId,
    dump_json,
    notification_object,
    parse_json,
    request_object,
)
from trimcp.protocol.lifecycle import Role
from trimcp.protocol.negotiated import IMPLICIT_CLIENT_NAME
from trimcp.protocol.versions import (
    HTTP_DEFAULT_VERSION,
    STATELESS_VERSIONS,
    SUPPORTED_VERSIONS,
    V2025_11_25,
    allows_batches,
)
from trimcp.session import Session, SessionHandler, open_session
from trimcp.session.lifespan import open_handler_lifespan
from trimcp.session.stateless import StatelessHandler
from trimcp.session.transport import Decoded
from trimcp.stores.replay import SharesReplayCache
from trimcp.transports.http_server import legacy
from trimcp.transports.http_server import modern as modern_http
from trimcp.transports.http_server.asgi import (
    BODY,
    BODY_BUFFERED,
    BOUNDED_SEND,
    HEAD_MEMO,
    JSON_TYPE,
    NORMALIZED_HEADERS,
    RESPOND,
    SSE_HEADERS,
    Headers,
    HttpRejection,
    Receive,
    RequestHeaders,
    Respond,
    Scope,
    Send,
    buffered_body,
    error_body,
    extensions,
    parse_body,
    read_body,
    reject,
    respond,
    session_gone,
    wait_for_disconnect,
)
from trimcp.transports.http_server.budgets import StreamBudgets
from trimcp.transports.http_server.config import HttpServerConfig, with_declared_auth
from trimcp.transports.http_server.manager import (
    SESSION_HEADER,
    SessionEntry,
    SessionManager,
    is_session_id,
)
from trimcp.transports.http_server.modern import ModernEndpoint
from trimcp.transports.http_server.relay import ReplicaRelay
from trimcp.transports.http_server.sharing import SharedSessions
from trimcp.transports.http_server.slow import SlowRequests
from trimcp.transports.http_server.streams import (
    OutStream,
    Sink,
    pump,
    pump_until_disconnect,
)
from trimcp.transports.http_server.tracecontext import trace_adopter
from trimcp.transports.http_server.transport import HttpSessionTransport

logger = logging.getLogger("trimcp.http")

#: In a kept head's memo (see HEAD_MEMO): a POST with this head passed the checks of the
#: head alone (POST headers, session id form, Content-Length).
_POST_CHECKED = "post checked"
#: Scheduler passes a POST stream's priming event waits to share a write with the answer.
PRIMING_PASSES = 8
#: The refusal of a ``Last-Event-ID`` the session's event store does not know.
UNKNOWN_EVENT_ID = (
    "Unknown Last-Event-ID: no event of this session has that id (never issued, expired, "
    "or of a stream with nothing more to send); open the stream again without it"
)
_STATELESS_INIT_ID = "trimcp-stateless-initialize"
#: How many allowed ``Host`` values the app remembers (cleared when full).
_MAX_HOSTS_KEPT = 64
#: A scope without ASGI extensions (read-only).
_NO_EXTENSIONS: dict[str, Any] = {}


def handler_factory(
    handler: SessionHandler | Callable[[], SessionHandler],
) -> Callable[[], SessionHandler]:
    """A factory for per-session handlers: ``handler`` itself if it is one, shared."""
    if hasattr(handler, "handle_request"):
        shared = cast(SessionHandler, handler)
        return lambda: shared
    return handler


class McpHttpApp:
    """The ASGI app made by :func:`create_asgi_app`.

    Its session manager must run while requests are served: the ASGI lifespan protocol
    starts and stops it, or run it yourself with :meth:`run` (in your nursery) and stop it
    with :meth:`shutdown`. Requests that arrive while it is not running get 503.
    """

    def __init__(
        self,
        factory: Callable[[], SessionHandler],
        config: HttpServerConfig,
        lifespan_of: object = None,
    ) -> None:
        self.config = config
        self.manager = SessionManager(factory, config)
        store = config.store
        if config.auth is not None and store is not None:
            # An authorization server of its own keeps its logins where every replica
            # and worker sharing this store finds them.
            config.auth.use_store(store)
        #: Sessions shared with other replicas through ``config.store`` (None: local only).
        self.sharing = (
            SharedSessions(self.manager, store, self._adopt)
            if store is not None and store.shared
            else None
        )
        #: Relays answers and cancels posted here for another replica (shared store only).
        self.relay = (
            ReplicaRelay(self.manager, store)
            if store is not None and self.sharing is not None
            else None
        )
        self._factory = factory
        #: What requests may hold open (follows, listen streams), across replicas when
        #: the store is shared.
        self.budgets = StreamBudgets(config, store)
        #: DPoP proofs already used, as every replica sees them (None: the checker's own).
        self._replay = store.replay_cache() if isinstance(store, SharesReplayCache) else None
        # A shared handler with a lifespan (trimcp.Server): entered with the manager.
        self._lifespan_of = lifespan_of
        # A shared handler that serves 2026-07-28 requests too (trimcp.Server).
        #: Starts a disconnect watcher for a request still unanswered after a short grace
        #: (2026 requests, 2025 JSON-mode POSTs); run by :meth:`run`.
        self.slow = SlowRequests()
        #: Nobody is authenticated (neither ``auth`` nor ``authenticate``; frozen config).
        self._open = config.auth is None and config.authenticate is None
        #: ``Host`` values found allowed (the config is frozen): a client repeats its own.
        self._hosts_allowed: set[str | None] = set()
        self._modern = (
            ModernEndpoint(lifespan_of, config, self.manager, self.budgets, self.slow)
            if isinstance(lifespan_of, StatelessHandler)
            else None
        )

    # --- lifetime ---------------------------------------------------------------------------

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Run the session manager until cancelled or :meth:`shutdown` completes.

        The handler's lifespan (when it has one) is entered first and closed after the
        sessions. Cancellation: open sessions close with the engine's bounded close sequence.
        """
        async with open_handler_lifespan(self._lifespan_of):
            auth = self.config.auth
            async with trio.open_nursery() as nursery:
                if auth is not None:
                    await nursery.start(auth.run)  # the token verifier's key refresh
                await nursery.start(self.slow.run)
                if self.relay is not None:
                    await nursery.start(self.relay.run, self._lifespan_of)
                await self.manager.run(task_status=task_status)
                nursery.cancel_scope.cancel()

    async def shutdown(self) -> None:
        """Close every session (bounded by ``config.shutdown_bound``), then stop :meth:`run`.

        Streams end as their sessions close, so the HTTP server can then stop at once;
        2026-07-28 listen streams end with their result.
        """
        if self._modern is not None:
            self._modern.close()
        await self.manager.shutdown()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        kind = scope["type"]
        if kind == "http":
            await self.http(scope, receive, send)
        elif kind == "lifespan":
            await self._lifespan(receive, send)
        elif kind == "websocket":
            await send({"type": "websocket.close", "code": 1008})

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        message = await receive()
        if message["type"] != "lifespan.startup":
            return
        if self.manager.running:  # run by serve_http or by the user: they stop it too
            await send({"type": "lifespan.startup.complete"})
            await receive()
            await send({"type": "lifespan.shutdown.complete"})
            return
        async with trio.open_nursery() as nursery:
            await nursery.start(self.run)
            await send({"type": "lifespan.startup.complete"})
            await receive()  # lifespan.shutdown
            await self.manager.shutdown()
            nursery.cancel_scope.cancel()
        await send({"type": "lifespan.shutdown.complete"})

    # --- the gate ---------------------------------------------------------------------------

    async def http(self, scope: Scope, receive: Receive, send: Send) -> None:
        """The app for an ``http`` scope (a server that only serves those, as the lean
        engine does, calls this directly: one frame fewer per request)."""
        config = self.config
        path: str = scope["path"]
        root: str = scope.get("root_path", "")
        if root and path.startswith(root):
            path = path[len(root) :]
        try:
            if path == config.health_path and scope["method"] in ("GET", "HEAD"):
                await self._health(send)
                return
            auth = config.auth
            if auth is not None and path in auth.metadata_paths:
                await _metadata(scope, send, auth.metadata_body)
            elif auth is not None and path in auth.endpoint_paths:
                # An authorization server of its own (trimcp.authserver): the Host check
                # holds; Origin is its own business (CORS for clients, CSRF for consent).
                if not host_allowed(RequestHeaders(scope["headers"]).get(b"host"), config.hosts):
                    raise HttpRejection(421, "Host not allowed")
                await auth.serve_endpoint(path, scope, receive, send)
            elif path == config.path:
                headers = self._gate(scope)
                # (an open server: no coroutine to learn that nobody is authenticated)
                principal = None if self._open else await self._authenticate(scope)
                version = headers.get(b"mcp-protocol-version")
                if scope["method"] == "POST" and (version is None or version in SUPPORTED_VERSIONS):
                    # (what _endpoint decides for a session-era POST, decided here: one
                    # coroutine fewer per call)
                    await self._post(scope, receive, send, headers, principal)
                else:
                    await self._endpoint(scope, receive, send, headers, principal)
            elif config.legacy_sse and path in (
                config.legacy_sse_path,
                config.legacy_messages_path,
            ):
                headers = self._gate(scope)
                principal = await self._authenticate(scope)
                await legacy.handle(self, path, scope, receive, send, headers, principal)
            else:
                raise HttpRejection(404, "Not found")
        except HttpRejection as rejection:
            await reject(send, rejection)

    async def _health(self, send: Send) -> None:
        # Before the Host gate: balancers and orchestrators probe by address. 503 while
        # stopping, so a balancer takes this replica out before its sessions close, and
        # while the store is unavailable (as its last call found: no call per probe).
        manager = self.manager
        store = self.config.store
        problem = store.problem() if store is not None else None
        answer: dict[str, object]
        if not manager.running:
            answer = {"status": "stopping"}
        elif problem is not None:
            answer = {"status": "store unavailable", "store": problem}
        else:
            answer = {"status": "ok"}
        status = 200 if answer["status"] == "ok" else 503
        body = dump_json({**answer, "sessions": len(manager)})
        await respond(
            send, status, body, [(b"cache-control", b"no-store")], content_type=b"application/json"
        )

    def _gate(self, scope: Scope) -> RequestHeaders:
        config = self.config
        # A head the engine keeps (its client repeats it): read once (see HEAD_MEMO).
        memo = scope.get(HEAD_MEMO)
        headers = None if memo is None else memo.get("headers")
        if headers is None:
            engine = scope.get("extensions") or _NO_EXTENSIONS
            headers = RequestHeaders(scope["headers"], normalized=NORMALIZED_HEADERS in engine)
            if memo is not None:
                memo["headers"] = headers
        if headers.duplicate is not None:
            name = headers.duplicate.decode("latin-1")
            raise HttpRejection(400, f"Repeated {name} header")
        host = headers.get(b"host")
        if host not in self._hosts_allowed:
            if not host_allowed(host, config.hosts):
                raise HttpRejection(421, "Host not allowed")
            if len(self._hosts_allowed) >= _MAX_HOSTS_KEPT:
                self._hosts_allowed.clear()
            self._hosts_allowed.add(host)
        origin = headers.get(b"origin")
        if origin is not None and not origin_allowed(origin, config.allowed_origins, config.hosts):
            raise HttpRejection(403, "Origin not allowed")
        return headers

    async def _authenticate(self, scope: Scope) -> Hashable | None:
        auth = self.config.auth
        if auth is not None:
            return await auth.authenticate(scope, replay=self._replay)
        hook = self.config.authenticate
        if hook is None:
            return None
        return await hook(scope)

    async def _endpoint(
        self,
        scope: Scope,
        receive: Receive,
        send: Send,
        headers: RequestHeaders,
        principal: Hashable | None,
    ) -> None:
        version = headers.get(b"mcp-protocol-version")
        method = scope["method"]
        if (
            self._modern is not None
            and version is not None
            # (modern_http.claims, inlined: once per POST)
            and (version in STATELESS_VERSIONS or version not in SUPPORTED_VERSIONS)
        ):
            # 2026-07-28 (by its header, or maybe by its body: an unknown version in the
            # header of a 2026 request is answered with the versions we speak).
            if method == "POST":
                await self._post_modern(scope, receive, send, headers, principal, version)
                return
            if modern_http.claims(version):
                raise HttpRejection(
                    405,
                    "2026-07-28 has no GET or DELETE: send each request as a POST",
                    headers=[(b"allow", b"POST")],
                )
        if version is not None and version not in SUPPORTED_VERSIONS:
            raise HttpRejection(400, f"Unsupported MCP-Protocol-Version: {version[:40]}")
        if method == "POST":
            await self._post(scope, receive, send, headers, principal)
        elif method == "GET" and not self.config.stateless:
            await self._get(receive, send, headers, principal)
        elif method == "DELETE" and not self.config.stateless:
            await self._delete(send, headers, principal)
        else:
            allow = b"POST" if self.config.stateless else b"GET, POST, DELETE"
            raise HttpRejection(405, "Method not allowed", headers=[(b"allow", allow)])

    async def _session(self, headers: RequestHeaders, principal: Hashable | None) -> SessionEntry:
        session_id = headers.get(SESSION_HEADER)
        if session_id is None:
            raise HttpRejection(400, "Missing Mcp-Session-Id header")
        if not is_session_id(session_id):
            raise session_gone()  # no session could have this id: not looked up anywhere
        if self.sharing is not None:  # held here, or taken over from the shared store
            entry = await self.sharing.find(session_id, principal, "streamable")
        else:
            entry = self.manager.get(session_id, principal, "streamable")
        if entry is None:
            raise session_gone()
        return entry

    # --- POST -------------------------------------------------------------------------------

    async def _post_modern(
        self,
        scope: Scope,
        receive: Receive,
        send: Send,
        headers: RequestHeaders,
        principal: Hashable | None,
        version: str,
    ) -> None:
        assert self._modern is not None
        self._check_post_headers(headers)
        config = self.config
        engine = extensions(scope)
        body = await read_body(
            receive,
            config.max_body_bytes,
            config.body_timeout,
            headers.get(b"content-length"),
            buffered=BODY_BUFFERED in engine,
        )
        parsed = parse_body(body, prepare=trace_adopter(headers))
        if not modern_http.claims(version) and not modern_http.is_modern_body(parsed):
            raise HttpRejection(400, f"Unsupported MCP-Protocol-Version: {version[:40]}")
        await self._modern.post(
            receive, send, headers, parsed, principal, bounded_send=BOUNDED_SEND in engine
        )

    def _check_post_headers(self, headers: RequestHeaders) -> None:
        config = self.config
        if not is_json_content_type(headers.get(b"content-type")):
            raise HttpRejection(415, "Content-Type must be application/json")
        accept = headers.get(b"accept")
        if not accepts(accept, "application/json") or (
            not config.json_response and not accepts(accept, "text/event-stream")
        ):
            raise HttpRejection(406, "Accept must allow application/json and text/event-stream")

    async def _post(
        self,
        scope: Scope,
        receive: Receive,
        send: Send,
        headers: RequestHeaders,
        principal: Hashable | None,
    ) -> None:
        config = self.config
        # A head the engine keeps, seen before (see HEAD_MEMO): what depends on the head
        # alone (its POST headers, its session id's form, its Content-Length) passed
        # then, and is not checked again.
        memo = scope.get(HEAD_MEMO)
        checked = memo is not None and _POST_CHECKED in memo
        if not checked:
            self._check_post_headers(headers)
        entry: SessionEntry | None = None
        session_id = None if config.stateless else headers.get(SESSION_HEADER)
        if session_id is not None:
            if checked and self.sharing is None:  # (_session's lookup, without a coroutine)
                entry = self.manager.get(session_id, principal, "streamable")
                if entry is None:
                    raise session_gone()
            else:
                entry = await self._session(headers, principal)
            entry.active += 1
        try:
            body = scope.get(BODY)  # the lean engine's, read whole with the head
            if body is not None:  # (no receive message, no coroutine)
                if not checked:
                    limit = config.max_body_bytes
                    body = buffered_body(body, limit, headers.get(b"content-length"))
                    if memo is not None:
                        memo[_POST_CHECKED] = True
                # (else the body is as long as the Content-Length checked before)
            else:
                body = await read_body(
                    receive,
                    config.max_body_bytes,
                    config.body_timeout,
                    headers.get(b"content-length"),
                    # (the engine read it whole already: no timeout scope to read it)
                    buffered=BODY_BUFFERED in (scope.get("extensions") or _NO_EXTENSIONS),
                )
            # (no trace_adopter call without a traceparent header: once per POST)
            adopt = None if headers.get(b"traceparent") is None else trace_adopter(headers)
            parsed = parse_body(body, prepare=adopt)
            if self._modern is not None and entry is None and modern_http.is_modern_body(parsed):
                # A 2026 request without MCP-Protocol-Version: answered as 2026 (-32020).
                await self._modern.post(receive, send, headers, parsed, principal)
                return
            messages, batch = parsed.messages, parsed.batch
            # The engine gets the value parsed here: a body is decoded once.
            inbound = Decoded(parsed.value)
            initialize: Request | None = None
            if batch:
                requests = [m for m in messages if type(m) is Request]
            else:  # one message (nearly every POST): no comprehension, no generator
                first = messages[0]
                if type(first) is Request:
                    requests = [first]
                    if first.method == "initialize":
                        initialize = first
                else:
                    requests = []
            if config.auth is not None:
                config.auth.authorize(requests, cast("AuthInfo | None", principal))
            if batch and any(r.method == "initialize" for r in requests):
                raise HttpRejection(400, "initialize must not be part of a batch")
            if config.stateless:
                await self._post_stateless(
                    send, receive, inbound, messages, requests, headers, principal
                )
                return
            created = False
            if entry is None:
                if initialize is None:
                    raise HttpRejection(400, "Missing Mcp-Session-Id header")
                entry = await self._create(principal)
                entry.active += 1
                created = True
                if self.sharing is not None:
                    send = self.sharing.saving_first(send, entry)
            try:
                # (the session's checks, then its answer or its notifications: no
                # coroutine between this one and _answer's)
                session, ids = self._in_session(entry, requests, batch)
                if requests:
                    # (only an SSE answer asks: whether to prime its stream)
                    version = (
                        None
                        if config.json_response
                        else session.protocol_version or _requested_version(requests)
                    )
                    await self._answer(
                        send,
                        receive,
                        session,
                        entry.transport,
                        inbound,
                        messages,
                        ids,
                        version,
                        [entry.id_header],
                        principal,
                        scope.get(RESPOND),
                    )
                else:
                    await self._notified(send, entry, inbound, messages)
                if self.sharing is not None:
                    await self.sharing.persist(entry)
            finally:
                if created and not _negotiated(entry):
                    self.manager.end(entry, "initialize failed")
        finally:
            if entry is not None:
                entry.active -= 1
                entry.touch()

    async def _adopt(
        self, principal: Hashable | None, session_id: str, prepare: Callable[[Session], None]
    ) -> SessionEntry:
        return await self._create(principal, session_id=session_id, prepare=prepare)

    async def _create(
        self,
        principal: Hashable | None,
        *,
        session_id: str | None = None,
        prepare: Callable[[Session], None] | None = None,
    ) -> SessionEntry:
        config = self.config
        self.manager.reserve()

        relay = self.relay

        def make_transport(session_id: str) -> HttpSessionTransport:
            factory = config.event_store_factory
            transport = HttpSessionTransport(
                store=factory(session_id) if factory is not None else None,
                inbound_queue=config.inbound_queue,
                backlog_size=config.backlog_size,
                retry_ms=config.retry_ms,
            )
            transport.session_id = session_id
            if relay is not None:
                transport.shared_session_id = session_id
                transport.forward = relay.forwarder(session_id)
            return transport

        if relay is not None:
            adopted = prepare

            def prepare(session: Session) -> None:
                relay.prepare(session)
                if adopted is not None:
                    adopted(session)

        return await self.manager.create(
            principal, make_transport, session_id=session_id, prepare=prepare
        )

    def _in_session(
        self, entry: SessionEntry, requests: list[Request], batch: bool
    ) -> tuple[Session, list[RequestId]]:
        """What a POST to a session checks first: the session wakes (503 once the manager
        stopped), batches are allowed in its version, no request id is in use (400). The
        session and the ids to answer."""
        transport: HttpSessionTransport = entry.transport
        session = entry.session
        assert session is not None
        try:
            session.wake()  # a resting session runs its tasks again to read this body
        except SessionClosed:  # the session manager has stopped
            raise HttpRejection(503, "The server is shutting down") from None
        if batch and not allows_batches(session.protocol_version):
            raise HttpRejection(400, "Batches are not allowed in this protocol version")
        # (one request, nearly every POST: no comprehension frame)
        ids = [requests[0].id] if len(requests) == 1 else [r.id for r in requests]
        for request_id in ids:
            if transport.in_flight(request_id) or ids.count(request_id) > 1:
                raise HttpRejection(
                    400, f"Request id {request_id!r} is already in use", request_id=request_id
                )
        return session, ids

    async def _notified(
        self, send: Send, entry: SessionEntry, body: Decoded, messages: list[Message]
    ) -> None:
        """A POST to a session with no request in it: fed (or relayed), answered 202."""
        transport: HttpSessionTransport = entry.transport
        extra = [entry.id_header]
        if self.relay is not None and await self.relay.relay(entry, body.value, messages):
            await respond(send, 202, headers=extra)  # sent to the replica it is for
            return
        await transport.feed(body, self.config.enqueue_timeout)
        _apply_cancels(transport, messages)
        await respond(send, 202, headers=extra)

    async def _answer(
        self,
        send: Send,
        receive: Receive,
        session: Session,
        transport: HttpSessionTransport,
        body: Decoded,
        messages: list[Message],
        ids: list[RequestId],
        version: str | None,
        extra: Headers,
        principal: Hashable | None = None,
        responder: Respond | None = None,
    ) -> None:
        """Feed the body and write the answers: one JSON body, or an SSE stream.

        ``responder``: the engine's one-step answer (:data:`RESPOND`), if it has one.

        A client that goes away releases this request at once (its connection, its task);
        the handlers it started go on, as the session era says (a disconnect is not a
        cancel), and their answers go to the event store, if any.
        """
        config = self.config
        if config.json_response:
            stream = transport.open_stream(ids, json_mode=True, auth=principal)
            if not self._feed_now(session, transport, stream, body, messages):
                await self._feed(transport, stream, body, messages)
            # Wait for the answer, or for the client to go. Most answers come at once:
            # the client is watched (a task reading its connection) only once the answer
            # is late (SlowRequests: no task and no cancel scope before). Cancellation:
            # stops waiting (the watcher, if any, is stopped first).
            gone = False

            async def watch() -> None:
                nonlocal gone
                await wait_for_disconnect(receive)
                gone = True
                stream.release_waiter()

            watching = self.slow.add(watch)
            try:
                await stream.wait_done()
            finally:
                if not watching.end_now():
                    await watching.end()
            if not gone:
                answer = stream.json_body
                if answer is None:  # the session closed, or the client cancelled, first
                    answer = error_body(
                        CONNECTION_CLOSED,
                        "The request ended without an answer",
                        ids[0] if len(ids) == 1 else None,
                    )
                if responder is not None:
                    await responder(200, answer, (*extra, JSON_TYPE))
                else:
                    await respond(send, 200, answer, [*extra, JSON_TYPE])
            return
        sink = Sink(config.stream_max_bytes, config.stream_max_messages)
        prime = version is not None and version >= V2025_11_25
        stream = await transport.open_post_stream(
            ids, json_mode=False, sink=sink, prime=prime, auth=principal
        )
        if not self._feed_now(session, transport, stream, body, messages):
            await self._feed(transport, stream, body, messages)
        start = {"type": "http.response.start", "status": 200, "headers": [*SSE_HEADERS, *extra]}
        await send(start)
        if prime:
            # A quick answer goes out in the same write as the priming event (one write
            # less per call). Counted in scheduler passes, not seconds, so it holds under
            # load: the engine needs about three passes to answer a quick request, and a
            # slow one delays the priming event by a few passes only.
            for _ in range(PRIMING_PASSES):
                if sink.queued > 1 or sink.finished:
                    break
                await trio.lowlevel.checkpoint()
        # The client may resume this stream with any id it gets, maybe on another replica,
        # which must know the stream exists before the client can have one: the priming
        # event's id too (never stored), also when the response ends before the answer
        # (SSE polling: close_request_stream). Costs nothing once an answer is stored.
        await transport.make_known(stream)
        if sink.finished:
            await pump(send, sink)  # answered already: nothing to wait for
            return
        try:
            await pump_until_disconnect(send, receive, sink)
        finally:
            stream.detach(sink)

    def _feed_now(
        self,
        session: Session,
        transport: HttpSessionTransport,
        stream: OutStream,
        body: Decoded,
        messages: list[Message],
    ) -> bool:
        """Hand one request to the session while the engine's reader waits: the session
        takes it here, in this task (no hop through the reader; the message is not
        classified again). False: :meth:`_feed` it. (No coroutine: nearly every POST.)"""
        try:
            return (
                type(body.value) is dict
                and transport.reader_waiting()
                and session.receive_now(messages[0])
            )
        except BaseException:
            transport.abandon(stream)
            raise

    async def _feed(
        self,
        transport: HttpSessionTransport,
        stream: OutStream,
        body: Decoded,
        messages: list[Message],
    ) -> None:
        """Feed the body to the session's reader (what :meth:`_feed_now` did not take)."""
        try:
            await transport.feed(body, self.config.enqueue_timeout)
        except BaseException:
            transport.abandon(stream)
            raise
        if len(messages) > 1 or type(messages[0]) is not Request:  # (no call for one request)
            _apply_cancels(transport, messages)

    async def _post_stateless(
        self,
        send: Send,
        receive: Receive,
        body: Decoded,
        messages: list[Message],
        requests: list[Request],
        headers: RequestHeaders,
        principal: Hashable | None = None,
    ) -> None:
        if not requests:
            await respond(send, 202)  # nothing to answer and no session to tell
            return
        config = self.config
        manager = self.manager
        manager.reserve()
        try:
            transport = HttpSessionTransport(
                store=None,
                inbound_queue=config.inbound_queue,
                backlog_size=config.backlog_size,
                retry_ms=config.retry_ms,
            )
            async with open_session(
                transport,
                role=Role.SERVER,
                handler=self._factory(),
                options=config.session_options,
            ) as session:
                session.principals = transport
                version = _requested_version(requests)
                if version is None:
                    version = headers.get(b"mcp-protocol-version") or HTTP_DEFAULT_VERSION
                    await _initialize_implicitly(transport, version, config.enqueue_timeout)
                await self._answer(
                    send,
                    receive,
                    session,
                    transport,
                    body,
                    messages,
                    [r.id for r in requests],
                    version,
                    [],
                    principal,
                )
        finally:
            manager.release()

    # --- GET and DELETE -----------------------------------------------------------------------

    async def _get(
        self, receive: Receive, send: Send, headers: RequestHeaders, principal: Hashable | None
    ) -> None:
        if not accepts(headers.get(b"accept"), "text/event-stream"):
            raise HttpRejection(406, "Accept must allow text/event-stream")
        entry = await self._session(headers, principal)
        transport: HttpSessionTransport = entry.transport
        config = self.config
        entry.active += 1
        sink = Sink(config.stream_max_bytes, config.stream_max_messages)
        try:
            last_event_id = headers.get(b"last-event-id")
            resumed: Callable[[], Awaitable[None]] | bool = False
            if last_event_id is not None and transport.resumable:
                resumed = await transport.resume(
                    last_event_id, sink, follow_timeout=config.follow_timeout
                )
                if not resumed:
                    raise HttpRejection(400, UNKNOWN_EVENT_ID)
            if not resumed:
                session = entry.session
                version = session.protocol_version if session is not None else None
                prime = version is not None and version >= V2025_11_25
                await transport.open_standalone(sink, prime=prime)
            if self.relay is not None and transport.has_standalone_stream():
                await self.relay.claim_stream(entry)
            start_headers = [*SSE_HEADERS, entry.id_header]
            if callable(resumed):  # a call running on another replica: follow its stream
                async with self.budgets.follow(entry.session_id, principal):  # 429, 503
                    await send(
                        {"type": "http.response.start", "status": 200, "headers": start_headers}
                    )
                    async with trio.open_nursery() as nursery:
                        nursery.start_soon(resumed)
                        await pump_until_disconnect(send, receive, sink)
                        nursery.cancel_scope.cancel()
            else:
                await send({"type": "http.response.start", "status": 200, "headers": start_headers})
                await pump_until_disconnect(send, receive, sink)
        finally:
            sink.finish()
            transport.detach(sink)
            entry.active -= 1
            entry.touch()

    async def _delete(
        self, send: Send, headers: RequestHeaders, principal: Hashable | None
    ) -> None:
        entry = await self._session(headers, principal)
        self.manager.end(entry, "the client ended the session (DELETE)")
        if self.sharing is not None:
            await self.sharing.forget(entry)
        await respond(send, 204)


# --- helpers --------------------------------------------------------------------------------


def create_asgi_app(
    handler: SessionHandler | Callable[[], SessionHandler],
    *,
    config: HttpServerConfig | None = None,
) -> McpHttpApp:
    """An ASGI app serving MCP over Streamable HTTP at ``config.path`` (default ``/mcp``).

    ``handler`` answers every session (a :class:`SessionHandler` shared by all sessions, or
    a zero-argument factory called once per session). :func:`serve_http` runs it (with
    the lean engine by default); to mount it yourself, run it under hypercorn's trio
    worker, whose ASGI lifespan starts and stops its session manager (see
    :class:`McpHttpApp`).

    A handler that declares its authorization (``trimcp.Server(auth=...)``) is served
    protected with it, whatever ``config`` says (ValueError if ``config`` gives another).
    """
    config = with_declared_auth(handler, config or HttpServerConfig())
    return McpHttpApp(handler_factory(handler), config, lifespan_of=handler)


def _requested_version(requests: list[Request]) -> str | None:
    for request in requests:
        if request.method == "initialize" and request.params:
            version = request.params.get("protocolVersion")
            return version if isinstance(version, str) else None
    return None


def _negotiated(entry: SessionEntry) -> bool:
    return entry.session is not None and entry.session.negotiated is not None


def _apply_cancels(transport: HttpSessionTransport, messages: list[Message]) -> None:
    # A cancelled request gets no answer: its POST stream must not wait for one.
    for message in messages:
        if type(message) is Notification and message.method == "notifications/cancelled":
            request_id = (message.params or {}).get("requestId")
            if type(request_id) is int or type(request_id) is str:
                transport.forget_request(request_id)


async def _initialize_implicitly(
    transport: HttpSessionTransport, version: str, timeout: float
) -> None:
    """Stateless mode: run the handshake for the client, with the header's version."""
    params: dict[str, Any] = {
        "protocolVersion": version,
        "capabilities": {},
        "clientInfo": {"name": IMPLICIT_CLIENT_NAME, "version": "0"},
    }
    stream = await transport.open_post_stream(
        [_STATELESS_INIT_ID], json_mode=True, sink=None, prime=False
    )
    await transport.feed(Decoded(request_object(_STATELESS_INIT_ID, "initialize", params)), timeout)
    await stream.done.wait()  # the engine answers initialize itself (bounded by its options)
    answer = parse_json(stream.json_body) if stream.json_body is not None else None
    if type(answer) is not dict or "result" not in answer:
        raise HttpRejection(400, "The server refused the implicit initialization")
    await transport.feed(Decoded(notification_object("notifications/initialized", None)), timeout)


async def _metadata(scope: Scope, send: Send, body: bytes) -> None:
    """The protected-resource metadata document (RFC 9728): public, readable cross-origin."""
    cors = [(b"access-control-allow-origin", b"*")]
    method = scope["method"]
    if method == "OPTIONS":
        cors.append((b"access-control-allow-methods", b"GET, OPTIONS"))
        cors.append((b"access-control-allow-headers", b"mcp-protocol-version"))
        await respond(send, 204, headers=cors)
    elif method == "GET":
        await respond(
            send,
            200,
            body,
            [*cors, (b"cache-control", b"max-age=3600")],
            content_type=b"application/json",
        )
    else:
        raise HttpRejection(405, "Method not allowed", headers=[(b"allow", b"GET, OPTIONS")])
