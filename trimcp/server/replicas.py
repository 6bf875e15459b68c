"""How one :class:`~trimcp.Server` hears and tells the other replicas (the store's bus).

Every change a server raises (a list changed, a resource was updated) is handled here the
same way, whether this replica raised it or the bus brought it from another: the
``subscriptions/listen`` streams open here hear it, and so do the sessions whose
server-to-client stream is here. The raising replica also publishes it on the bus (see
:mod:`trimcp.stores.bus`); the bus never hands a replica its own events back.

On a *shared* bus (replicas behind a load balancer) a 2025 session can be held by several
replicas at once (each request wakes it where it lands), but its GET stream is open on
one (or was last: the client may be reconnecting it). Only that one tells it of changes,
so the client hears each change once; what it sends while the stream is away is stored
for the client's resume. Its
resource subscriptions are kept in the store, since the ``resources/subscribe`` request
may have reached another replica. A session with no GET stream open anywhere hears no
changes (there is no stream to carry them; it lists again when it reconnects).

The log level a client sets (``logging/setLevel``) through one replica is kept in the
store and told to the others, so log messages sent from any replica honour it.

A ``tasks/cancel`` taken by a replica that does not run the task (its record is in the
shared task store; the work runs where it was created) is recorded there, then told to
the others: the one running it stops the work once the store confirms the cancel.

The answers of a ``tasks/update`` taken by a replica that does not run the task go to
every replica; the one running it hands them to the task, writes the task's record (it is
the record's one writer while the task runs) and then confirms to the replica that took
the update, which answers the client only then: so a ``tasks/get`` on any replica after
that answer shows the questions answered (read your writes).

On a one-process bus (the default) every session hears every change, as before.
"""

from __future__ import annotations

import logging
import secrets
import weakref
from collections.abc import Awaitable, Callable, Iterable
from typing import TYPE_CHECKING, Any, get_args

import trio

from trimcp.errors import INTERNAL_ERROR, McpError
from trimcp.stores.base import StoreUnavailable, log_unavailable
from trimcp.stores.bus import Bus, BusMessage, MemoryBus, ReplicaOutlet
from trimcp.types import LoggingLevel, ResourceUpdatedNotificationParams

if TYPE_CHECKING:
    from trimcp.server.listen import ListenHub
    from trimcp.server.sessions import SessionTable
    from trimcp.session import Session

logger = logging.getLogger("trimcp.server")

_LISTS = ("tools", "resources", "prompts")
_LEVELS = frozenset(get_args(LoggingLevel))


class ReplicaLink:
    """The bus side of one server: publishes its changes, applies everyone's."""

    def __init__(
        self,
        sessions: SessionTable,
        hub: ListenHub,
        on_list_changed: Callable[[str], None],
        *,
        max_subscriptions: int,
        on_task_cancelled: Callable[[str], Awaitable[None]],
        on_task_answered: Callable[[str, dict[str, Any]], Awaitable[bool]] | None = None,
    ) -> None:
        self._sessions = sessions
        self._hub = hub
        self._on_list_changed = on_list_changed
        self._on_task_cancelled = on_task_cancelled
        self._on_task_answered = on_task_answered
        self._max_subscriptions = max_subscriptions
        #: The tasks/update answers passed on from here that wait for the replica running
        #: their task to confirm them, by nonce (one entry per waiting request).
        self._confirmations: dict[str, trio.Event] = {}
        self.bus: Bus = MemoryBus()
        #: Shared sessions whose log level this replica has read from the store.
        self._learnt: weakref.WeakSet[Session] = weakref.WeakSet()
        self._unsubscribe = self.bus.subscribe(self._heard)

    def attach(self, bus: Bus | None) -> None:
        """Hear and tell through ``bus`` from now on (the HTTP server attaches its store's;
        None: this process only, as by default)."""
        if bus is None:
            bus = MemoryBus()
        if bus is self.bus:
            return
        self._unsubscribe()
        self.bus = bus
        self._unsubscribe = bus.subscribe(self._heard)

    # --- raised here ----------------------------------------------------------------------

    def list_changed(self, kind: str) -> None:
        """List ``kind`` changed here (synchronous; any thread)."""
        self._list_changed(kind)
        self.bus.publish_nowait({"t": "list", "kind": kind})

    async def resource_updated(self, uri: str) -> None:
        """Resource ``uri`` was updated here. Cancellation: stops sending."""
        self.bus.publish_nowait({"t": "updated", "uri": uri})
        await self._resource_updated(uri)

    def task_cancelled(self, task_id: str) -> None:
        """Task ``task_id``, which runs on another replica, was cancelled here (and so
        recorded in the shared store): tell the replica running it (synchronous)."""
        self.bus.publish_nowait({"t": "task-cancel", "id": task_id})

    async def task_answered(self, task_id: str, responses: dict[str, Any]) -> bool:
        """``tasks/update`` answered questions of task ``task_id``, which runs on another
        replica: pass the answers to it and wait until it confirms that the task has them
        and its record shows them (True). False at once when no other replica listens.
        Raises StoreUnavailable, or McpError (-32603) for answers over the bus's size
        bound. Cancellation: stops waiting (the caller bounds the wait); the answers may
        have been delivered."""
        if not self.bus.shared:
            return False
        nonce = secrets.token_hex(8)
        confirmed = self._confirmations[nonce] = trio.Event()
        try:
            message = {"t": "task-answer", "id": task_id, "r": responses}
            try:
                sent = {**message, "n": nonce, "tag": self.bus.tag}
                listening = await self.bus.send(None, sent)
            except ValueError as error:
                raise McpError(INTERNAL_ERROR, f"Could not pass the answers on: {error}") from None
            if listening > 1:  # this replica counts too
                await confirmed.wait()
        finally:
            del self._confirmations[nonce]
        return confirmed.is_set()

    # --- heard from the bus ---------------------------------------------------------------

    async def _heard(self, message: BusMessage) -> None:
        kind = message.get("t")
        if kind == "list" and message.get("kind") in _LISTS:
            self._list_changed(message["kind"])
        elif kind == "updated" and isinstance(message.get("uri"), str):
            await self._resource_updated(message["uri"])
        elif kind == "task-cancel" and isinstance(message.get("id"), str):
            await self._on_task_cancelled(message["id"])
        elif (
            kind == "task-answer"
            and isinstance(message.get("id"), str)
            and isinstance(message.get("r"), dict)
            and self._on_task_answered is not None
        ):
            # False unless the task runs here; then its record is written before this
            # replica confirms (the one that took the update answers its client then).
            try:
                confirmed = await self._on_task_answered(message["id"], message["r"])
            except StoreUnavailable as error:  # not confirmed: the update fails, is resent
                what = "answers to task %s not recorded"
                log_unavailable(logger, logging.WARNING, error, what, message["id"])
                return
            if confirmed:
                nonce, tag = message.get("n"), message.get("tag")
                if isinstance(nonce, str) and type(tag) is int:
                    self.bus.send_nowait(tag, {"t": "task-answered", "n": nonce})
        elif kind == "task-answered" and isinstance(message.get("n"), str):
            waiting = self._confirmations.get(message["n"])
            if waiting is not None:
                waiting.set()
        elif kind == "level" and message.get("l") in _LEVELS:
            for session, state in self._sessions.live():
                if _shared_id(session) == message.get("s"):
                    state.log_level = message["l"]
        elif kind == "gap":
            # Events of other replicas were lost while the bus was cut off: anything may
            # have changed, so say so (a client lists again; cheaper than a stale view).
            for name in _LISTS:
                self._list_changed(name)
            self._hub.everything_updated()

    # --- applied on this replica ----------------------------------------------------------

    def hears_here(self, session: Session) -> bool:
        """Whether changes reach ``session`` from this replica (see the module docstring)."""
        if not self.bus.shared:
            return True
        transport = session.transport
        return not isinstance(transport, ReplicaOutlet) or transport.has_standalone_stream()

    def _list_changed(self, kind: str) -> None:
        self._on_list_changed(kind)
        self._sessions.mark_changed(kind, only=self.hears_here if self.bus.shared else None)
        self._hub.list_changed(kind)

    async def _resource_updated(self, uri: str) -> None:
        self._hub.resource_updated(uri)
        targets = await self._subscribed(uri)
        await self._sessions.broadcast(
            targets, "notifications/resources/updated", ResourceUpdatedNotificationParams(uri=uri)
        )

    async def _subscribed(self, uri: str) -> Iterable[Session]:
        live = self._sessions.live()
        if not self.bus.shared:
            return [s for s, state in live if state.subscribed(uri)]
        local: list[Session] = []
        shared: list[tuple[Session, str]] = []
        for session, state in live:
            if not self.hears_here(session):
                continue
            shared_id = _shared_id(session)
            if shared_id is None:
                if state.subscribed(uri):
                    local.append(session)
            else:
                shared.append((session, shared_id))
        if shared:
            try:
                flags = await self.bus.subscribed([sid for _, sid in shared], uri)
            except StoreUnavailable as error:
                message = "resource update of %s: subscriptions unknown"
                log_unavailable(logger, logging.WARNING, error, message, uri)
                flags = [self._sessions.state(s).subscribed(uri) for s, _ in shared]
            local.extend(s for (s, _), flag in zip(shared, flags, strict=True) if flag)
        return local

    # --- the log level of a shared session ---------------------------------------------------

    async def learn(self, session: Session) -> None:
        """Before this replica first answers a shared session: take the log level the client
        set through another replica (one round trip, once per session and replica)."""
        if session in self._learnt:
            return
        self._learnt.add(session)
        shared_id = _shared_id(session)
        if shared_id is None:
            return
        try:
            level = await self.bus.load_session_value(shared_id, "log-level")
        except StoreUnavailable as error:
            message = "log level of session %s… unknown here"
            log_unavailable(logger, logging.WARNING, error, message, shared_id[:8])
            return
        state = self._sessions.state(session)
        if level in _LEVELS and state.log_level is None:
            state.log_level = level  # type: ignore[assignment]

    async def set_level(self, session: Session, level: str) -> None:
        """The client set its log level through this replica: tell the others. Raises
        McpError (-32603) naming the store when it is down."""
        shared_id = _shared_id(session) if self.bus.shared else None
        if shared_id is None:
            return
        try:
            await self.bus.save_session_value(shared_id, "log-level", level)
        except StoreUnavailable as error:
            raise McpError(INTERNAL_ERROR, f"Could not share the log level: {error}") from None
        self.bus.publish_nowait({"t": "level", "s": shared_id, "l": level})

    # --- subscriptions ----------------------------------------------------------------------

    async def subscribe(self, session: Session, uri: str) -> bool:
        """Record that ``session`` subscribes to ``uri`` where every replica sees it; False
        past ``max_subscriptions``. Raises McpError (-32603) naming the store when it is
        down."""
        shared_id = _shared_id(session) if self.bus.shared else None
        if shared_id is None:
            return True
        try:
            return await self.bus.add_subscription(shared_id, uri, self._max_subscriptions)
        except StoreUnavailable as error:
            raise McpError(INTERNAL_ERROR, f"Could not subscribe: {error}") from None

    async def unsubscribe(self, session: Session, uri: str) -> None:
        """Forget that subscription everywhere. Raises McpError when the store is down."""
        shared_id = _shared_id(session) if self.bus.shared else None
        if shared_id is not None:
            try:
                await self.bus.remove_subscription(shared_id, uri)
            except StoreUnavailable as error:
                raise McpError(INTERNAL_ERROR, f"Could not unsubscribe: {error}") from None


def _shared_id(session: Session) -> str | None:
    transport = session.transport
    return transport.shared_session_id if isinstance(transport, ReplicaOutlet) else None
