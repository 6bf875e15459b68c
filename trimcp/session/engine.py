"""The session engine: one nursery per session, one cancel scope per inbound request.

Tasks a session owns, all in its nursery (see docs/concurrency.md):

- the **reader** pulls messages from the transport, feeds the protocol core and acts on
  its events: starts a handler task per request, cancels scopes, completes waiters (a
  transport's owner may hand it a request directly instead, while the reader waits:
  :meth:`Session.receive_now`);
- the **writer** drains the bounded outbox into the transport, coalescing what is queued;
- the **notifier** runs notification handlers one at a time, in arrival order;
- one **handler task** per inbound request, inside that request's ``CancelScope``;
- the **closer** runs the shutdown sequence once, whoever asks for it;
- optionally the **keepalive** pinger.

Callers of :meth:`Session.send_request` wait in their own task; nothing a session starts
outlives it. This module is the loop and the one owner of a session's tables; the rest has
its own module and owns its own fields: the handler outcome (:mod:`trimcp.session.outcome`),
the writer (:mod:`trimcp.session.writer`), an awake spell's queues (:mod:`trimcp.session.run`),
resting (:mod:`trimcp.session.resting`), the close state and sequence and keepalive
(:mod:`trimcp.session.closing`) and the proxy's relayed requests
(:mod:`trimcp.session.relay`). They reach the session through small protocols of its public
members (no other module touches a Session's private attributes; ``tests/test_owners.py``).
"""

from __future__ import annotations

import logging
import math
import secrets
from collections.abc import AsyncIterator, Callable, Hashable
from contextlib import asynccontextmanager, suppress
from contextvars import copy_context
from typing import Any, Protocol

import trio

from trimcp._groups import open_nursery_unwrapped
from trimcp._sealed import SEALED
from trimcp._validators import DEFAULT
from trimcp.errors import (
    CONNECTION_CLOSED,
    INTERNAL_ERROR,
    LocalProtocolError,
    McpError,
    RequestTimeout,
    SessionClosed,
)
from trimcp.protocol.connection import Connection
from trimcp.protocol.events import (
    BatchReceived,
    CancelReceived,
    ErrorReceived,
    Event,
    LateResponseReceived,
    MessageIgnored,
    MessageRejected,
    NotificationReceived,
    ProgressReceived,
    RequestReceived,
    ResponseReceived,
)
from trimcp.protocol.jsonrpc import Message, Request, RequestId, encode_batch, encode_error
from trimcp.protocol.lifecycle import Role, State
from trimcp.protocol.methods import Method, P, R, expect_result
from trimcp.protocol.negotiated import Negotiated
from trimcp.session.closing import Closer, keepalive
from trimcp.session.context import RequestContext
from trimcp.session.hooks import (
    ImmediateTransport,
    RequestRelay,
    RestingHandler,
    RestingTransport,
    SessionAttendant,
)
from trimcp.session.late import LateAnswer, LateAnswers
from trimcp.session.options import SessionOptions
from trimcp.session.outbound import ProgressCallback, TaskProgress, Waiter
from trimcp.session.outcome import run_handler
from trimcp.session.relay import Relay
from trimcp.session.resting import RESTING, Resting
from trimcp.session.run import RESTING_RUN, Run
from trimcp.session.transport import MessageTooLarge, Outgoing, Transport
from trimcp.session.work import InboundWork, OutboundWork
from trimcp.session.writer import Outbox

logger = logging.getLogger("trimcp.session")

_PEER_GONE = (trio.EndOfChannel, trio.BrokenResourceError, trio.ClosedResourceError)
#: Requests :meth:`Session.receive_now` leaves to the reader (answered or relayed there).
_READER_ONLY = frozenset({"ping", "initialize"})

#: The options of every session made without any (frozen, so one serves them all).
_DEFAULT_OPTIONS = SessionOptions()


class Principals(Protocol):
    """Who each inbound request of a session acts for (see :attr:`Session.principals`)."""

    def auth_for(self, request_id: RequestId) -> Hashable | None:
        """The principal of the request ``request_id`` (None: anonymous)."""
        ...


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
        "_closer",
        "_connection",
        "_handler",
        "_inbound",
        "_late",
        "_relay",
        "_resting",
        "_run",
        "_task_progress",
        "_transport",
        "_waiters",
        "options",
        "owner_key",
        "principals",
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
        #: ``principals.auth_for(request_id)``: who an inbound request acts for, as the
        #: transport authenticated it (the HTTP server sets it, to the session's transport;
        #: None: every request is anonymous). Read once per request, into that request's
        #: own context.
        self.principals: Principals | None = None
        #: What owns this session's anonymous state (its tasks): random and secret, or the
        #: HTTP session id (the same on every replica that serves the session).
        self.owner_key = secrets.token_hex(16)
        self._connection = Connection(role)
        self._transport = transport
        self._handler = handler
        #: The peer's requests under way here: a handler's context, or a record of work
        #: taken on without a handler task (a relayed request).
        self._inbound: dict[RequestId, RequestContext | InboundWork] = {}
        #: Our requests awaiting the peer's answer: a waiting task's, or a record whose
        #: answer goes elsewhere (a relayed request, at the session it was sent through).
        self._waiters: dict[RequestId, Waiter | OutboundWork] = {}
        #: Our task-augmented requests, answered, whose task still reports progress: the
        #: caller's progress callback (run in the notification task from then on). Made
        #: when first needed, like the batches' table: a resting session holds neither.
        self._task_progress: dict[RequestId, ProgressCallback] | None = None
        #: Our abandoned requests whose answer is still looked at (made when first needed).
        self._late: LateAnswers | None = None
        self._relay: Relay | None = None
        if isinstance(handler, RequestRelay):
            self._relay = Relay(handler)
            self._connection.pass_through = handler.relays
        self._batch_of: dict[RequestId, _Batch] | None = None
        # Made when a close is asked for or awaited: an open, idle session holds none.
        self._closer: Closer | None = None
        # Resting needs an owner to wake it, a transport that can tell it holds nothing,
        # no keepalive pings, and a handler whose own session task (if any) can pause.
        self._resting: Resting | None = None
        if (
            waker is not None
            and rest_after is not None
            and isinstance(transport, RestingTransport)
            and options.keepalive_interval is None
            and (not isinstance(handler, SessionAttendant) or isinstance(handler, RestingHandler))
        ):
            self._resting = Resting(waker, rest_after, transport)
        self._run = self._new_run()

    # --- public API ---------------------------------------------------------------------

    @property
    def negotiated(self) -> Negotiated | None:
        """What the handshake agreed on (None before it completes)."""
        return self._connection.negotiated

    # Read-only views of the protocol state (the engine alone drives the connection).

    @property
    def protocol_version(self) -> str | None:
        """The agreed protocol version (None before the handshake, or adoption)."""
        return self._connection.protocol_version

    @property
    def state(self) -> State:
        """Where the session's lifecycle stands."""
        return self._connection.state

    @property
    def peer_initialized(self) -> bool:
        """Whether the peer has sent ``notifications/initialized``."""
        return self._connection.peer_initialized

    def own_has(self, *path: str) -> bool:
        """Whether we declared the capability at ``path`` (wire names)."""
        return self._connection.own_has(*path)

    def resting_state(self) -> dict[str, Any]:
        """The protocol state another process needs to go on with this session (JSON)."""
        return self._connection.resting_state()

    def restore_state(self, state: dict[str, Any]) -> None:
        """Take over a :meth:`resting_state` (on a fresh session; ValueError if it is not
        one). An operating session's peer counts as initialized: it has sent
        ``notifications/initialized``, perhaps to the process that made the state."""
        self._connection.restore(state)
        if self._connection.state is State.OPERATING:
            self._connection.peer_initialized = True

    def number_requests_from(self, first: int) -> None:
        """Number our next requests from ``first`` on (see :class:`Connection`)."""
        self._connection.number_requests_from(first)

    def adopt_stateless(self, negotiated: Negotiated) -> None:
        """Client role, 2026-07-28: operate at ``negotiated`` without a handshake."""
        self._connection.adopt_stateless(negotiated)

    @property
    def closing(self) -> bool:
        """Whether the close sequence has started (new requests are refused)."""
        closer = self._closer
        return closer is not None and closer.closing

    @property
    def closed(self) -> bool:
        """Whether the session has fully closed (by either side)."""
        closer = self._closer
        return closer is not None and closer.closed

    @property
    def close_reason(self) -> str | None:
        """Why the session closed (for logs and errors), once a close was asked for."""
        closer = self._closer
        return None if closer is None else closer.reason

    async def wait_closed(self) -> None:
        """Wait until the session has fully closed (by either side)."""
        await self._own_closer().signal().wait()

    def _own_closer(self) -> Closer:
        closer = self._closer
        if closer is None:
            closer = self._closer = Closer()
        return closer

    def _close_wanted(self) -> bool:
        closer = self._closer
        return closer is not None and closer.wanted

    def request_close(self, reason: str = "closed locally") -> None:
        """Start closing the session without waiting (see :meth:`aclose`)."""
        if self._own_closer().ask(reason):
            resting = self._resting
            if resting is not None and resting.phase:
                with suppress(SessionClosed):  # no owner to run it any more
                    self.wake()
            self._run.close_requested.set()
            _wake_reader(self._run)

    @property
    def busy(self) -> bool:
        """Whether a handler is running or a request of ours awaits the peer's answer."""
        return bool(self._inbound or self._waiters)

    @property
    def late_answers(self) -> int:
        """How many of our abandoned requests still have their answer looked at (see
        :mod:`trimcp.session.late`; bounded in count and time)."""
        late = self._late
        return 0 if late is None else len(late)

    @property
    def followed_tasks(self) -> int:
        """How many tasks created by our task-augmented requests are still followed for
        progress (0 once each has ended: their callbacks are dropped then)."""
        return max(self._connection.followed_count(), len(self._task_progress or ()))

    @property
    def resting(self) -> bool:
        """Whether the session is resting: no tasks, only its state (see :class:`Session`)."""
        resting = self._resting
        return resting is not None and resting.phase == RESTING

    def wake(self) -> None:
        """Make a resting session run again; does nothing to an awake one.

        The owner calls it before feeding the transport; sends and closes call it
        themselves. Synchronous: the session's queues exist when it returns, and its owner
        has been asked (the ``waker``) to run :meth:`run_awake` in a task. Raises what the
        waker raises (e.g. :class:`SessionClosed`: the owner runs nothing any more).
        """
        resting = self._resting
        if resting is not None and resting.phase and resting.wake(self):
            self._inbound, self._waiters = {}, {}
            self._connection.reopen()
            self._run = self._new_run()

    def _new_run(self, carry: Run | None = None) -> Run:
        """A run whose outbox writes to the transport (``carry``: keep that run's queues)."""
        transport = self._transport
        resting = self._resting
        outbox = Outbox(
            transport,
            self.options.outbox_size,
            on_peer_gone=lambda _unwritten: self.request_close("the peer stopped reading"),
            # Going to rest: the next run drains what is queued meanwhile.
            keep_queue=None if resting is None else resting.winding_down,
            send_now=transport.send_now if isinstance(transport, ImmediateTransport) else None,
            carry=None if carry is None else carry.outbox,
        )
        run = Run(self.options, outbox, carry, handlers_busy=self._handlers_busy)
        if self._close_wanted():
            run.close_requested.set()
        return run

    async def aclose(self) -> None:
        """Close the session and wait until it is closed.

        Sequence: refuse new requests; let in-flight handlers finish within
        ``shutdown_grace``; cancel the rest; fail our pending requests with
        :class:`SessionClosed`; flush replies already queued (``flush_timeout``); close the
        transport (``close_timeout``). Cancellation: the sequence runs in the session's own
        task and is not interrupted by cancelling the caller, who just stops waiting.
        """
        self.request_close()
        await self._own_closer().signal().wait()

    async def send_request(
        self,
        method: str,
        params: Any = None,
        *,
        timeout: float | None = DEFAULT,
        on_progress: ProgressCallback | None = None,
        reset_timeout_on_progress: bool = False,
        related_request_id: RequestId | None = None,
        on_sent: Callable[[RequestId], None] | None = None,
        on_late_answer: LateAnswer | None = None,
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
        propagates as usual. ``on_late_answer``: an answer that still comes after the
        caller was cancelled or timed out goes to it instead of being dropped (its result
        as decoded JSON; run in the session's nursery, errors logged; bounded, see
        :mod:`trimcp.session.late`).
        """
        if self.closing:
            raise SessionClosed(f"Cannot send {method}: {self.close_reason or 'session closing'}")
        if self._resting is not None:
            self.wake()
        if timeout is DEFAULT:
            timeout = self.options.request_timeout
        elif timeout is None:
            timeout = math.inf
        start = trio.current_time()
        hard = (
            start + max(timeout, self.options.max_request_timeout)
            if reset_timeout_on_progress
            else start + timeout
        )
        request_id, data = self._connection.send_request(
            method, params, with_progress=on_progress is not None
        )
        if on_sent is not None:
            on_sent(request_id)
        waiter = Waiter(timeout, hard, reset_timeout_on_progress)
        if on_progress is not None and self._connection.creates_task(request_id):
            # Task-augmented: progress may go on after the answer; deliver all of it in
            # the notification task, so it arrives in order whoever waits.
            waiter.follow = on_progress
        self._waiters[request_id] = waiter
        _wake_reader(self._run)  # a reader paused at max_in_flight must read our answer
        queued = False
        try:
            await self._run.outbox.send(Outgoing(data, related_request_id))
            queued = True
            with trio.CancelScope(deadline=start + timeout) as deadline:
                waiter.deadline_scope = deadline
                return await waiter.wait(on_progress)
        except _PEER_GONE:
            self._connection.cancel_outbound(request_id)
            raise SessionClosed(f"Cannot send {method}: the session is closed") from None
        except BaseException:
            if not waiter.done:
                if queued:
                    await self._cancel_outbound(
                        request_id, related_request_id, "cancelled", on_late_answer
                    )
                else:
                    self._connection.cancel_outbound(request_id)
            elif on_late_answer is not None and waiter.error is None:
                self._late_answered(on_late_answer, waiter.result)  # answered, never returned
            raise
        finally:
            self._waiters.pop(request_id, None)
        # Only the deadline scope catching its own cancellation gets here.
        if waiter.done:  # the answer and the deadline raced; the answer wins
            return await waiter.wait(on_progress)
        await self._cancel_outbound(request_id, related_request_id, "timed out", on_late_answer)
        raise RequestTimeout(f"{method} got no answer within {timeout:g}s")

    async def _cancel_outbound(
        self,
        request_id: RequestId,
        related: RequestId | None,
        reason: str,
        on_late_answer: LateAnswer | None = None,
    ) -> None:
        """Forget our request and tell the peer, shielded and bounded in time;
        ``on_late_answer`` is kept for its answer, should it still come."""
        data = self._connection.cancel_outbound(request_id, reason)
        if data is None:
            return
        if on_late_answer is not None:
            late = self._late
            if late is None:
                late = self._late = LateAnswers()
            late.expect(request_id, on_late_answer)
        item = Outgoing(data, related)
        try:
            self._run.outbox.send_nowait(item)
            return
        except trio.WouldBlock:
            pass
        except _PEER_GONE:
            return
        deadline = trio.current_time() + self.options.cancel_notify_timeout
        with trio.CancelScope(shield=True, deadline=deadline), suppress(*_PEER_GONE):
            await self._run.outbox.send(item)

    async def request(
        self,
        method: Method[P, R],
        params: P,
        *,
        timeout: float | None = DEFAULT,
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
        data = self._connection.send_notification(method, params)
        if self._resting is not None:
            self.wake()
        try:
            await self._run.outbox.send(Outgoing(data, related_request_id))
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

    async def ping(self, *, timeout: float | None = DEFAULT) -> None:
        """Send ``ping`` and wait for the answer."""
        await self.send_request("ping", timeout=timeout)

    # --- the reader -----------------------------------------------------------------------

    async def _read_loop(self) -> None:
        transport = self._transport
        resting = self._resting
        rest_after = None if resting is None else resting.rest_after
        quiet_until: float | None = None  # (a request taken by receive_now meanwhile)
        # The tasks the reader starts see the session's context variables (its transport's,
        # say): so do those receive_now starts from another task.
        self._run.context = copy_context()
        self._run.clock = trio.lowlevel.current_clock()
        try:
            while True:
                await self._wait_for_capacity()
                try:
                    if rest_after is None:
                        data = await transport.receive()
                    else:
                        # Only the reader decides to rest: it is the one task that knows
                        # it holds no message half-handled (a cancelled receive got none).
                        if quiet_until is None:
                            quiet_until = trio.current_time() + rest_after
                        run = self._run
                        with trio.move_on_at(quiet_until) as quiet:
                            run.quiet, run.quiet_until = quiet, quiet_until
                            try:
                                data = await transport.receive()
                            finally:
                                run.quiet = None
                        if quiet.cancelled_caught:
                            assert resting is not None
                            # Quiet since the last message, whoever took it.
                            quiet_until = self._run.taken_at + rest_after
                            if quiet_until > trio.current_time():
                                continue
                            quiet_until = None
                            if self._may_rest() and resting.begin_rest(self._run):
                                return
                            continue
                        quiet_until = None
                except MessageTooLarge as exc:
                    logger.warning("dropped an oversized message: %s", exc)
                    await self._run.outbox.queue(Outgoing(encode_error(None, exc)))
                    continue
                if isinstance(data, bytes):
                    event = self._connection.receive(data)
                else:  # parsed once already, by the transport
                    event = self._connection.receive_object(data.value)
                await self._on_event(event)
        except _PEER_GONE:
            self.request_close("the peer closed the connection")

    def receive_now(self, message: Message) -> bool:
        """Take one message its transport's owner parsed and classified already, in the
        caller's task instead of the reader's. True: taken (its handler started, or its
        refusal on its way); False: feed it to the transport as usual.

        Only while the reader waits on an empty transport (the owner asks its transport,
        e.g. ``HttpSessionTransport.reader_waiting()``): everything read before is handled
        then, so taking this message now keeps the order. Only what the reader would take
        without waiting and that leaves it where it is: a request (not a ping or an
        initialize) of an awake session that is not closing, with room below
        ``max_in_flight`` after it, and no relay. Saves a task switch, a queue and a
        cancel scope per request. Synchronous: nothing can come between the checks and the
        taking.
        """
        if type(message) is not Request or message.method in _READER_ONLY:
            return False
        closer = self._closer
        if (
            self._relay is not None
            or (closer is not None and closer.closing)
            or len(self._inbound) + 1 >= self.options.max_in_flight
        ):
            return False
        run = self._run
        resting = self._resting
        # (read once: the quiet time and the handler's deadline)
        clock = run.clock
        now = trio.current_time() if clock is None else clock.current_time()
        if resting is not None:
            if resting.phase:  # not awake: its reader is not waiting for this
                return False
            run.taken_at = now  # the reader's quiet time starts again
            quiet = run.quiet
            if quiet is not None and run.quiet_until - now < resting.rest_after / 2:
                # Its deadline moves on (at most twice a quiet time, while calls come):
                # waking the reader costs far more than moving it, and it would only
                # find the session busy. Never later than the quiet time after this call.
                run.quiet_until = quiet.deadline = now + resting.rest_after
        event = self._connection.receive_message(message)
        if self._task_progress:
            self._forget_ended_tasks()
        if type(event) is RequestReceived:
            run.context.run(self._start_handler, event, None, now)
        else:  # refused by the protocol: answered from a task (the reply may wait for room)
            assert isinstance(event, MessageRejected)
            run.context.run(run.nursery.start_soon, self._on_rejected, event, None)
        return True

    def _may_rest(self) -> bool:
        """Nothing of the session's own is under way (the reader asks, before resting):
        no handler or relayed request, no request of ours awaiting an answer, no
        half-answered batch, no close asked for, the handler's own session task at rest."""
        if self._inbound or self._waiters or self._batch_of or self._close_wanted():
            return False
        handler = self._handler
        return not isinstance(handler, RestingHandler) or handler.can_rest(self)

    async def _wait_for_capacity(self) -> None:
        # Stop reading while the handlers are at the limit: the peer then blocks on its
        # writes (backpressure). Not while we wait for answers from the peer, though: a
        # handler waiting on, say, sampling needs the reader, or the session deadlocks.
        while (
            len(self._inbound) >= self.options.max_in_flight
            and not self._waiters
            and not self._close_wanted()
        ):
            wakeup = self._run.reader_wakeup = trio.Event()
            await wakeup.wait()

    async def _on_event(self, event: Event, batch: _Batch | None = None) -> None:
        kind = type(event)
        if self._task_progress:
            self._forget_ended_tasks()  # the event may have ended a task we follow
        if kind is RequestReceived:
            assert isinstance(event, RequestReceived)
            await self._on_request(event, batch)
        elif kind is ResponseReceived:
            assert isinstance(event, ResponseReceived)
            await self._on_response(event)
        elif kind is NotificationReceived:
            assert isinstance(event, NotificationReceived)
            await self._on_notification(event)
        elif kind is CancelReceived:
            assert isinstance(event, CancelReceived)
            await self._on_cancel(event)
        elif kind is ProgressReceived:
            assert isinstance(event, ProgressReceived)
            await self._on_progress(event)
        elif kind is ErrorReceived:
            assert isinstance(event, ErrorReceived)
            await self._on_error(event)
        elif kind is MessageRejected:
            assert isinstance(event, MessageRejected)
            await self._on_rejected(event, batch)
        elif kind is BatchReceived:
            assert isinstance(event, BatchReceived)
            await self._on_batch(event)
        elif kind is LateResponseReceived:
            assert isinstance(event, LateResponseReceived)
            self._on_late_response(event)
        else:
            assert isinstance(event, MessageIgnored)
            logger.debug("ignored a message: %s", event.reason)

    async def _on_response(self, event: ResponseReceived) -> None:
        waiter = self._waiters.get(event.id)
        if type(waiter) is Waiter:
            waiter.resolve(event.result)
            if waiter.follow is not None and self._connection.follows_task(event.id):
                self._follow_task(event.id, waiter.follow)
        elif waiter is not None:
            assert not isinstance(waiter, Waiter)
            # Another kind of work (a relayed request): it takes the answer itself.
            del self._waiters[event.id]
            follow = waiter.follow
            if follow is not None and self._connection.follows_task(event.id):
                self._follow_task(event.id, follow)
            await waiter.answered(event.result)

    def _on_late_response(self, event: LateResponseReceived) -> None:
        late = self._late
        handler = None if late is None else late.take(event.id)
        if handler is None:
            logger.debug("ignored a message: response for cancelled request %r", event.id)
            return
        self._late_answered(handler, event.result)

    def _late_answered(self, handler: LateAnswer, result: Any) -> None:
        """Run ``handler`` on an answer its caller never got, in the session's nursery
        (never blocking the reader); its errors are logged, never raised into the session."""

        async def run() -> None:
            try:
                await handler(result)
            except Exception:
                logger.exception("handling the late answer of an abandoned request failed")

        try:
            self._run.nursery.start_soon(run)
        except RuntimeError:  # the session's nursery has closed: nobody can act on it
            logger.debug("dropped a late answer: the session has closed")

    async def _on_notification(self, event: NotificationReceived) -> None:
        # The relay, if the handler relays, sends it on from the reader, so it keeps its
        # place among the relayed requests.
        if self._relay is None or not await self._relay.took_notification(self, event):
            await self._run.notes_send.send((event.method, event.params))

    async def _on_cancel(self, event: CancelReceived) -> None:
        work = self._inbound.get(event.request_id)
        if type(work) is RequestContext:
            work.cancelled_by_peer = True
            work.cancel_scope.cancel()
        elif work is not None:
            assert not isinstance(work, RequestContext)
            await work.cancel("cancelled")

    async def _on_progress(self, event: ProgressReceived) -> None:
        waiter = self._waiters.get(event.request_id)
        if waiter is not None and not isinstance(waiter, Waiter):
            await waiter.progressed(event.progress, event.total, event.message)
        elif waiter is not None and waiter.follow is None:
            waiter.add_progress(event.progress, event.total, event.message)
        else:
            if waiter is not None:
                waiter.extend_deadline()
            follow = waiter.follow if waiter is not None else None
            if follow is None and self._task_progress:
                follow = self._task_progress.get(event.request_id)
            if follow is not None:
                update = TaskProgress(follow, event.progress, event.total, event.message)
                await self._run.notes_send.send(("notifications/progress", update))

    async def _on_rejected(self, event: MessageRejected, batch: _Batch | None) -> None:
        logger.log(
            logging.DEBUG if event.expected else logging.WARNING,
            "rejected a message from the peer: %s",
            event.error.message,
        )
        if event.reply is None:
            return
        if batch is not None:
            batch.replies.append(event.reply)
            batch.answered.extend(event.answers)
        else:
            # Say which requests the refusal settles (all of a batch refused whole), so a
            # transport waiting for their answers stops waiting.
            answers = event.answers
            await self._run.outbox.queue(
                Outgoing(event.reply, answers[0] if answers else None, answers)
            )

    async def _on_error(self, event: ErrorReceived) -> None:
        if event.id is None:
            logger.warning(
                "the peer reported an error it could not tie to a request: %s (%s)",
                event.error.message,
                event.error.code,
            )
            return
        waiter = self._waiters.get(event.id)
        if type(waiter) is Waiter:
            waiter.fail(event.error)
        elif waiter is not None:
            assert not isinstance(waiter, Waiter)
            del self._waiters[event.id]
            await waiter.failed(event.error)

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
            await self._reply(request_id, self._connection.send_result(request_id, {}), batch)
            return
        refusal: McpError | None = None
        closer = self._closer  # self.closing, inlined: once per request
        if closer is not None and closer.closing:
            refusal = McpError(CONNECTION_CLOSED, "Session is closing")
        elif len(self._inbound) >= self.options.max_in_flight:
            refusal = McpError(INTERNAL_ERROR, "Too many requests in flight; try again later")
        if refusal is not None:
            await self._reply(request_id, self._connection.send_error(request_id, refusal), batch)
            return
        if (
            self._relay is not None
            and batch is None
            and event.method != "initialize"
            and await self._relay.took_request(self, event)
        ):
            return
        self._start_handler(event, batch)

    def _start_handler(
        self, event: RequestReceived, batch: _Batch | None, now: float | None = None
    ) -> None:
        """Start the handler task of the peer's request (admitted, below the limit).

        ``now``: the Trio clock as the caller just read it (else it is read here)."""
        request_id = event.id
        scope = trio.CancelScope()
        timeout = self.options.handler_timeout
        if timeout is not None:
            scope.deadline = (trio.current_time() if now is None else now) + timeout
        principals = self.principals
        ctx = RequestContext(
            self,
            request_id,
            event.method,
            event.params,
            event.progress_token,
            scope,
            principal=None if principals is None else principals.auth_for(request_id),
        )
        self._inbound[request_id] = ctx
        if batch is not None:
            if self._batch_of is None:
                self._batch_of = {}
            self._batch_of[request_id] = batch
        self._run.nursery.start_soon(self._run_handler, ctx, name=_HANDLER_TASK)

    # --- handler tasks --------------------------------------------------------------------

    @trio.lowlevel.enable_ki_protection  # the reply too: see trimcp.session.outcome
    async def _run_handler(self, ctx: RequestContext) -> None:
        request_id = ctx.request_id
        try:
            outcome = await run_handler(self._handler.handle_request, ctx)
        finally:
            del self._inbound[request_id]
            run = self._run
            # (no frame when nobody waits for a handler to end: once per request)
            if run.idle_waiter is not None or run.reader_wakeup is not None:
                self._handler_ended()
        reply: bytes | None = None
        connection = self._connection
        closer = self._closer  # self.closing, inlined (and asked before the scope)
        closing = closer is not None and closer.closing
        if outcome.silent or (closing and ctx.cancel_scope.cancel_called):
            # Cancelled: the spec says no response. (Also when it returned anyway.)
            connection.forget_inbound(request_id)
        elif outcome.error is not None:
            reply = connection.send_error(request_id, outcome.error)
        else:
            try:
                reply = connection.send_result(request_id, outcome.result)
            except Exception:
                logger.exception("cannot encode the result of %s (id %r)", ctx.method, request_id)
                reply = connection.send_error(request_id, McpError(INTERNAL_ERROR))
        batch = self._batch_of.pop(request_id, None) if self._batch_of else None
        if reply is not None:
            if batch is None and not closing:
                # A transport that takes the reply at once (an HTTP JSON answer, a pipe
                # with room) takes it here: no coroutine of _reply, reply_directly and
                # the transport's send per reply. Else as _reply does. (``closing`` is
                # still what _reply would find: nothing was awaited since.)
                message = Outgoing(reply, request_id, (request_id,))
                outbox = self._run.outbox
                if not outbox.write_now(message) and not await outbox.reply_directly(message):
                    await outbox.queue(message)
                return
            await self._reply(request_id, reply, batch)
        elif batch is not None:
            batch.pending.discard(request_id)
            await self._maybe_flush_batch(batch)

    def _handler_ended(self) -> None:
        """One of the peer's requests is over: wake whoever waits for that (the closer
        once none is left, a reader paused at max_in_flight). No event is made or set
        when nobody waits (the usual case: once per request)."""
        run = self._run
        if not self._inbound:
            idle = run.idle_waiter
            if idle is not None:
                run.idle_waiter = None
                idle.set()
        wakeup = run.reader_wakeup
        if wakeup is not None:
            run.reader_wakeup = None
            wakeup.set()

    def _handlers_busy(self) -> bool:
        return bool(self._inbound)

    async def _reply(self, request_id: RequestId, data: bytes, batch: _Batch | None) -> None:
        if batch is None:
            message = Outgoing(data, request_id, (request_id,))
            outbox = self._run.outbox
            closer = self._closer  # self.closing, inlined: once per reply
            if (closer is not None and closer.closing) or not await outbox.reply_directly(message):
                await outbox.queue(message)
            return
        batch.pending.discard(request_id)
        batch.replies.append(data)
        batch.answered.append(request_id)
        await self._maybe_flush_batch(batch)

    async def _maybe_flush_batch(self, batch: _Batch) -> None:
        if not batch.pending and batch.replies:
            replies, batch.replies = batch.replies, []
            answered, batch.answered = tuple(batch.answered), []
            await self._run.outbox.queue(Outgoing(encode_batch(replies), None, answered))

    # --- the notifier (the writer: trimcp.session.writer) -------------------------------------

    async def _notify_loop(self) -> None:
        async for method, params in self._run.notes_recv:
            try:
                if type(params) is TaskProgress:
                    await params.deliver()
                else:
                    await self._handler.handle_notification(self, method, params)
            except Exception:
                logger.exception("notification handler for %s failed", method)

    def _follow_task(self, request_id: RequestId, follow: ProgressCallback) -> None:
        """Deliver the progress of the task ``request_id`` created to ``follow`` until the
        task ends (in the notification task)."""
        if self._task_progress is None:
            self._task_progress = {}
        self._task_progress[request_id] = follow
        self._forget_ended_tasks()

    def _forget_ended_tasks(self) -> None:
        """Drop the callbacks of tasks whose end the connection saw (O(1) when none)."""
        table = self._task_progress
        if table and len(table) > self._connection.followed_count():
            follows = self._connection.follows_task
            self._task_progress = {rid: back for rid, back in table.items() if follows(rid)} or None

    # --- shutdown ---------------------------------------------------------------------------

    async def _run_services(self, run: Run, *, task_status: trio.TaskStatus[None]) -> None:
        try:
            with run.services:
                async with trio.open_nursery() as services:
                    services.start_soon(self._close_when_asked, run)
                    services.start_soon(self._read_loop)
                    services.start_soon(run.outbox.write_loop)
                    services.start_soon(self._notify_loop)
                    if self.options.keepalive_interval is not None:
                        services.start_soon(keepalive, self, self.options.keepalive_interval)
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
                await self._own_closer().signal().wait()
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
                run = self._run
                try:
                    await run.services_done.wait()
                finally:
                    resting = self._resting
                    if (
                        resting is not None
                        and resting.winding_down()
                        and not run.services_done.is_set()
                    ):
                        # Cancelled from outside while going to rest: nothing is under way.
                        with trio.CancelScope(shield=True):
                            await run.services_done.wait()
                            resting.give_up()
                            await self._own_closer().close_quietly(
                                self, "the server is shutting down"
                            )
                    await self._stop(nursery)
            resting = self._resting
            after = None if resting is None else resting.tasks_ended()
            if after is None:
                return False  # closed
            if after is RESTING:
                assert resting is not None
                self._rest(resting)
                return True
            # Woken while the tasks were ending: run again, with the same queues.
            self._run = self._new_run(carry=run)

    def _rest(self, resting: Resting) -> None:
        """The tasks have ended: keep only the state."""
        self._run = RESTING_RUN
        # Nothing is under way: the shared empty tables until the session wakes (an
        # emptied dict would keep the table it grew to; a fresh one still costs 64 B).
        self._inbound = SEALED
        self._waiters = SEALED
        self._batch_of = None
        self._connection.compact()
        closer = self._closer
        if closer is not None and closer.unwatched():
            self._closer = None
        resting.rest()

    async def _close_when_asked(self, run: Run) -> None:
        """The closer task: the close sequence (shielded) once a close is asked for."""
        await run.close_requested.wait()
        with trio.CancelScope(shield=True):
            await self._own_closer().shutdown(self, run)

    # --- for the satellites: the close sequence (CloseHost), relayed requests (RelayOrigin,
    # RelayTarget). Public so that they need no private access; of no use to anyone else.

    async def cancel_inbound(self, reason: str) -> None:
        """Cancel every handler, then every request of the peer taken on without one.

        For the close sequence. Cancellation: each record's own (a relayed request tells
        its target, shielded and bounded).
        """
        inbound = list(self._inbound.values())
        for work in inbound:
            if type(work) is RequestContext:
                work.cancel_scope.cancel()
        for work in inbound:
            if not isinstance(work, RequestContext):
                await work.cancel(reason)

    async def fail_outbound(self, reason: str) -> None:
        """The connection refuses new messages; our requests awaiting an answer fail with
        :class:`SessionClosed`, then the other work awaiting one is told (each bounded by
        ``cancel_notify_timeout``). For the close sequence."""
        self._connection.close()
        self._task_progress = None
        for waiter in list(self._waiters.values()):
            if type(waiter) is Waiter and not waiter.done:
                waiter.fail(SessionClosed(f"Session closed before an answer arrived ({reason})"))
        for request_id, work in list(self._waiters.items()):
            if not isinstance(work, Waiter):
                del self._waiters[request_id]
                with trio.move_on_after(self.options.cancel_notify_timeout):
                    await work.abandoned(reason)

    def adopt_inbound(self, request_id: RequestId, work: InboundWork) -> None:
        """Hold ``work`` as the peer's request ``request_id``, under way without a handler
        task (it counts against ``max_in_flight``; the close waits for it, then cancels it)."""
        self._inbound[request_id] = work

    def end_inbound(self, request_id: RequestId, *, forget: bool) -> None:
        """The peer's request ``request_id`` held by :meth:`adopt_inbound` is over
        (``forget``: it gets no answer); the reader and the closer may go on."""
        self._inbound.pop(request_id, None)
        if forget:
            self._connection.forget_inbound(request_id)
        self._handler_ended()

    async def answer(self, request_id: RequestId, result: Any, error: McpError | None) -> None:
        """Answer the peer's request ``request_id`` with ``result`` (JSON) or ``error``.

        Raises :class:`LocalProtocolError` when the core refuses (the id is not one of the
        peer's open requests). Cancellation: as the reply's queueing (atomic).
        """
        if error is None:
            data = self._connection.send_result(request_id, result)
        else:
            data = self._connection.send_error(request_id, error)
        await self._reply(request_id, data, None)

    async def send_forwarded(
        self, method: str, params: Any, work: OutboundWork, *, with_progress: bool
    ) -> RequestId:
        """Send a request of ours whose answer goes to ``work``, as decoded JSON.

        Returns its id. Raises :class:`SessionClosed` or :class:`LocalProtocolError` (not
        sent), and :class:`RequestTimeout` when the outbox stayed full for
        ``request_timeout``. Cancellation: atomic (queued whole, or forgotten).
        """
        if self.closing:
            raise SessionClosed(self.close_reason or "the session is closing")
        if self._resting is not None:
            self.wake()
        request_id, data = self._connection.send_request(
            method, params, with_progress=with_progress, raw_result=True
        )
        work.sent_as(request_id)
        self._waiters[request_id] = work
        run = self._run
        _wake_reader(run)  # a reader paused at max_in_flight must read the answer
        message = Outgoing(data)
        if run.outbox.write_now(message):
            return request_id
        try:
            try:
                run.outbox.send_nowait(message)
                full = False
            except trio.WouldBlock:
                full = True
            if full:
                # The origin's reader waits here (backpressure), but not for ever: it must
                # go on reading to see its own peer leave.
                timeout = self.options.request_timeout
                with trio.move_on_after(timeout) as waited:
                    await run.outbox.send(message)
                if waited.cancelled_caught:
                    raise RequestTimeout(f"the peer read nothing for {timeout:g}s")
        except BaseException as exc:
            self._waiters.pop(request_id, None)
            self._connection.cancel_outbound(request_id)
            if isinstance(exc, _PEER_GONE):
                raise SessionClosed("the session is closed") from None
            raise
        return request_id

    async def withdraw(self, request_id: RequestId, work: OutboundWork, reason: str) -> None:
        """Forget our request ``request_id`` if ``work`` still awaits its answer, and tell
        the peer (shielded, bounded by ``cancel_notify_timeout``)."""
        if self._waiters.get(request_id) is work:
            del self._waiters[request_id]
            await self._cancel_outbound(request_id, None, reason)


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
    options = options or _DEFAULT_OPTIONS
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
        transport, role, handler, options or _DEFAULT_OPTIONS, waker=waker, rest_after=rest_after
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


#: The name of every request handler's task (trio would make one per task from the
#: method's module and qualified name: an f-string and two attribute lookups a request).
_HANDLER_TASK = "trimcp request handler"


def _wake_reader(run: Run) -> None:
    """Wake the reader if it waits for room below max_in_flight (see _wait_for_capacity)."""
    wakeup = run.reader_wakeup
    if wakeup is not None:
        run.reader_wakeup = None
        wakeup.set()
