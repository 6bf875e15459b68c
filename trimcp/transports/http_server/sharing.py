"""Sessions shared between replicas: a session one replica created is served by any.

What is shared is a *resting* session's state (:meth:`Connection.resting_state`: the
lifecycle state and what ``initialize`` agreed on), saved to the store after each POST
that changed it, with the session's idle timeout as its expiry. A replica that gets a
request for a session it does not hold loads that record and takes the session over as a
resting session (it wakes on this request, here). Every request to a shared session also
reads its record before it is answered (one round trip, ``GET`` + ``PEXPIRE``, which
also pushes its expiry out), so a session ended on one replica (DELETE) is 404 on every
replica from the moment the DELETE is answered: its record becomes a marker that outlives
every replica's copy. The ending replica also tells the others on the bus, so the copies
they hold (and the GET streams open there) end at once, not only on their next request.
A session held here but missing from the store (Redis lost its data) is saved again.
Requests under way stay with the replica running them; their answer streams are
resumable anywhere through the shared event store.

When the store is down: sessions this replica holds are served from memory (logged); a
session it does not hold gets 503 naming the store, never a silent 404.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Hashable
from typing import TYPE_CHECKING, Any

import trio

from trimcp.auth.principal import principal_key
from trimcp.protocol.jsonrpc import dump_json, parse_json
from trimcp.protocol.lifecycle import State
from trimcp.session import Session
from trimcp.stores.base import Store, StoreUnavailable, log_unavailable

if TYPE_CHECKING:
    from trimcp.transports.http_server.asgi import Send
    from trimcp.transports.http_server.manager import SessionEntry, SessionManager

logger = logging.getLogger("trimcp.transports.http_server.sharing")

#: The record of a session the client ended (DELETE): replicas holding it end it too.
ENDED = b""

#: Makes a registered session with a given id, restored by ``prepare`` before it runs.
Adopt = Callable[[Hashable | None, str, Callable[[Session], None]], Awaitable["SessionEntry"]]


def session_record(entry: SessionEntry) -> bytes | None:
    """What a shared store keeps of a session (None before its handshake completes)."""
    session = entry.session
    if session is None or session.negotiated is None or session.closed:
        return None
    return dump_json(
        {
            "p": entry.principal_key,
            "k": entry.kind,
            "c": session.resting_state(),
        }
    )


class SharedSessions:
    """The session lookups of one HTTP app whose ``config.store`` is shared."""

    def __init__(self, manager: SessionManager, store: Store, adopt: Adopt) -> None:
        self.manager = manager
        self.store = store
        self._adopt = adopt
        self._adopting: dict[str, trio.Event] = {}

    @property
    def ttl(self) -> float:
        return self.manager.config.idle_timeout

    async def find(
        self, session_id: str, principal: Hashable | None, kind: str
    ) -> SessionEntry | None:
        """The session with this id, held here or taken over from the store (None: 404).

        Raises HttpRejection 503 when the store is down and the session is not held here.
        Cancellation: nothing is taken over.
        """
        entry = self.manager.get(session_id, principal, kind)
        # Asked on every request, even of a session held here: a copy trusted for any
        # time would answer a session another replica ended meanwhile (the spec says 404).
        try:
            record = await self.store.load_session(session_id, self.ttl)
        except StoreUnavailable as error:
            if entry is not None:
                return entry  # served from memory until the store is back (logged)
            # (imported here: the HTTP server's package imports this module)
            from trimcp.transports.http_server.asgi import HttpRejection

            raise HttpRejection(503, str(error)) from None
        if record == ENDED:
            if entry is not None:
                self.manager.end(entry, "the session was ended on another replica")
            return None
        if entry is not None:
            if record is None and entry.shared_record is not None:
                # Held here, gone from the store (it lost its data, e.g. a restart
                # without persistence): keep it shared.
                entry.shared_record = None
                await self.persist(entry)
            return entry
        if record is None:
            return None
        while (pending := self._adopting.get(session_id)) is not None:
            await pending.wait()  # another request of this session is taking it over
        entry = self.manager.get(session_id, principal, kind)  # taken over meanwhile?
        if entry is not None:
            return entry
        state = _parse(record, principal, kind)
        if state is None:
            return None
        done = self._adopting[session_id] = trio.Event()
        try:
            entry = await self._adopt(principal, session_id, lambda s: s.restore_state(state))
            entry.shared_record = record
        finally:
            del self._adopting[session_id]
            done.set()
        logger.debug("took over session %s… from the shared store", session_id[:8])
        return entry

    async def persist(self, entry: SessionEntry) -> None:
        """Save the session's record if it changed since last saved (bounded; a store
        outage is logged, and the session goes on here)."""
        session = entry.session
        if (
            entry.shared_record is not None
            and session is not None
            and session.state is State.OPERATING
        ):
            return  # saved once operating: nothing it keeps changes any more (the cheap path)
        record = session_record(entry)
        if record is None or record == entry.shared_record:
            return
        try:
            await self.store.save_session(entry.session_id, record, self.ttl)
        except StoreUnavailable as error:
            sid = entry.session_id[:8]
            log_unavailable(logger, logging.WARNING, error, "session %s… not shared", sid)
            return
        entry.shared_record = record

    def saving_first(self, send: Send, entry: SessionEntry) -> Send:
        """``send``, except that the first response bytes sent once the handshake is
        done wait until the session's record is saved: a client that goes on at once
        (``notifications/initialized``) may reach another replica, which must find it."""
        saved = False

        async def send_after_save(message: dict[str, Any]) -> None:
            nonlocal saved
            if not saved and message["type"] == "http.response.body":
                session = entry.session
                if session is not None and session.negotiated is not None:
                    saved = True
                    await self.persist(entry)
            await send(message)

        return send_after_save

    async def forget(self, entry: SessionEntry) -> None:
        """The client ended the session: remove it from the store (bounded), and tell the
        other replicas, which end their copies (see :meth:`ReplicaRelay._heard`)."""
        try:
            await self.store.drop_session(entry.session_id, self.ttl)
        except StoreUnavailable as error:
            message = "session %s… ended here, but its shared record stays until it expires"
            log_unavailable(logger, logging.WARNING, error, message, entry.session_id[:8])
        # After the marker is stored: a replica that lets its copy go on hearing this
        # must find the session ended should the client ask it again.
        self.store.bus.publish_nowait({"t": "ended", "s": entry.session_id})


def _parse(record: bytes, principal: Hashable | None, kind: str) -> dict[str, Any] | None:
    try:
        data = parse_json(record)
    except Exception:
        logger.error("an unreadable session record in the shared store; ignored")
        return None
    if (
        not isinstance(data, dict)
        or data.get("k") != kind
        or data.get("p") != principal_key(principal)
    ):
        return None  # another principal's session looks unknown (404), as locally
    state = data.get("c")
    return state if isinstance(state, dict) else None
