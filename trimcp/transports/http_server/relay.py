"""Messages a client posts to the wrong replica, relayed through the bus to the right one.

Behind a round-robin balancer the POST that carries a client's answer to a server request
(sampling, elicitation, roots), or its ``notifications/cancelled`` for a request under
way, may reach a replica other than the one waiting for it. With a shared store:

- the server requests of a shared session are numbered from ``tag << 32`` (the tag of the
  replica that sends them, see :mod:`trimcp.stores.bus`), so an answer names the replica
  waiting for it: another replica sends it there, on that replica's own bus channel;
- a cancel for a request not under way here is published to every replica; the one
  running that request cancels it, the others ignore it;
- a message for the session's GET stream (a server request or notification not tied to a
  client request, e.g. ``roots/list`` sent from a notification handler) raised on a replica
  where that stream is not open goes to the replica that holds it (each replica records in
  the store when a GET stream of a session attaches to it, and tells the others, which let
  it go; looked up at most once a second per session), which stores it in the event store
  and sends it as its own. The replica a GET stream last attached to stays its holder
  while the client reconnects: what it sends meanwhile is stored, and the client's resume
  (``Last-Event-ID``, on any replica) replays it.

The relayed message is fed to the session on the receiving replica exactly as if its POST
had landed there. The client gets ``202 Accepted`` once the message is queued for the
bus (as for any answer or notification; delivery is at most once: an answer whose
replica died meanwhile had nobody waiting for it anyway). Only single messages are
relayed; a 2025-03-26 batch is handled where it lands.

The same module shares the ``requestState`` keyring through the store (see
:mod:`trimcp.stores.keyring`) when the server was left with its default keyring, and
gives a ``trimcp.Server`` the store's task records and user state.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from functools import partial
from typing import TYPE_CHECKING, Any

import trio

from trimcp._groups import open_nursery_unwrapped
from trimcp.errors import SessionClosed
from trimcp.protocol.jsonrpc import ErrorResponse, Message, Notification, Response
from trimcp.session.transport import Decoded
from trimcp.stores.base import SharesTasks, StoreUnavailable, log_unavailable
from trimcp.stores.bus import TAG_SHIFT, BusMessage, tag_of_request_id
from trimcp.stores.user_state import KeepsUserState

if TYPE_CHECKING:
    from trimcp.session import Session
    from trimcp.stores.base import Store
    from trimcp.transports.http_server.manager import SessionEntry, SessionManager

logger = logging.getLogger("trimcp.transports.http_server.relay")

_CANCELLED = "notifications/cancelled"
#: How long a replica trusts what it learnt of where a session's GET stream is.
HOLDER_RECHECK = 1.0
MAX_HOLDERS_CACHED = 10_000


class ReplicaRelay:
    """The relaying side of one HTTP app whose store is shared."""

    def __init__(self, manager: SessionManager, store: Store) -> None:
        self.manager = manager
        self.store = store
        self.bus = store.bus
        self.relayed = 0  # messages sent to other replicas (tests and operators read it)
        self.received = 0  # messages other replicas relayed here and a session took
        #: Session id -> (tag of the replica holding its GET stream, when to ask again).
        self._holders: dict[str, tuple[int | None, float]] = {}

    def prepare(self, session: Session) -> None:
        """Number ``session``'s server requests from this replica's tag."""
        session.number_requests_from(self.bus.tag << TAG_SHIFT)

    async def run(
        self, handler: object, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
    ) -> None:
        """Hear relayed messages (and share the keyring) while the app runs."""
        unsubscribe = self.bus.subscribe(self._heard)
        attach = getattr(handler, "attach_bus", None)  # a trimcp.Server
        if attach is not None:
            attach(self.bus)
        # A trimcp.Server keeps its task records where every replica reads them.
        attach_tasks = getattr(handler, "attach_task_store", None)
        if attach_tasks is not None and isinstance(self.store, SharesTasks):
            tasks = getattr(handler, "tasks", None)  # its TaskManager: the budget it keeps
            budget = getattr(getattr(tasks, "options", None), "budget", None)
            attach_tasks(self.store.task_store(budget=budget))
        # And its user state and handle states (ctx.user_state, ctx.handles) likewise.
        attach_state = getattr(handler, "attach_state_store", None)
        if attach_state is not None and isinstance(self.store, KeepsUserState):
            state_budget = getattr(handler, "state_budget", None)
            attach_state(self.store.user_state_store(budget=state_budget))
        try:
            async with open_nursery_unwrapped() as nursery:
                keyring = getattr(handler, "request_state_keyring", None)
                if keyring is not None and keyring.generated:
                    from trimcp.stores.keyring import keep_keyring_shared

                    await nursery.start(partial(keep_keyring_shared, self.store, keyring))
                task_status.started()
                await trio.sleep_forever()
        finally:
            unsubscribe()
            if attach is not None:
                attach(None)  # served no more: its changes concern this process only
            # Task records stay in the shared store, and the tasks running here end now,
            # while it is open (it closes when serving ends, perhaps before the server's
            # own shutdown, e.g. under `trimcp run`, which enters the lifespan around
            # serving): each records how it ended ("cancelled") where the other replicas
            # read it, instead of failing later on a closed store.
            if attach_tasks is not None and isinstance(self.store, SharesTasks):
                end_tasks = getattr(getattr(handler, "tasks", None), "end_tasks", None)
                if end_tasks is not None:
                    await end_tasks()

    # --- messages for a GET stream open on another replica --------------------------------

    async def claim_stream(self, entry: SessionEntry) -> None:
        """A GET stream of the session was attached here: messages other replicas send it
        come here from now on, and the replica that held it before lets it go (bounded; a
        store outage is logged, and they wait in the sending replica's backlog instead)."""
        session_id = entry.session_id
        entry.transport.claimed = True
        self._remember(session_id, self.bus.tag)
        self.bus.publish_nowait({"t": "claim", "s": session_id, "tag": self.bus.tag})
        try:
            # No longer than the session: it expires with the session's record, which
            # every request (this GET's included) pushes out (see RedisStore.load_session).
            await self.bus.set_stream_holder(session_id, self.manager.config.idle_timeout)
        except StoreUnavailable as error:
            log_unavailable(
                logger, logging.WARNING, error, "GET stream of %s… not claimed", session_id[:8]
            )

    def forwarder(self, session_id: str) -> Callable[[bytes], Awaitable[bool]]:
        """The transport's ``forward`` hook for one shared session."""

        async def forward(data: bytes) -> bool:
            tag = await self._holder(session_id)
            if tag is None or tag == self.bus.tag:
                return False  # none known, or here: the transport's backlog keeps it
            try:
                listening = await self.bus.send(
                    tag, {"t": "out", "s": session_id, "m": data.decode()}
                )
            except (StoreUnavailable, ValueError):
                return False  # logged: kept here (stored, resumable)
            if not listening:  # that replica has stopped: keep it here, ask again next time
                self._holders.pop(session_id, None)
                return False
            self.relayed += 1
            return True

        return forward

    async def _holder(self, session_id: str) -> int | None:
        now = trio.current_time()
        known = self._holders.get(session_id)
        if known is not None and known[1] > now:
            return known[0]
        try:
            tag = await self.bus.stream_holder(session_id)
        except StoreUnavailable:
            return None  # logged by the client; kept in this replica's backlog
        self._remember(session_id, tag)
        return tag

    def _remember(self, session_id: str, tag: int | None) -> None:
        if len(self._holders) >= MAX_HOLDERS_CACHED:
            self._holders.clear()  # a cache: asking Redis again is the cost
        self._holders[session_id] = (tag, trio.current_time() + HOLDER_RECHECK)

    # --- the replica the POST reached -------------------------------------------------------

    async def relay(self, entry: SessionEntry, value: Any, messages: list[Message]) -> bool:
        """Relay a POSTed message meant for another replica; False: handle it here.

        Raises HttpRejection 503 naming the store when it cannot carry the message (the
        client's POST fails, instead of the message vanishing). Cancellation: the message
        may or may not have been sent."""
        if len(messages) != 1 or not isinstance(value, dict):
            return False
        message = messages[0]
        tag: int | None
        if isinstance(message, Response | ErrorResponse):
            tag = tag_of_request_id(message.id)
            if tag is None or tag == self.bus.tag:
                return False
            out: BusMessage = {"t": "in", "s": entry.session_id, "m": value}
        elif isinstance(message, Notification) and message.method == _CANCELLED:
            request_id = (message.params or {}).get("requestId")
            if type(request_id) not in (int, str) or entry.transport.in_flight(request_id):
                return False
            tag, out = None, {"t": "cancel", "s": entry.session_id, "m": value}
        else:
            return False
        from trimcp.transports.http_server.asgi import HttpRejection

        try:
            listening = await self.bus.send(tag, out)
        except StoreUnavailable as error:
            raise HttpRejection(503, f"Could not pass this message on: {error}") from None
        except ValueError as error:  # over the bus's bound
            raise HttpRejection(413, f"Could not pass this message on: {error}") from None
        if not listening:
            # Nobody listens there: the replica that waited for it has stopped, and its
            # request with it. Nothing else would take it.
            logger.info(
                "a %s for session %s… had no replica to go to", out["t"], entry.session_id[:8]
            )
        self.relayed += 1
        return True

    # --- the replica it is meant for ----------------------------------------------------------

    async def _heard(self, message: BusMessage) -> None:
        kind = message.get("t")
        if kind not in ("in", "cancel", "out", "claim", "ended"):
            return
        session_id, value = message.get("s"), message.get("m")
        if kind == "ended" and isinstance(session_id, str):
            held = self.manager.held(session_id)
            if held is not None:  # its GET stream, if open here, ends too
                self.manager.end(held, "the client ended the session on another replica")
            return
        if kind == "claim" and isinstance(session_id, str):
            tag = message.get("tag")
            if type(tag) is int:
                self._remember(session_id, tag)
            held = self.manager.held(session_id)
            if held is not None:
                held.transport.claimed = False  # the client's GET stream is elsewhere now
            return
        if kind == "out" and isinstance(session_id, str) and isinstance(value, str):
            await self._send_out(session_id, value)
            return
        if not isinstance(session_id, str) or not isinstance(value, dict):
            return
        entry = self.manager.held(session_id)
        if entry is None or entry.session is None:
            return  # not held here (a cancel reaches every replica)
        transport = entry.transport
        if kind == "cancel":
            request_id = (value.get("params") or {}).get("requestId")
            if type(request_id) not in (int, str) or not transport.in_flight(request_id):
                return  # not running here
        try:
            entry.session.wake()
            await transport.feed(Decoded(value), self.manager.config.enqueue_timeout)
        except SessionClosed:
            return
        except Exception as error:  # HttpRejection: closed, or no room in time
            logger.warning(
                "a relayed message for session %s… was dropped: %s", session_id[:8], error
            )
            return
        if kind == "cancel":
            transport.forget_request(request_id)
        self.received += 1

    async def _send_out(self, session_id: str, data: str) -> None:
        entry = self.manager.held(session_id)
        if entry is None:
            return  # ended here meanwhile
        # As if this replica's copy of the session sent it: stored, then sent on the GET
        # stream (or kept in the backlog, if the stream went away meanwhile).
        await entry.transport.deliver_relayed(data.encode())
        self.received += 1
