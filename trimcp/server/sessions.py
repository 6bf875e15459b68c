"""The sessions a server is serving, their state, and notifications the server starts.

Per session: the client's log level, its resource subscriptions, which lists changed
since it was last told, and how far it has read the bridged log records.

Delivery. ``*_list_changed`` notifications come from synchronous registry changes and
bridged log records from ``logging`` calls, neither of which may wait for a client. So
they only mark the session and wake its *delivery task*, which sends them at the pace of
that session alone (several changes before it runs make one notification per list).
Records logged while a request is handled are also sent before that request's answer.
:meth:`Server.serve_session <trimcp.server.app.Server.serve_session>` runs that task next
to the session; transports that make sessions themselves run :meth:`SessionTable.deliver`
(``Server.serve_notifications``). A session served without it still gets what is pending,
before and after each of its requests is handled.

``notifications/resources/updated`` is async (``await app.notify_resource_updated(uri)``)
and goes straight to the subscribed sessions, concurrently, each bounded in time.
"""

from __future__ import annotations

import contextlib
import logging
import weakref
from collections.abc import Awaitable, Callable, Iterable
from typing import TYPE_CHECKING, Any, Final

import attrs
import trio

from trimcp._groups import open_nursery_unwrapped
from trimcp.errors import LocalProtocolError, SessionClosed
from trimcp.protocol.jsonrpc import RequestId
from trimcp.server.logging import LogBuffer, json_data, level_enabled
from trimcp.types import LoggingLevel, LoggingMessageNotificationParams

if TYPE_CHECKING:
    from trimcp.session.engine import Session

logger = logging.getLogger("trimcp.server")

#: The lists a session can be told have changed, in the order they are sent.
LISTS: Final = ("tools", "resources", "prompts")


@attrs.define(eq=False)
class SessionState:
    """What the server remembers about one session."""

    log_position: int
    log_level: LoggingLevel | None = None
    # Made when first needed: most sessions never subscribe, lists rarely change, and a
    # resting session has no delivery task (thousands of idle sessions add up).
    subscriptions: set[str] | None = None
    changed: set[str] | None = None
    #: Set to wake the delivery task; exists while that task runs.
    wakeup: trio.Event | None = None
    delivered_by_task: bool = False
    flushing: bool = False
    dropped_logs: int = 0
    #: ``ctx.session_state``, made when first used.
    values: dict[str, Any] | None = None

    def subscribed(self, uri: str) -> bool:
        return self.subscriptions is not None and uri in self.subscriptions


class SessionTable:
    """Live sessions by :class:`Session` (weakly: a forgotten session just disappears)."""

    def __init__(self, log_buffer: LogBuffer, *, notify_timeout: float) -> None:
        self._states: weakref.WeakKeyDictionary[Session, SessionState] = weakref.WeakKeyDictionary()
        self._log_buffer = log_buffer
        self._token: trio.lowlevel.TrioToken | None = None
        self.notify_timeout = notify_timeout
        log_buffer.on_push = self._wake_from_anywhere

    def state(self, session: Session) -> SessionState:
        """The session's state, created on first use."""
        state = self._states.get(session)
        if state is None:
            state = SessionState(log_position=self._log_buffer.position)
            self._states[session] = state
            self._token = trio.lowlevel.current_trio_token()
        return state

    def values(self, session: Session) -> dict[str, Any]:
        """The per-session dict behind ``ctx.session_state`` (made on first use)."""
        state = self.state(session)
        if state.values is None:
            state.values = {}
        return state.values

    def live(self) -> list[tuple[Session, SessionState]]:
        return [(s, state) for s, state in list(self._states.items()) if not s.closing]

    def forget(self, session: Session) -> None:
        self._states.pop(session, None)

    # --- marking and waking ---------------------------------------------------------

    def mark_changed(self, kind: str, only: Callable[[Session], bool] | None = None) -> None:
        """Record that list ``kind`` changed, for every session past its handshake (for
        which ``only`` is true, when given); wake them.

        Synchronous. From a thread other than Trio's, the work is handed to Trio.
        """
        self._in_trio(self._mark, kind, only)

    def _mark(self, kind: str, only: Callable[[Session], bool] | None = None) -> None:
        for session, state in self.live():
            if only is not None and not only(session):
                continue
            # Every session whose handshake we answered, not only those whose
            # notifications/initialized we have read already: a change in between would
            # otherwise reach no one (list_changed is a notification, not a request, so
            # the "nothing before initialized" rule does not hold it back).
            if session.negotiated is not None:
                if state.changed is None:
                    state.changed = {kind}
                else:
                    state.changed.add(kind)
        self._wake_all()

    def wake(self, session: Session) -> None:
        """Wake ``session``'s delivery (e.g. once its client said it is initialized)."""
        state = self._states.get(session)
        if state is not None:
            self._wake_one(session, state)

    def _wake_one(self, session: Session, state: SessionState) -> None:
        if state.delivered_by_task:
            if state.wakeup is not None:
                state.wakeup.set()
        else:
            # A resting session (or one whose tasks are just ending to rest) runs again,
            # its delivery task with it, which sends what is pending. No-op when awake.
            with contextlib.suppress(SessionClosed):
                session.wake()

    def can_rest(self, session: Session) -> bool:
        """Whether ``session``'s delivery task is idle (so the session may rest)."""
        state = self._states.get(session)
        if state is None:
            return True
        wakeup = state.wakeup
        return not state.flushing and not (wakeup is not None and wakeup.is_set())

    def _wake_from_anywhere(self) -> None:
        self._in_trio(self._wake_all)

    def _in_trio(self, fn: Callable[..., None], *args: Any) -> None:
        try:
            trio.lowlevel.current_trio_token()
        except RuntimeError:
            # Not in the Trio thread: a worker thread, or no run at all (import time,
            # when there are no sessions to tell).
            token = self._token
            if token is not None:
                with contextlib.suppress(trio.RunFinishedError):
                    token.run_sync_soon(fn, *args, idempotent=True)
            return
        fn(*args)

    def _wake_all(self) -> None:
        for session, state in self.live():
            self._wake_one(session, state)

    # --- delivery -------------------------------------------------------------------

    async def deliver(
        self, session: Session, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
    ) -> None:
        """Send ``session`` its list-changed and bridged log notifications until it closes."""
        state = self.state(session)
        state.delivered_by_task = True
        state.wakeup = trio.Event()
        try:
            async with open_nursery_unwrapped() as nursery:
                nursery.start_soon(self._delivery_loop, session, state)
                task_status.started()
                await session.wait_closed()
                nursery.cancel_scope.cancel()
        finally:
            state.delivered_by_task = False
            state.wakeup = None
            if session.closing or session.closed:
                self.forget(session)
            elif self._pending(session, state):
                # The session is going to rest, but something arrived as this task ended
                # (its wake-up went to a task that was already cancelled): run again.
                with contextlib.suppress(SessionClosed):
                    session.wake()

    def _pending(self, session: Session, state: SessionState) -> bool:
        """Whether :meth:`flush` has something to send to ``session`` now."""
        return (
            bool(state.changed) or state.log_position != self._log_buffer.position
        ) and session.peer_initialized

    async def _delivery_loop(self, session: Session, state: SessionState) -> None:
        # What became pending while the session rested goes out first.
        wakeup = state.wakeup
        assert wakeup is not None
        if state.changed or state.log_position != self._log_buffer.position:
            wakeup.set()
        while True:
            await wakeup.wait()
            wakeup = state.wakeup = trio.Event()
            state.flushing = True
            try:
                if not await self.flush(session, state):
                    return
            finally:
                state.flushing = False

    async def answer(
        self, session: Session, handler: Callable[[Any], Awaitable[Any]], ctx: Any
    ) -> Any:
        """Run ``handler(ctx)`` for a request of ``session``, its pending notifications
        sent before (unless the delivery task does it) and the records logged while it
        ran sent before its answer (the delivery task may get there first; each record
        is sent once either way). Cancellation: as the handler's."""
        state = self.state(session)
        if not state.delivered_by_task:
            await self.flush_if_pending(session, state)
        result = await handler(ctx)
        await self.flush_if_pending(session, state)
        return result

    async def flush_if_pending(self, session: Session, state: SessionState) -> None:
        """:meth:`flush`, when something is pending (cheap to call when nothing is)."""
        if state.changed or state.log_position != self._log_buffer.position:
            await self.flush(session, state)

    async def flush(self, session: Session, state: SessionState) -> bool:
        """Send what is pending for ``session``; False once it is closed.

        Held (kept pending) until the client's ``notifications/initialized`` has arrived;
        :meth:`wake` is called then.
        """
        if session.negotiated is None or not session.peer_initialized:
            return True
        try:
            if state.changed:
                kinds, state.changed = state.changed, None
                for kind in LISTS:
                    if kind in kinds and session.own_has(kind, "listChanged"):
                        await session.send_notification(f"notifications/{kind}/list_changed")
            records, state.log_position, dropped = self._log_buffer.since(state.log_position)
            state.dropped_logs += dropped
            for params in records:
                if level_enabled(state.log_level, params.level):
                    await session.send_notification("notifications/message", params)
        except SessionClosed:
            return False
        except LocalProtocolError as exc:
            logger.debug("not delivered: %s", exc)
        return True

    # --- direct sends ---------------------------------------------------------------

    async def send_log(
        self,
        session: Session,
        level: LoggingLevel,
        data: Any,
        logger_name: str | None,
        related: RequestId | None,
    ) -> None:
        """Send one log message if the session's level lets it through.

        Bridged records still pending go first, so the client sees one ordered stream.
        """
        state = self.state(session)
        await self.flush_if_pending(session, state)
        if not level_enabled(state.log_level, level):
            return
        params = LoggingMessageNotificationParams(
            level=level, data=json_data(data), logger=logger_name
        )
        await session.send_notification("notifications/message", params, related_request_id=related)

    async def broadcast(self, sessions: Iterable[Session], method: str, params: Any) -> None:
        """Send a notification to each session concurrently, each within ``notify_timeout``.

        Sessions that close meanwhile, or cannot take the notification, are skipped.
        """
        targets = list(sessions)
        if not targets:
            return
        async with open_nursery_unwrapped() as nursery:
            for session in targets:
                nursery.start_soon(self._send_one, session, method, params)

    async def _send_one(self, session: Session, method: str, params: Any) -> None:
        with trio.move_on_after(self.notify_timeout) as scope:
            try:
                await session.send_notification(method, params)
            except (SessionClosed, LocalProtocolError) as exc:
                logger.debug("%s not delivered: %s", method, exc)
        if scope.cancelled_caught:
            logger.warning(
                "%s not delivered within %gs: the client is slow", method, self.notify_timeout
            )
