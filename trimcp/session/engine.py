"""The session engine: one nursery per session, one cancel scope per inbound request.

Tasks a session owns, all in its nursery (see docs/concurrency.md):

- the **reader** pulls messages from the transport, feeds the protocol core and acts on
  its events: starts a handler task per request, cancels scopes, completes waiters;
- the **writer** drains the bounded outbox into the transport, coalescing what is queued;
- the **notifier** runs notification handlers one at a time, in arrival order;
- one **handler task** per inbound request, inside that request's ``CancelScope``;
- the **closer** runs the shutdown sequence once, whoever asks for it;
- optionally the **keepalive** pinger.

Callers of :meth:`Session.send_request` wait in their own task; nothing a session starts
outlives it.
"""

from __future__ import annotations

import enum
import functools
import logging
import math
import secrets
from collections.abc import AsyncIterator, Callable, Hashable
from contextlib import asynccontextmanager, suppress
from typing import Any, Protocol

import trio

from trimcp._groups import open_nursery_unwrapped
from trimcp.errors import (
    CONNECTION_CLOSED,
    INTERNAL_ERROR,
    LocalProtocolError,
    McpError,
    RemoteProtocolError,
    RequestTimeout,
    SessionClosed,
)
from trimcp.protocol.connection import Connection
from trimcp.protocol.events import (
    BatchReceived,
    CancelReceived,
    ErrorReceived,
    Event,
    MessageIgnored,
    MessageRejected,
    NotificationReceived,
    ProgressReceived,
    RequestReceived,
    ResponseReceived,
)
from trimcp.protocol.jsonrpc import RequestId, encode_batch, encode_error
from trimcp.protocol.lifecycle import Role
from trimcp.protocol.methods import Method, P, R, expect_result
from trimcp.protocol.negotiated import Negotiated
from trimcp.session.context import RequestContext
from trimcp.session.hooks import (
    ImmediateTransport,
    RequestRelay,
    RestingHandler,
    RestingTransport,
    SessionAttendant,
)
from trimcp.session.options import SessionOptions
from trimcp.session.outbound import ProgressCallback, TaskProgress, Waiter
from trimcp.session.outcome import run_handler
from trimcp.session.relay import Relayed, without_progress_token
from trimcp.session.transport import MessageTooLarge, Outgoing, Transport

logger = logging.getLogger("trimcp.session")

_DEFAULT: Any = object()
_PEER_GONE = (trio.EndOfChannel, trio.BrokenResourceError, trio.ClosedResourceError)
#: Messages the writer takes from the outbox for one transport write.
_WRITE_BATCH = 512


class SessionHandler(Protocol):
    """What answers the peer: the server or client framework, or a low-level registry."""

    async def handle_request(self, ctx: RequestContext) -> Any:
        """Return the result (a typed object or a dict), or raise ``McpError``."""
        ...

    async def handle_notification(self, session: Session, method: str, params: Any) -> None:
        """React to a notification. Runs in the session's notifier task, one at a time."""
        ...

    # Optional hooks, each a named interface in trimcp.session.hooks: SessionAttendant
    # (a task per session, started among its service tasks) and RestingHandler.


class _Batch:
    """Collects the replies of one inbound batch so they go out as one JSON array."""

    __slots__ = ("answered", "pending", "replies")

    def __init__(self) -> None:
        self.pending: set[RequestId] = set()
        self.replies: list[bytes] = []
        #: The requests the replies collected so far answer (the transport's routing).
        self.answered: list[RequestId] = []


class _Phase(enum.IntEnum):
    """A session's phases (AWAKE is 0, so ``if self._phase:`` means "not awake")."""

    AWAKE = 0  # running its tasks
    WINDING_DOWN = 1  # letting them end, to rest
    RESTING = 2  # no tasks, only state


_AWAKE, _WINDING_DOWN, _RESTING = _Phase.AWAKE, _Phase.WINDING_DOWN, _Phase.RESTING


class _Run:
    """What a session holds only while awake: its nursery, queues, signals, service scope.

    A resting session drops it; waking makes a new one. ``carry`` hands over the queues of a
    run that was winding down to rest when the session was woken again (they may hold
    messages queued meanwhile).
    """

    __slots__ = (
        "close_requested",
        "handlers_idle",
        "notes_recv",
        "notes_send",
        "nursery",
        "outbox_recv",
        "outbox_send",
        "reader_wakeup",
        "services",
        "services_done",
        "write_busy",
        "write_free",
        "writer_done",
    )

    def __init__(self, options: SessionOptions, carry: _Run | None = None) -> None:
        self.nursery: trio.Nursery
        if carry is None:
            self.outbox_send, self.outbox_recv = trio.open_memory_channel[Outgoing](
                options.outbox_size
            )
            self.notes_send, self.notes_recv = trio.open_memory_channel[tuple[str, Any]](
                options.notification_backlog
            )
        else:
            self.outbox_send, self.outbox_recv = carry.outbox_send, carry.outbox_recv
            self.notes_send, self.notes_recv = carry.notes_send, carry.notes_recv
        self.reader_wakeup = trio.Event()
        self.handlers_idle = trio.Event()
        self.handlers_idle.set()
        self.close_requested = trio.Event()
        self.writer_done = trio.Event()
        # One writer at a time: the writer task, or a handler task writing its reply.
        self.write_busy = False
        self.write_free = trio.Event()
        # Shielded: a cancel from outside the session (a deadline around the whole
        # ``async with``) must not kill the writer and closer before the close sequence
        # has run (sent our notifications/cancelled, flushed, closed the transport).
        # The closer cancels this scope at its end; open_session does after close_bound.
        self.services = trio.CancelScope(shield=True)
        self.services_done = trio.Event()


#: The run of every resting session: closed queues, so a send that forgot to wake first
#: fails loudly instead of queueing where nobody reads.
_RESTING_RUN = _Run(SessionOptions(outbox_size=1, notification_backlog=1))
_RESTING_RUN.outbox_send.close()
_RESTING_RUN.notes_send.close()


class Session:
    """One live MCP session, either role. Create it with :func:`open_session`.

    A session made with :func:`resting_session` can also *rest*: when nothing is under way
    for ``rest_after`` seconds its tasks end and it keeps only its protocol state (a few
    hundred bytes instead of a few tasks and queues); sending to it, feeding its transport
    (the owner calls :meth:`wake`) or closing it starts its tasks again.
    """

    __slots__ = (
        "__weakref__",
        "_batch_of",
        "_close_wanted",
        "_closed",
        "_closed_event",
        "_contexts",
        "_handler",
        "_phase",
        "_relay",
        "_relayed",
        "_rest_after",
        "_run",
        "_send_now",
        "_task_progress",
        "_transport",
        "_transport_can_rest",
        "_waiters",
        "_wake_pending",
        "_waker",
        "close_reason",
        "closing",
        "connection",
        "options",
        "owner_key",
        "principal_of",
        "role",
    )

    @property
    def transport(self) -> Transport:
        """The transport carrying this session."""
        return self._transport

    def __init__(
        self,
        transport: Transport,
        role: Role,
        handler: SessionHandler,
        options: SessionOptions,
        *,
        waker: Callable[[Session], None] | None = None,
        rest_after: float | None = None,
    ) -> None:
        self.options = options
        self.role = role
        #: ``principal_of(request_id)``: who an inbound request acts for, as the transport
        #: authenticated it (the HTTP server sets it; None: every request is anonymous).
        #: Read once per request, into that request's own context.
        self.principal_of: Callable[[RequestId], Hashable | None] | None = None
        #: What owns this session's anonymous state (its tasks): random and secret, or the
        #: HTTP session id (the same on every replica that serves the session).
        self.owner_key = secrets.token_hex(16)
        self.connection = Connection(role)
        self._transport = transport
        self._handler = handler
        self._contexts: dict[RequestId, RequestContext] = {}
        #: Our requests awaiting the peer's answer (relayed ones among them).
        self._waiters: dict[RequestId, Waiter | Relayed] = {}
        #: The peer's requests relayed to another session (see trimcp.session.relay).
        self._relayed: dict[RequestId, Relayed] = {}
        #: Our task-augmented requests, answered, whose task still reports progress: the
        #: caller's progress callback (run in the notification task from then on).
        self._task_progress: dict[RequestId, ProgressCallback] = {}
        self._relay = handler if isinstance(handler, RequestRelay) else None
        self._send_now = transport.send_now if isinstance(transport, ImmediateTransport) else None
        if self._relay is not None:
            self.connection.pass_through = self._relay.relays
        self._batch_of: dict[RequestId, _Batch] = {}
        self._close_wanted = False
        self._closed = False
        self._closed_event: trio.Event | None = None  # made when someone waits
        self.closing = False
        #: Why the session closed (for logs and errors), once it has.
        self.close_reason: str | None = None
        self._phase = _AWAKE
        self._wake_pending = False
        self._waker = waker
        transport_can_rest = transport.can_rest if isinstance(transport, RestingTransport) else None
        self._transport_can_rest = transport_can_rest
        # Resting needs an owner to wake it, a transport that can tell it holds nothing,
        # no keepalive pings, and a handler whose own session task (if any) can pause.
        if (
            waker is None
            or transport_can_rest is None
            or options.keepalive_interval is not None
            or (isinstance(handler, SessionAttendant) and not isinstance(handler, RestingHandler))
        ):
            rest_after = None
        self._rest_after = rest_after
        self._run = _Run(options)

    # --- public API ---------------------------------------------------------------------

    @property
    def negotiated(self) -> Negotiated | None:
        """What the handshake agreed on (None before it completes)."""
        return self.connection.negotiated

    @property
    def closed(self) -> bool:
        return self._closed

    async def wait_closed(self) -> None:
        """Wait until the session has fully closed (by either side)."""
        await self._closed_signal().wait()

    def _closed_signal(self) -> trio.Event:
        event = self._closed_event
        if event is None:
            event = self._closed_event = trio.Event()
            if self._closed:
                event.set()
        return event

    def _mark_closed(self) -> None:
        self._closed = True
        if self._closed_event is not None:
            self._closed_event.set()

    def request_close(self, reason: str = "closed locally") -> None:
        """Start closing the session without waiting (see :meth:`aclose`)."""
        if not self._close_wanted:
            self.close_reason = reason
            self._close_wanted = True
            if self._phase != _AWAKE:
                with suppress(SessionClosed):  # no owner to run it any more
                    self.wake()
            self._run.close_requested.set()
            self._run.reader_wakeup.set()

    @property
    def busy(self) -> bool:
        """Whether a handler is running or a request of ours awaits the peer's answer."""
        return bool(self._contexts or self._waiters or self._relayed)

    @property
    def resting(self) -> bool:
        """Whether the session is resting: no tasks, only its state (see :class:`Session`)."""
        return self._phase == _RESTING

    def wake(self) -> None:
        """Make a resting session run again; does nothing to an awake one.

        The owner calls it before feeding the transport; sends and closes call it
        themselves. Synchronous: the session's queues exist when it returns, and its owner
        has been asked (the ``waker``) to run :meth:`run_awake` in a task.
        """
        phase = self._phase
        if phase == _AWAKE:
            return
        if phase == _WINDING_DOWN:  # run_awake sees this once its tasks have ended
            self._wake_pending = True
            return
        assert self._waker is not None, "only a session with a waker rests"
        self._waker(self)  # first: it may refuse (raise), leaving the session resting
        self._phase = _AWAKE
        self._run = _Run(self.options)
        if self._close_wanted:
            self._run.close_requested.set()

    async def aclose(self) -> None:
        """Close the session and wait until it is closed.

        Sequence: refuse new requests; let in-flight handlers finish within
        ``shutdown_grace``; cancel the rest; fail our pending requests with
        :class:`SessionClosed`; flush replies already queued (``flush_timeout``); close the
        transport (``close_timeout``). Cancellation: the sequence runs in the session's own
        task and is not interrupted by cancelling the caller, who just stops waiting.
        """
        self.request_close()
        await self._closed_signal().wait()

    async def send_request(
        self,
        method: str,
        params: Any = None,
        *,
        timeout: float | None = _DEFAULT,
        on_progress: ProgressCallback | None = None,
        reset_timeout_on_progress: bool = False,
        related_request_id: RequestId | None = None,
        on_sent: Callable[[RequestId], None] | None = None,
    ) -> Any:
        """Send a request and wait for its result (typed for known methods).

        ``timeout``: seconds to wait (default ``options.request_timeout``; ``None``: no
        limit). With ``reset_timeout_on_progress`` each progress notification restarts the
        timeout, never past ``options.max_request_timeout`` from the start. ``on_progress``
        is called in this task for each progress notification. ``on_sent`` is told the
        request's id once it has one (e.g. for a tracing span).

        Raises the peer's error as :class:`McpError`, :class:`RequestTimeout` on timeout,
        :class:`SessionClosed` if the session closes first, :class:`LocalProtocolError` if
        the request is not allowed now. Cancellation: if the calling scope is cancelled,
        ``notifications/cancelled`` is sent to the peer (shielded, bounded by
        ``options.cancel_notify_timeout``), a late answer is dropped, and ``Cancelled``
        propagates as usual.
        """
        if self.closing:
            raise SessionClosed(f"Cannot send {method}: {self.close_reason or 'session closing'}")
        if self._phase:
            self.wake()
        if timeout is _DEFAULT:
            timeout = self.options.request_timeout
        elif timeout is None:
            timeout = math.inf
        start = trio.current_time()
        hard = (
            start + max(timeout, self.options.max_request_timeout)
            if reset_timeout_on_progress
            else start + timeout
        )
        request_id, data = self.connection.send_request(
            method, params, with_progress=on_progress is not None
        )
        if on_sent is not None:
            on_sent(request_id)
        waiter = Waiter(timeout, hard, reset_timeout_on_progress)
        if on_progress is not None and self.connection.creates_task(request_id):
            # Task-augmented: progress may go on after the answer; deliver all of it in
            # the notification task, so it arrives in order whoever waits.
            waiter.follow = on_progress
        self._waiters[request_id] = waiter
        self._run.reader_wakeup.set()  # a reader paused at max_in_flight must read our answer
        queued = False
        try:
            await self._run.outbox_send.send(Outgoing(data, related_request_id))
            queued = True
            with trio.CancelScope(deadline=start + timeout) as deadline:
                waiter.deadline_scope = deadline
                return await waiter.wait(on_progress)
        except _PEER_GONE:
            self.connection.cancel_outbound(request_id)
            raise SessionClosed(f"Cannot send {method}: the session is closed") from None
        except BaseException:
            if not waiter.done:
                if queued:
                    await self._cancel_outbound(request_id, related_request_id, "cancelled")
                else:
                    self.connection.cancel_outbound(request_id)
            raise
        finally:
            self._waiters.pop(request_id, None)
        # Only the deadline scope catching its own cancellation gets here.
        if waiter.done:  # the answer and the deadline raced; the answer wins
            return await waiter.wait(on_progress)
        await self._cancel_outbound(request_id, related_request_id, "timed out")
        raise RequestTimeout(f"{method} got no answer within {timeout:g}s")

    async def _cancel_outbound(
        self, request_id: RequestId, related: RequestId | None, reason: str
    ) -> None:
        """Forget our request and tell the peer, shielded and bounded in time."""
        data = self.connection.cancel_outbound(request_id, reason)
        if data is None:
            return
        item = Outgoing(data, related)
        try:
            self._run.outbox_send.send_nowait(item)
            return
        except trio.WouldBlock:
            pass
        except _PEER_GONE:
            return
        deadline = trio.current_time() + self.options.cancel_notify_timeout
        with trio.CancelScope(shield=True, deadline=deadline), suppress(*_PEER_GONE):
            await self._run.outbox_send.send(item)

    async def request(
        self,
        method: Method[P, R],
        params: P,
        *,
        timeout: float | None = _DEFAULT,
        on_progress: ProgressCallback | None = None,
        reset_timeout_on_progress: bool = False,
    ) -> R:
        """Send ``method`` (a constant of :mod:`trimcp.protocol.methods`, e.g.
        ``CALL_TOOL``) and return its typed result: mypy checks ``params`` against the
        method's params type, and the result is the method's result type.

        Options, errors and cancellation are those of :meth:`send_request` (the string
        form, for custom and extension methods). An answer of another kind than the
        method's result (a ``CreateTaskResult`` for a task-augmented request, a 2026
        ``InputRequiredResult``) raises :class:`~trimcp.errors.UnexpectedResult`: send
        those with :meth:`send_request`, or through the client, which handles both.
        """
        result = await self.send_request(
            method.name,
            params,
            timeout=timeout,
            on_progress=on_progress,
            reset_timeout_on_progress=reset_timeout_on_progress,
        )
        return expect_result(method, result)

    async def send_notification(
        self, method: str, params: Any = None, *, related_request_id: RequestId | None = None
    ) -> None:
        """Queue a notification for the peer.

        Raises :class:`SessionClosed` when the session is closed, :class:`LocalProtocolError`
        when the notification is not allowed. Cancellation: atomic (queued whole or not at
        all); it may wait while the outbox is full.
        """
        data = self.connection.send_notification(method, params)
        if self._phase:
            self.wake()
        try:
            await self._run.outbox_send.send(Outgoing(data, related_request_id))
        except _PEER_GONE:
            raise SessionClosed(f"Cannot send {method}: the session is closed") from None

    async def initialize(self, params: Any) -> Any:
        """Client role: send ``initialize`` then ``notifications/initialized``.

        Returns the server's ``InitializeResult``. Raises :class:`McpError` when the server
        refuses or chooses a version this client does not support.
        """
        result = await self.send_request("initialize", params)
        await self.send_notification("notifications/initialized")
        return result

    async def ping(self, *, timeout: float | None = _DEFAULT) -> None:
        """Send ``ping`` and wait for the answer."""
        await self.send_request("ping", timeout=timeout)

    # --- the reader -----------------------------------------------------------------------

    async def _read_loop(self) -> None:
        transport = self._transport
        rest_after = self._rest_after
        try:
            while True:
                await self._wait_for_capacity()
                try:
                    if rest_after is None:
                        data = await transport.receive()
                    else:
                        # Only the reader decides to rest: it is the one task that knows
                        # it holds no message half-handled (a cancelled receive got none).
                        with trio.move_on_after(rest_after) as quiet:
                            data = await transport.receive()
                        if quiet.cancelled_caught:
                            if self._begin_rest():
                                return
                            continue
                except MessageTooLarge as exc:
                    logger.warning("dropped an oversized message: %s", exc)
                    await self._queue(Outgoing(encode_error(None, exc)))
                    continue
                if isinstance(data, bytes):
                    event = self.connection.receive(data)
                else:  # parsed once already, by the transport
                    event = self.connection.receive_object(data.value)
                await self._on_event(event)
        except _PEER_GONE:
            self.request_close("the peer closed the connection")

    def _begin_rest(self) -> bool:
        """If nothing at all is under way, start ending the tasks to rest (reader only).

        Synchronous, so nothing can start between the checks and the decision. Nothing
        under way: no handler, no request of ours awaiting an answer, no half-answered
        batch, writer and notifier parked on empty queues, the transport holding no input,
        and the handler's own session task (if any) at rest too.
        """
        run = self._run
        if (
            self._close_wanted
            or self._contexts
            or self._waiters
            or self._relayed
            or self._batch_of
            or self._wake_pending
            or run.write_busy
        ):
            return False
        for channel in (run.outbox_send, run.notes_send):
            stats = channel.statistics()
            if stats.current_buffer_used or not stats.tasks_waiting_receive:
                return False
        transport_can_rest = self._transport_can_rest
        if transport_can_rest is None or not transport_can_rest():
            return False
        handler = self._handler
        if isinstance(handler, RestingHandler) and not handler.can_rest(self):
            return False
        self._phase = _WINDING_DOWN
        run.services.cancel()
        return True

    async def _wait_for_capacity(self) -> None:
        # Stop reading while the handlers are at the limit: the peer then blocks on its
        # writes (backpressure). Not while we wait for answers from the peer, though: a
        # handler waiting on, say, sampling needs the reader, or the session deadlocks.
        while (
            len(self._contexts) + len(self._relayed) >= self.options.max_in_flight
            and not self._waiters
            and not self._close_wanted
        ):
            self._run.reader_wakeup = trio.Event()
            await self._run.reader_wakeup.wait()

    async def _on_event(self, event: Event, batch: _Batch | None = None) -> None:
        kind = type(event)
        if self._task_progress:
            self._forget_ended_tasks()  # the event may have ended a task we follow
        if kind is RequestReceived:
            assert isinstance(event, RequestReceived)
            await self._on_request(event, batch)
        elif kind is ResponseReceived:
            assert isinstance(event, ResponseReceived)
            waiter = self._waiters.get(event.id)
            if waiter is not None:
                if isinstance(waiter, Relayed):
                    del self._waiters[event.id]
                    if waiter.token is not None and self.connection.follows_task(event.id):
                        # A task: its progress goes on after the answer, to the origin.
                        forward = functools.partial(waiter.origin._relay_task_progress, waiter)
                        self._task_progress[event.id] = forward
                        self._forget_ended_tasks()
                    await waiter.origin._settle_relayed(waiter, event.result, None)
                else:
                    waiter.resolve(event.result)
                    if waiter.follow is not None and self.connection.follows_task(event.id):
                        self._task_progress[event.id] = waiter.follow
                        self._forget_ended_tasks()
        elif kind is NotificationReceived:
            assert isinstance(event, NotificationReceived)
            relay = self._relay
            if relay is not None and relay.relays(event.method):
                target = relay.relay_target(self)
                if target is not None:
                    # From the reader, so it keeps its place among the relayed requests.
                    await self._relay_notification(target, event.method, event.params)
                    return
            await self._run.notes_send.send((event.method, event.params))
        elif kind is CancelReceived:
            assert isinstance(event, CancelReceived)
            ctx = self._contexts.get(event.request_id)
            if ctx is not None:
                ctx.cancelled_by_peer = True
                ctx.cancel_scope.cancel()
            else:
                relayed = self._relayed.get(event.request_id)
                if relayed is not None:
                    await self._drop_relayed(relayed, "cancelled")
        elif kind is ProgressReceived:
            assert isinstance(event, ProgressReceived)
            waiter = self._waiters.get(event.request_id)
            if isinstance(waiter, Relayed):
                await waiter.origin._relay_progress(
                    waiter, event.progress, event.total, event.message
                )
            elif waiter is not None and waiter.follow is None:
                waiter.add_progress(event.progress, event.total, event.message)
            else:
                if waiter is not None:
                    waiter.extend_deadline()
                follow = waiter.follow if waiter is not None else None
                follow = follow or self._task_progress.get(event.request_id)
                if follow is not None:
                    update = TaskProgress(follow, event.progress, event.total, event.message)
                    await self._run.notes_send.send(("notifications/progress", update))
        elif kind is ErrorReceived:
            assert isinstance(event, ErrorReceived)
            await self._on_error(event)
        elif kind is MessageRejected:
            assert isinstance(event, MessageRejected)
            logger.log(
                logging.DEBUG if event.expected else logging.WARNING,
                "rejected a message from the peer: %s",
                event.error.message,
            )
            if event.reply is not None:
                if batch is not None:
                    batch.replies.append(event.reply)
                    batch.answered.extend(event.answers)
                else:
                    # Say which requests the refusal settles (all of a batch refused
                    # whole), so a transport waiting for their answers stops waiting.
                    answers = event.answers
                    await self._queue(
                        Outgoing(event.reply, answers[0] if answers else None, answers)
                    )
        elif kind is BatchReceived:
            assert isinstance(event, BatchReceived)
            await self._on_batch(event)
        else:
            assert isinstance(event, MessageIgnored)
            logger.debug("ignored a message: %s", event.reason)

    async def _on_error(self, event: ErrorReceived) -> None:
        if event.id is None:
            logger.warning(
                "the peer reported an error it could not tie to a request: %s (%s)",
                event.error.message,
                event.error.code,
            )
            return
        waiter = self._waiters.get(event.id)
        if isinstance(waiter, Relayed):
            del self._waiters[event.id]
            error = event.error
            if type(error) is RemoteProtocolError:  # found by our core, not sent by the peer
                error = McpError(error.code, f"The upstream answer is unusable: {error.message}")
            await waiter.origin._settle_relayed(waiter, None, error)
        elif waiter is not None:
            waiter.fail(event.error)

    async def _on_batch(self, event: BatchReceived) -> None:
        batch = _Batch()
        for item in event.events:
            if isinstance(item, RequestReceived):
                batch.pending.add(item.id)
        for item in event.events:
            await self._on_event(item, batch)
        await self._maybe_flush_batch(batch)

    async def _on_request(self, event: RequestReceived, batch: _Batch | None) -> None:
        request_id = event.id
        if event.method == "ping":
            await self._reply(request_id, self.connection.send_result(request_id, {}), batch)
            return
        refusal: McpError | None = None
        if self.closing:
            refusal = McpError(CONNECTION_CLOSED, "Session is closing")
        elif len(self._contexts) + len(self._relayed) >= self.options.max_in_flight:
            refusal = McpError(INTERNAL_ERROR, "Too many requests in flight; try again later")
        if refusal is not None:
            await self._reply(request_id, self.connection.send_error(request_id, refusal), batch)
            return
        relay = self._relay
        if (
            relay is not None
            and batch is None
            and event.method != "initialize"
            and relay.relays(event.method)
        ):
            target = relay.relay_target(self)
            if target is not None:
                await self._start_relay(event, target)
                return
        scope = trio.CancelScope()
        if self.options.handler_timeout is not None:
            scope.deadline = trio.current_time() + self.options.handler_timeout
        principal_of = self.principal_of
        ctx = RequestContext(
            self,
            request_id,
            event.method,
            event.params,
            event.progress_token,
            scope,
            principal=None if principal_of is None else principal_of(request_id),
        )
        self._contexts[request_id] = ctx
        self._run.handlers_idle = (
            trio.Event() if self._run.handlers_idle.is_set() else self._run.handlers_idle
        )
        if batch is not None:
            self._batch_of[request_id] = batch
        self._run.nursery.start_soon(self._run_handler, ctx)

    # --- relayed requests (see trimcp.session.relay) ----------------------------------------

    async def _start_relay(self, event: RequestReceived, target: Session) -> None:
        """Origin side: send the peer's request on through ``target`` (in the reader task)."""
        request_id = event.id
        token = event.progress_token
        relayed = Relayed(self, request_id, event.method, token)
        self._relayed[request_id] = relayed
        if self._run.handlers_idle.is_set():
            self._run.handlers_idle = trio.Event()
        params = event.params if token is None else without_progress_token(event.params)
        try:
            await target._relay_in(relayed, params)
        except McpError as exc:  # not allowed there (LocalProtocolError), or SessionClosed
            self._relayed.pop(request_id, None)
            self._relay_ended()
            error = (
                exc
                if isinstance(exc, LocalProtocolError)
                else McpError(INTERNAL_ERROR, f"Cannot relay {event.method}: {exc.message}")
            )
            with suppress(LocalProtocolError):
                await self._reply(request_id, self.connection.send_error(request_id, error), None)
        except BaseException:  # cancelled while the target's outbox was full: not sent
            self._relayed.pop(request_id, None)
            self.connection.forget_inbound(request_id)
            self._relay_ended()
            raise

    async def _relay_in(self, relayed: Relayed, params: Any) -> None:
        """Target side: send a relayed request as ours; its answer goes to the origin.

        Raises :class:`SessionClosed` or :class:`LocalProtocolError` (not sent), and
        :class:`RequestTimeout` when our outbox stayed full for ``request_timeout``.
        Cancellation: atomic (queued whole, or forgotten).
        """
        if self.closing:
            raise SessionClosed(self.close_reason or "the session is closing")
        if self._phase:
            self.wake()
        target_id, data = self.connection.send_request(
            relayed.method, params, with_progress=relayed.token is not None, raw_result=True
        )
        relayed.target, relayed.target_id = self, target_id
        self._waiters[target_id] = relayed
        self._run.reader_wakeup.set()  # a reader paused at max_in_flight must read the answer
        message = Outgoing(data)
        if self._wrote_now(message):
            return
        try:
            try:
                self._run.outbox_send.send_nowait(message)
                full = False
            except trio.WouldBlock:
                full = True
            if full:
                # The origin's reader waits here (backpressure), but not for ever: it
                # must go on reading to see its own peer leave.
                with trio.move_on_after(self.options.request_timeout) as waited:
                    await self._run.outbox_send.send(message)
                if waited.cancelled_caught:
                    raise RequestTimeout(
                        f"the peer read nothing for {self.options.request_timeout:g}s"
                    )
        except BaseException as exc:
            self._waiters.pop(target_id, None)
            self.connection.cancel_outbound(target_id)
            if isinstance(exc, _PEER_GONE):
                raise SessionClosed("the session is closed") from None
            raise

    def _wrote_now(self, message: Outgoing) -> bool:
        """Write ``message`` at once when the transport can and nothing is queued before it
        (saves the hop to the writer task; order kept as in :meth:`_write_reply_directly`)."""
        send_now = self._send_now
        if send_now is None or self._run.write_busy or self.closing:
            return False
        stats = self._run.outbox_send.statistics()
        if stats.current_buffer_used or not stats.tasks_waiting_receive:
            return False
        return send_now(message)

    async def _settle_relayed(self, relayed: Relayed, result: Any, error: McpError | None) -> None:
        """Origin side: answer the peer's relayed request (from the target's reader)."""
        request_id = relayed.origin_id
        if self._relayed.get(request_id) is not relayed:
            return  # cancelled, or this session closed, meanwhile
        del self._relayed[request_id]
        self._relay_ended()
        try:
            if error is None:
                data = self.connection.send_result(request_id, result)
            else:
                data = self.connection.send_error(request_id, error)
        except LocalProtocolError as exc:
            logger.debug("relayed answer to %r dropped: %s", request_id, exc)
            return
        await self._reply(request_id, data, None)

    async def _relay_progress(
        self, relayed: Relayed, progress: float, total: float | None, message: str | None
    ) -> None:
        """Origin side: pass on the target's progress under the peer's token."""
        if self._relayed.get(relayed.origin_id) is relayed:
            await self._pass_progress(relayed, progress, total, message, relayed.origin_id)

    async def _relay_task_progress(
        self, relayed: Relayed, progress: float, total: float | None, message: str | None
    ) -> None:
        """Origin side: progress of the task a relayed request created, after its answer
        (the peer's token lives until the task ends; the target's connection tracks it)."""
        if not self.closing:
            await self._pass_progress(relayed, progress, total, message, None)

    async def _pass_progress(
        self,
        relayed: Relayed,
        progress: float,
        total: float | None,
        message: str | None,
        related: RequestId | None,
    ) -> None:
        """Send the peer a relayed progress update under its own token, if it goes forward
        (progress must increase); a closed session or a refused notification drops it."""
        last = relayed.last_progress
        if relayed.token is None or (last is not None and not progress > last):
            return
        relayed.last_progress = progress
        params: dict[str, Any] = {"progressToken": relayed.token, "progress": progress}
        if total is not None:
            params["total"] = total
        if message is not None:
            params["message"] = message
        with suppress(SessionClosed, LocalProtocolError):
            await self.send_notification(
                "notifications/progress", params, related_request_id=related
            )

    async def _drop_relayed(self, relayed: Relayed, reason: str) -> None:
        """Origin side: the peer cancelled (or we close): forget it, cancel it at the target
        (shielded, bounded by the target's ``cancel_notify_timeout``)."""
        request_id = relayed.origin_id
        if self._relayed.pop(request_id, None) is None:
            return
        self.connection.forget_inbound(request_id)
        self._relay_ended()
        target, target_id = relayed.target, relayed.target_id
        if (
            target is not None
            and target_id is not None
            and target._waiters.get(target_id) is relayed
        ):
            del target._waiters[target_id]
            await target._cancel_outbound(target_id, None, reason)

    async def _relay_notification(self, target: Session, method: str, params: Any) -> None:
        try:
            await target.send_notification(method, params)
        except (SessionClosed, LocalProtocolError) as exc:
            logger.debug("%s not relayed: %s", method, exc)

    def _relay_ended(self) -> None:
        if not self._contexts and not self._relayed:
            self._run.handlers_idle.set()
        self._run.reader_wakeup.set()

    # --- handler tasks --------------------------------------------------------------------

    @trio.lowlevel.enable_ki_protection  # the reply too: see trimcp.session.outcome
    async def _run_handler(self, ctx: RequestContext) -> None:
        request_id = ctx.request_id
        try:
            outcome = await run_handler(self._handler.handle_request, ctx)
        finally:
            del self._contexts[request_id]
            if not self._contexts and not self._relayed:
                self._run.handlers_idle.set()
            self._run.reader_wakeup.set()
        reply: bytes | None = None
        if outcome.silent or (ctx.cancel_scope.cancel_called and self.closing):
            # Cancelled: the spec says no response. (Also when it returned anyway.)
            self.connection.forget_inbound(request_id)
        elif outcome.error is not None:
            reply = self.connection.send_error(request_id, outcome.error)
        else:
            reply = self._encode_result(ctx, outcome.result)
        batch = self._batch_of.pop(request_id, None)
        if reply is not None:
            await self._reply(request_id, reply, batch)
        elif batch is not None:
            batch.pending.discard(request_id)
            await self._maybe_flush_batch(batch)

    def _encode_result(self, ctx: RequestContext, result: Any) -> bytes:
        try:
            return self.connection.send_result(ctx.request_id, result)
        except Exception:
            logger.exception("cannot encode the result of %s (id %r)", ctx.method, ctx.request_id)
            return self.connection.send_error(ctx.request_id, McpError(INTERNAL_ERROR))

    async def _reply(self, request_id: RequestId, data: bytes, batch: _Batch | None) -> None:
        if batch is None:
            message = Outgoing(data, request_id, (request_id,))
            if not await self._write_reply_directly(message):
                await self._queue(message)
            return
        batch.pending.discard(request_id)
        batch.replies.append(data)
        batch.answered.append(request_id)
        await self._maybe_flush_batch(batch)

    async def _maybe_flush_batch(self, batch: _Batch) -> None:
        if not batch.pending and batch.replies:
            replies, batch.replies = batch.replies, []
            answered, batch.answered = tuple(batch.answered), []
            await self._queue(Outgoing(encode_batch(replies), None, answered))

    # --- the writer and the notifier ----------------------------------------------------------

    async def _queue(self, message: Outgoing) -> None:
        """Queue a message for the writer; drops it quietly once the peer is gone."""
        try:
            # No scheduler pass when there is room (the common case): only a full outbox
            # makes us wait.
            self._run.outbox_send.send_nowait(message)
        except trio.WouldBlock:
            try:
                await self._run.outbox_send.send(message)
            except _PEER_GONE:
                logger.debug("dropped an outgoing message: the session is closed")
        except _PEER_GONE:
            logger.debug("dropped an outgoing message: the session is closed")

    async def _write_loop(self) -> None:
        receive = self._run.outbox_recv
        try:
            async for first in receive:
                while self._run.write_busy:  # a direct reply is being written
                    await self._run.write_free.wait()
                self._run.write_busy = True
                try:
                    batch = [first]
                    while len(batch) < _WRITE_BATCH:
                        try:
                            batch.append(receive.receive_nowait())
                        except (trio.WouldBlock, trio.EndOfChannel):
                            break
                    await self._transport.send(batch)
                finally:
                    self._release_write()
        except _PEER_GONE:
            self.request_close("the peer stopped reading")
        finally:
            # Senders must not wait forever on a queue nobody drains any more (unless the
            # session is only going to rest: the next run drains it).
            if self._phase != _WINDING_DOWN:
                receive.close()
            self._run.writer_done.set()

    def _release_write(self) -> None:
        self._run.write_busy = False
        self._run.write_free.set()
        self._run.write_free = trio.Event()

    async def _write_reply_directly(self, message: Outgoing) -> bool:
        """Fast path for a final reply: write it from this task when nothing is queued.

        Saves the hop to the writer task (a quarter of the scheduling work of a sequential
        call). Only when the outbox is empty and no write is under way, so order is kept;
        and only for replies, which are written outside the handler's cancel scope, so a
        write is never cut in half by a handler being cancelled.
        """
        if self._run.write_busy or self.closing:
            return False
        stats = self._run.outbox_send.statistics()
        # The writer must be parked in receive(): a message handed straight to a waiting
        # writer leaves the buffer empty but is not written yet, and must go out first.
        if stats.current_buffer_used or not stats.tasks_waiting_receive:
            return False
        self._run.write_busy = True
        try:
            await self._transport.send([message])
        except _PEER_GONE:
            self.request_close("the peer stopped reading")
        finally:
            self._release_write()
        return True

    async def _notify_loop(self) -> None:
        async for method, params in self._run.notes_recv:
            try:
                if type(params) is TaskProgress:
                    await params.deliver()
                else:
                    await self._handler.handle_notification(self, method, params)
            except Exception:
                logger.exception("notification handler for %s failed", method)

    def _forget_ended_tasks(self) -> None:
        """Drop the callbacks of tasks whose end the connection saw (O(1) when none)."""
        if len(self._task_progress) > self.connection.followed_count():
            follows = self.connection.follows_task
            self._task_progress = {
                rid: callback for rid, callback in self._task_progress.items() if follows(rid)
            }

    async def _keepalive_loop(self, interval: float) -> None:
        misses = 0
        while not self.closing:
            await trio.sleep(interval)
            try:
                await self.send_request("ping", timeout=interval)
                misses = 0
            except RequestTimeout:
                misses += 1
                if misses >= self.options.keepalive_misses:
                    self.request_close(f"{misses} keepalive pings got no answer")
                    return
            except SessionClosed:
                return
            except McpError:
                misses = 0  # any answer proves the peer is alive

    # --- shutdown ---------------------------------------------------------------------------

    async def _run_services(self, run: _Run, *, task_status: trio.TaskStatus[None]) -> None:
        try:
            with run.services:
                async with trio.open_nursery() as services:
                    services.start_soon(self._close_when_asked)
                    services.start_soon(self._read_loop)
                    services.start_soon(self._write_loop)
                    services.start_soon(self._notify_loop)
                    if self.options.keepalive_interval is not None:
                        services.start_soon(self._keepalive_loop, self.options.keepalive_interval)
                    handler = self._handler
                    if isinstance(handler, SessionAttendant):
                        await services.start(handler.attend_session, self)
                    task_status.started()
        finally:
            run.services_done.set()

    async def _start(self, nursery: trio.Nursery) -> None:
        run = self._run
        run.nursery = nursery
        await nursery.start(self._run_services, run)

    async def _stop(self, nursery: trio.Nursery) -> None:
        """Close (bounded, shielded) and cancel whatever still runs in ``nursery``."""
        run = self._run
        if not run.services_done.is_set():
            self.request_close()
            with trio.CancelScope(shield=True) as scope:
                scope.deadline = trio.current_time() + self.options.close_bound
                await self._closed_signal().wait()
            run.services.cancel()  # shielded: the nursery's cancel cannot reach it
        nursery.cancel_scope.cancel()

    async def run_awake(
        self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
    ) -> bool:
        """Run the session's tasks until it closes (False) or rests (True).

        For the owner of a session made by :func:`resting_session`: run it in a task of a
        nursery that outlives the session, now and each time the ``waker`` asks. Reports
        started once the tasks run. Cancellation: the session closes with the bounded,
        shielded close sequence (a session just going to rest closes without tasks).
        """
        while True:
            async with open_nursery_unwrapped() as nursery:
                await self._start(nursery)
                task_status.started()
                task_status = trio.TASK_STATUS_IGNORED
                try:
                    await self._run.services_done.wait()
                finally:
                    if self._phase == _WINDING_DOWN and not self._run.services_done.is_set():
                        # Cancelled from outside while going to rest: nothing is under way.
                        with trio.CancelScope(shield=True):
                            await self._run.services_done.wait()
                            await self._close_quietly("the server is shutting down")
                    await self._stop(nursery)
            if self._phase != _WINDING_DOWN:
                return False  # closed
            if not self._wake_pending:
                self._rest()
                return True
            # Woken while the tasks were ending: run again, with the same queues.
            self._wake_pending = False
            self._phase = _AWAKE
            self._run = _Run(self.options, carry=self._run)
            if self._close_wanted:
                self._run.close_requested.set()

    def _rest(self) -> None:
        self._phase = _RESTING
        self._run = _RESTING_RUN
        # Emptied dicts keep the tables they grew to: start from fresh ones.
        self._contexts = {}
        self._waiters = {}
        self._relayed = {}
        self._batch_of = {}
        self.connection.compact()
        closed_event = self._closed_event
        if closed_event is not None and not closed_event.statistics().tasks_waiting:
            self._closed_event = None  # a later waiter makes a new one
        transport = self._transport
        if isinstance(transport, RestingTransport):
            transport.rest()

    async def _close_quietly(self, reason: str) -> None:
        """Close a session that has nothing under way and no tasks (bounded)."""
        if not self._close_wanted:
            self._close_wanted = True
            self.close_reason = reason
        self.closing = True
        self._phase = _AWAKE
        self.connection.close()
        self._task_progress.clear()
        await self._close_transport()

    async def _close_transport(self) -> None:
        """The last step of every close: the transport (bounded), then closed."""
        with trio.move_on_after(self.options.close_timeout):
            await self._transport.aclose()
        self._mark_closed()

    async def _close_when_asked(self) -> None:
        await self._run.close_requested.wait()
        with trio.CancelScope(shield=True):
            await self._shutdown()

    async def _shutdown(self) -> None:
        options = self.options
        self.closing = True
        logger.debug("closing session: %s", self.close_reason)
        with trio.move_on_after(options.shutdown_grace):
            await self._run.handlers_idle.wait()
        for ctx in list(self._contexts.values()):
            ctx.cancel_scope.cancel()
        for relayed in list(self._relayed.values()):
            await self._drop_relayed(relayed, "the session closed")
        with trio.move_on_after(options.cancel_notify_timeout):
            await self._run.handlers_idle.wait()
        self.connection.close()
        self._task_progress.clear()
        reason = self.close_reason or "session closed"
        for request_id, waiter in list(self._waiters.items()):
            if isinstance(waiter, Relayed):
                del self._waiters[request_id]
                error = McpError(
                    INTERNAL_ERROR,
                    f"The upstream session closed before answering {waiter.method} ({reason})",
                )
                with trio.move_on_after(options.cancel_notify_timeout):
                    await waiter.origin._settle_relayed(waiter, None, error)
            elif not waiter.done:
                waiter.fail(SessionClosed(f"Session closed before an answer arrived ({reason})"))
        self._run.outbox_send.close()
        self._run.notes_send.close()
        with trio.move_on_after(options.flush_timeout):
            await self._run.writer_done.wait()
        await self._close_transport()
        # Reader, writer, notifier and keepalive go now; handler stragglers are cancelled
        # by open_session when its body is done.
        self._run.services.cancel()


@asynccontextmanager
async def open_session(
    transport: Transport,
    *,
    role: Role,
    handler: SessionHandler,
    options: SessionOptions | None = None,
) -> AsyncIterator[Session]:
    """Run an MCP session over ``transport`` for the body of the ``async with``.

    The session's tasks live in a nursery this context manager owns. Leaving the block
    closes the session with the bounded sequence of :meth:`Session.aclose` (also when the
    block raises or is cancelled: the close is shielded and takes at most
    ``options.close_bound`` seconds); handler tasks still running after that are cancelled.
    If the peer closes first, pending requests fail with :class:`SessionClosed`, later ones
    raise it, and the block keeps running until it ends (it is not cancelled). A single error is
    raised as itself, not wrapped in an exception group.
    """
    options = options or SessionOptions()
    async with open_nursery_unwrapped() as nursery:
        session = Session(transport, role, handler, options)
        await session._start(nursery)
        try:
            yield session
        finally:
            session.request_close()
            await session._stop(nursery)


def resting_session(
    transport: Transport,
    *,
    role: Role,
    handler: SessionHandler,
    waker: Callable[[Session], None],
    rest_after: float | None,
    options: SessionOptions | None = None,
) -> Session:
    """A session that rests when idle, for owners that keep many mostly idle sessions.

    Returns it with no tasks: the owner runs :meth:`Session.run_awake` in a task of its
    own long-lived nursery right away, and again each time ``waker(session)`` is called
    (synchronously, from any task: start the task, do not wait for it). Once nothing has
    been under way for ``rest_after`` seconds, ``run_awake`` returns True and the session
    keeps only its state (``rest_after=None``: it never rests). The owner calls
    :meth:`Session.wake` before feeding the transport; the transport needs a
    ``can_rest()`` method (True when it holds no input for the session), else the session
    never rests. Keepalive pings, and a handler with ``attend_session`` but no
    ``can_rest(session)``, also keep it awake.
    """
    return Session(
        transport, role, handler, options or SessionOptions(), waker=waker, rest_after=rest_after
    )


async def serve_session(
    transport: Transport,
    handler: SessionHandler,
    *,
    role: Role = Role.SERVER,
    options: SessionOptions | None = None,
    task_status: trio.TaskStatus[Session] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Serve one session until either side closes it; reports the session when started.

    Cancellation: cancelling this call closes the session with the bounded close sequence.
    """
    async with open_session(transport, role=role, handler=handler, options=options) as session:
        task_status.started(session)
        await session.wait_closed()


__all__ = [
    "LocalProtocolError",
    "Session",
    "SessionHandler",
    "open_session",
    "resting_session",
    "serve_session",
]
