"""The session manager: owns the nursery every HTTP session runs in.

One engine session (server role) per MCP session, run in the manager's nursery, so
nothing a session starts outlives the manager. Sessions *rest* when nothing has been under
way for ``config.rest_after`` seconds: their tasks end and they keep only their state, so
thousands of idle sessions cost little; a POST for a resting session (or a send, or a close)
wakes it, running its tasks again in a new task of the manager's nursery.

The registry maps session ids to sessions, oldest activity first; a session leaves it at
once on DELETE, when it closes, or when no HTTP request of it was served for
``idle_timeout`` (one reaper task watches the oldest). Shutdown closes every session with
the engine's bounded close sequence, all in parallel, within ``config.shutdown_bound``.
"""

from __future__ import annotations

import logging
import re
import secrets
from collections.abc import Callable, Hashable
from typing import Any

import trio

from trimcp.auth.principal import principal_key
from trimcp.errors import SessionClosed
from trimcp.protocol.jsonrpc import RequestId
from trimcp.protocol.lifecycle import Role
from trimcp.session import Session, SessionHandler
from trimcp.session.engine import resting_session
from trimcp.session.transport import Transport
from trimcp.transports.http_server.asgi import HttpRejection
from trimcp.transports.http_server.config import HttpServerConfig
from trimcp.transports.http_server.transport import HttpSessionTransport, current_transport

logger = logging.getLogger("trimcp.http")

#: Bytes of randomness in a session id (192 bits; the spec asks for unguessable ids).
#: The response (and request) header naming a session.
SESSION_HEADER = b"mcp-session-id"
SESSION_ID_BYTES = 24


#: The form :func:`new_session_id` gives (base64url of SESSION_ID_BYTES bytes, unpadded).
_SESSION_ID = re.compile(rf"[A-Za-z0-9_-]{{{SESSION_ID_BYTES * 4 // 3}}}")


def new_session_id() -> str:
    """A fresh session id: 32 URL-safe characters (visible ASCII), 192 random bits."""
    return secrets.token_urlsafe(SESSION_ID_BYTES)


def is_session_id(text: str) -> bool:
    """Whether ``text`` has the form :func:`new_session_id` gives: a client's
    ``Mcp-Session-Id`` of any other form names no session, and is refused (404) before
    any lookup, in this process or a shared store."""
    return _SESSION_ID.fullmatch(text) is not None


class _OnePrincipal:
    """Every request of a session acts for one principal (a legacy SSE session's, whose
    POSTs all had to match it)."""

    __slots__ = ("_principal",)

    def __init__(self, principal: Hashable | None) -> None:
        self._principal = principal

    def auth_for(self, request_id: RequestId) -> Hashable | None:
        return self._principal


class SessionEntry:
    """A registered session: its transport, engine session, owner and activity.

    It is also the session's waker (the engine calls it to run a resting session again).
    """

    __slots__ = (
        "_manager",
        "active",
        "closed",
        "id_header",
        "kind",
        "last_seen",
        "principal",
        "principal_key",
        "released",
        "session",
        "session_id",
        "shared_record",
        "transport",
    )

    def __init__(
        self,
        manager: SessionManager,
        session_id: str,
        principal: Hashable | None,
        transport: Any,
        kind: str,
    ) -> None:
        self._manager = manager
        self.session_id = session_id
        #: Its ``Mcp-Session-Id`` response header, made once (every answer carries it).
        self.id_header = (SESSION_HEADER, session_id.encode("ascii"))
        self.principal = principal
        #: What the session is bound to (:func:`~trimcp.auth.principal_key`).
        self.principal_key = principal_key(principal)
        self.transport = transport
        self.kind = kind
        self.session: Session | None = None
        #: HTTP requests of this session being served now (a session is never idle then).
        self.active = 0
        self.last_seen = trio.current_time()
        self.closed = False
        #: The session's reservation was given back (it closed, or never started).
        self.released = False
        #: The record last saved to (or read from) a shared store (see .sharing).
        self.shared_record: bytes | None = None

    def touch(self) -> None:
        """Record activity now (the idle reaper looks at the least recent first)."""
        manager = self._manager
        clock = manager.clock  # (once per POST: two Python calls less than trio's)
        self.last_seen = trio.current_time() if clock is None else clock.current_time()
        manager.moved_to_newest(self)

    def __call__(self, session: Session) -> None:
        self._manager.spawn(self)


class SessionManager:
    """Creates, finds, ends and reaps sessions. Run it with :meth:`run` first."""

    def __init__(
        self, handler_factory: Callable[[], SessionHandler], config: HttpServerConfig
    ) -> None:
        self._factory = handler_factory
        self.config = config
        self._sessions: dict[str, SessionEntry] = {}
        #: Sessions that may still be half-open, oldest first (pruned lazily).
        self._half_open: dict[str, SessionEntry] = {}
        self._nursery: trio.Nursery | None = None
        #: Engine sessions alive now (registered ones, closing ones and stateless ones).
        self.alive = 0
        #: 2026 listen streams open now (no session slot; shutdown waits for them too).
        self.streams = 0
        self._all_done = trio.Event()
        self._all_done.set()
        self.stopping = False
        #: The Trio run's clock while :meth:`run` runs (None otherwise).
        self.clock: trio.abc.Clock | None = None

    @property
    def running(self) -> bool:
        return self._nursery is not None and not self.stopping

    def __len__(self) -> int:
        return len(self._sessions)

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Own the sessions' nursery until cancelled or :meth:`shutdown` is done.

        Cancellation: every session still open closes with the engine's bounded close
        sequence (shielded, at most ``session_options.close_bound`` each, in parallel).
        """
        try:
            async with trio.open_nursery() as nursery:
                self._nursery = nursery
                self.stopping = False
                self.clock = trio.lowlevel.current_clock()
                task_status.started()
                await self._reap_idle()
        finally:
            self._nursery = None
            self.clock = None

    async def shutdown(self) -> None:
        """Refuse new sessions, close every open one, and wait (bounded) until all closed.

        Cancellation: the sessions go on closing in their own tasks; the caller stops waiting.
        """
        self.stopping = True
        for entry in list(self._sessions.values()):
            self.end(entry, "the server is shutting down")
        with trio.move_on_after(self.config.shutdown_bound):
            await self._all_done.wait()
        if self.alive:
            logger.warning("%s", unclosed(self.alive, self.config.shutdown_bound))
        if self._nursery is not None:
            self._nursery.cancel_scope.cancel()

    def reserve(self) -> None:
        """Count one more live session, or refuse with 503 (nothing allocated yet)."""
        if self._nursery is None or self.stopping:
            raise HttpRejection(503, "The server is not accepting sessions")
        if self.alive >= self.config.max_sessions and not self._evict_half_open():
            raise HttpRejection(503, "Too many sessions; try again later")
        self.alive += 1
        self._all_done = trio.Event() if self._all_done.is_set() else self._all_done

    def _evict_half_open(self) -> bool:
        """End the oldest half-open session (``initialize`` answered, no
        ``notifications/initialized`` yet, no request being served) to make room.

        Its slot is free at once; its close finishes in the background (bounded by the
        engine's close sequence, and quick: it has nothing under way). False when every
        session completed its handshake: those are never evicted.
        """
        half_open = self._half_open
        for session_id, entry in list(half_open.items()):  # oldest first
            session = entry.session
            if entry.closed or session is None or session.peer_initialized:
                del half_open[session_id]  # established or gone: no longer a candidate
                continue
            if entry.active:
                continue
            del half_open[session_id]
            logger.info(
                "evicting half-open session %s…: the session limit (%d) is reached",
                session_id[:8],
                self.config.max_sessions,
            )
            self.end(
                entry, "evicted: no notifications/initialized and the session limit was reached"
            )
            self._release_once(entry)
            return True
        return False

    def release(self) -> None:
        self.alive -= 1
        if self.alive == 0 and self.streams == 0:
            self._all_done.set()

    def hold(self) -> None:
        """Count one long-lived stream (a 2026 listen) that shutdown waits for, without
        taking a session slot (the listen hub bounds streams); :meth:`unhold` ends it."""
        if self._nursery is None or self.stopping:
            raise HttpRejection(503, "The server is not accepting requests")
        self.streams += 1
        self._all_done = trio.Event() if self._all_done.is_set() else self._all_done

    def unhold(self) -> None:
        self.streams -= 1
        if self.alive == 0 and self.streams == 0:
            self._all_done.set()

    async def create(
        self,
        principal: Hashable | None,
        make_transport: Callable[[str], Transport],
        *,
        kind: str = "streamable",
        session_id: str | None = None,
        prepare: Callable[[Session], None] | None = None,
    ) -> SessionEntry:
        """Start a new registered session (after :meth:`reserve` succeeded).

        ``session_id`` and ``prepare`` take over a session another replica created: its
        id, and a call that restores its state before the session runs.
        Cancellation: the session is not started and the reservation is released.
        """
        if session_id is None:
            session_id = new_session_id()
            while session_id in self._sessions:  # 192 random bits: never, but be exact
                session_id = new_session_id()
        transport = make_transport(session_id)
        entry = SessionEntry(self, session_id, principal, transport, kind)
        nursery = self._nursery
        if nursery is None:
            self.release()
            raise HttpRejection(503, "The server is not accepting sessions")
        config = self.config
        entry.session = resting_session(
            transport,
            role=Role.SERVER,
            handler=self._factory(),
            waker=entry,
            rest_after=config.rest_after,
            options=config.session_options,
        )
        # Anonymous state (tasks) belongs to the session: keyed by its id, which every
        # replica serving it knows.
        entry.session.owner_key = session_id
        try:
            if prepare is not None:
                prepare(entry.session)
            await nursery.start(self._run_session, entry)
        except BaseException:
            self._release_once(entry)
            raise
        self._sessions[session_id] = entry
        if not entry.session.peer_initialized:
            self._half_open[session_id] = entry
        return entry

    def get(self, session_id: str, principal: Hashable | None, kind: str) -> SessionEntry | None:
        """The live session with this id, if it belongs to ``principal`` (else None: 404).

        Ownership is decided on principal keys, as between replicas: a refreshed or
        stepped-up token of the same principal keeps its session."""
        entry = self._sessions.get(session_id)
        if entry is None or entry.closed or entry.kind != kind:
            return None
        if entry.principal_key != principal_key(principal):
            return None
        return entry

    def held(self, session_id: str) -> SessionEntry | None:
        """The live session with this id, whoever it belongs to (for messages other
        replicas relay here: they checked the principal where the POST landed)."""
        entry = self._sessions.get(session_id)
        return None if entry is None or entry.closed else entry

    def end(self, entry: SessionEntry, reason: str) -> None:
        """Deregister at once and start the engine's close sequence (does not wait)."""
        self._deregister(entry)
        if entry.session is not None:
            entry.session.request_close(reason)

    def moved_to_newest(self, entry: SessionEntry) -> None:
        """Keep the registry ordered by activity: ``entry`` was just active."""
        sessions = self._sessions
        if sessions.get(entry.session_id) is entry:
            del sessions[entry.session_id]
            sessions[entry.session_id] = entry

    def spawn(self, entry: SessionEntry) -> None:
        """Run a resting session's tasks again (its waker). Raises SessionClosed when the
        manager is not running."""
        nursery = self._nursery
        if nursery is None:
            raise SessionClosed("The HTTP session manager is not running")
        nursery.start_soon(self._run_session, entry)

    def _deregister(self, entry: SessionEntry) -> None:
        entry.closed = True
        self._half_open.pop(entry.session_id, None)
        if self._sessions.get(entry.session_id) is entry:
            del self._sessions[entry.session_id]

    def _release_once(self, entry: SessionEntry) -> None:
        if not entry.released:
            entry.released = True
            self.release()

    async def _run_session(
        self, entry: SessionEntry, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
    ) -> None:
        session = entry.session
        assert session is not None
        current_transport.set(entry.transport)
        transport = entry.transport
        # Each request's principal is read into its own context: the POST's that carried
        # it, or (a legacy SSE session) the session's, whose POSTs all had to match it.
        if isinstance(transport, HttpSessionTransport):
            session.principals = transport  # (no bound method per session)
        else:
            session.principals = _OnePrincipal(entry.principal)
        rested = False
        try:
            rested = await session.run_awake(task_status=task_status)
        finally:
            if not rested:  # closed (or its close ran out of time): it is gone
                self._deregister(entry)
                self._release_once(entry)

    async def _reap_idle(self) -> None:
        """End sessions none of whose HTTP requests was served for ``idle_timeout``."""
        idle = self.config.idle_timeout
        while True:
            now = trio.current_time()
            wake_at = now + idle
            expired: list[SessionEntry] = []
            busy: list[SessionEntry] = []
            for entry in self._sessions.values():  # least recently active first
                if entry.last_seen + idle > now:
                    wake_at = entry.last_seen + idle
                    break
                (busy if entry.active else expired).append(entry)
            for entry in busy:
                entry.touch()  # busy: look again one idle period from now
            for entry in expired:
                logger.info("closing session %s…: idle for %gs", entry.session_id[:8], idle)
                self.end(entry, f"idle for {idle:g}s")
            await trio.sleep_until(wake_at)


def unclosed(count: int, bound: float) -> str:
    """The warning for sessions still open when the shutdown bound is over."""
    sessions = "1 session" if count == 1 else f"{count} sessions"
    return f"{sessions} did not close within the shutdown bound ({bound:g} s): cancelled"
