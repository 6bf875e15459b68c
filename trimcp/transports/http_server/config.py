"""Every limit and switch of the Streamable HTTP server, in one value object.

All bounds have safe defaults; each one is enforced by the module that names it in its
docstring. Times are seconds on the Trio clock.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Hashable
from typing import TYPE_CHECKING, Any

import attrs

from trimcp._record import Record
from trimcp._validators import optional_positive, positive
from trimcp.auth.declared import declared_auth
from trimcp.http.security import LOCALHOST_NAMES as LOCALHOST_NAMES
from trimcp.session import SessionOptions
from trimcp.session.options import DEFAULT_IDLE_TIMEOUT, DEFAULT_MAX_SESSIONS
from trimcp.stores.events import EventStore, InMemoryEventStore

if TYPE_CHECKING:
    from trimcp.stores.base import Store

if TYPE_CHECKING:
    from trimcp.auth.resource import ProtectedResource

#: Host names a server accepts by default (with any port): it is meant to be bound to
#: loopback, and any other name in ``Host`` is a DNS-rebinding attempt.

#: ``authenticate(scope)`` returns the principal a request acts for (any hashable value,
#: e.g. a user id), or None for an anonymous request. It may raise ``HttpRejection``
#: (e.g. 401 with ``WWW-Authenticate``) to refuse the request.
Authenticate = Callable[[dict[str, Any]], Awaitable[Hashable | None]]


def _path(instance: object, attribute: attrs.Attribute[Any], value: str) -> None:
    if not value.startswith("/"):
        raise ValueError(f"{attribute.name} must start with '/', got {value!r}")


def _names(value: Any) -> tuple[str, ...] | None:
    if value is None:
        return None
    if isinstance(value, str):
        raise TypeError("give a sequence of names, not one string")
    return tuple(value)


def default_event_store(session_id: str) -> EventStore:
    """One bounded in-memory store per session (see :class:`InMemoryEventStore`)."""
    return InMemoryEventStore()


@attrs.frozen(kw_only=True, repr=False, eq=False)
class HttpServerConfig(Record):
    """How the HTTP server behaves. Every field has a safe default.

    Endpoint:
      ``path``: the MCP endpoint (POST, GET, DELETE). ``legacy_sse``: also serve the
      2024-11-05 HTTP+SSE transport at ``legacy_sse_path`` (GET) and
      ``legacy_messages_path`` (POST). ``health_path``: GET answers 200
      ``{"status": "ok", "sessions": N}`` (503 while stopping), for load balancers and
      orchestrators; it is served before the Host check (None: no health endpoint).
    Security:
      ``allowed_hosts``: ``Host`` names accepted; an entry without a port matches any port,
      ``"*"`` accepts anything. None means :data:`LOCALHOST_NAMES`. A bad ``Host`` gets 421.
      ``allowed_origins``: exact origins (``"https://app.example"``; ``"http://h:*"`` for
      any port) or ``"*"``. None means: an origin whose host is an allowed host. A request
      without ``Origin`` is allowed; a bad one gets 403.
      ``authenticate``: see :data:`Authenticate`; sessions are bound to its principal.
      ``auth``: OAuth 2.1 protection (a :class:`~trimcp.auth.ProtectedResource`): bearer
      tokens verified, protected-resource metadata served, scopes enforced, the principal
      on ``ctx.auth`` (docs/authorization.md). Not together with ``authenticate``.
    Limits:
      ``max_body_bytes`` (413 past it, checked while reading), ``body_timeout`` (408 when
      the body is not complete in time), ``max_sessions`` (503 past it, nothing
      allocated), ``idle_timeout`` (sessions with no HTTP activity are closed),
      ``inbound_queue`` / ``enqueue_timeout`` (POSTed messages waiting for the engine; 503
      if the engine does not take one in time).
    Streams:
      ``stream_max_bytes`` / ``stream_max_messages``: what one SSE response may hold
      unsent; past it the server ends that response (the client resumes with
      ``Last-Event-ID``; the events stay in the event store). ``backlog_size``: unrelated
      server messages kept while no GET stream is open (oldest dropped, logged).
      ``event_store_factory``: called with each session id; None disables resumability
      (no event ids, no priming events). ``retry_ms``: the SSE ``retry`` the server sends.
      ``max_follows`` / ``max_follows_per_principal`` / ``max_follows_per_session``: with
      replicas, resumed streams of calls running on another replica that this server
      follows (counted across every replica through a shared store; 503 past the total,
      429 past a caller's or a session's share), each for at most ``follow_timeout``
      seconds (then it ends with ``retry``: the client resumes again).
    Modes:
      ``stateless``: no session ids; each POST runs in a fresh session, initialized
      implicitly from ``MCP-Protocol-Version``; the server cannot send requests to the
      client. ``json_response``: answer POSTs with one JSON body instead of an SSE stream.
    Sessions:
      ``rest_after``: a session with nothing under way for this long *rests*: its tasks
      end and it keeps only its state (about 2 KB instead of about 35 KB), until its next
      POST, a message the server sends it, or its close wakes it (None: never rests).
      ``session_options``: the engine's bounds for each session. ``store``: a shared
      :class:`~trimcp.stores.Store` (e.g. Redis; ``serve_http(store=...)`` sets it): a
      session another replica created is looked up there and served here. ``shutdown_timeout``:
      bound on closing every session at shutdown (default: the sessions' close bound + 1).
    """

    path: str = attrs.field(default="/mcp", validator=_path)
    allowed_hosts: tuple[str, ...] | None = attrs.field(default=None, converter=_names)
    allowed_origins: tuple[str, ...] | None = attrs.field(default=None, converter=_names)
    authenticate: Authenticate | None = None
    auth: ProtectedResource | None = None
    max_body_bytes: int = attrs.field(default=4 * 1024 * 1024, validator=positive)
    body_timeout: float = attrs.field(default=30.0, validator=positive)
    max_sessions: int = attrs.field(default=DEFAULT_MAX_SESSIONS, validator=positive)
    idle_timeout: float = attrs.field(default=DEFAULT_IDLE_TIMEOUT, validator=positive)
    inbound_queue: int = attrs.field(default=32, validator=positive)
    enqueue_timeout: float = attrs.field(default=30.0, validator=positive)
    stream_max_bytes: int = attrs.field(default=1024 * 1024, validator=positive)
    stream_max_messages: int = attrs.field(default=1024, validator=positive)
    backlog_size: int = attrs.field(default=64, validator=positive)
    event_store_factory: Callable[[str], EventStore] | None = default_event_store
    retry_ms: int = attrs.field(default=1000, validator=positive)
    max_follows: int = attrs.field(default=1000, validator=positive)
    max_follows_per_principal: int = attrs.field(default=200, validator=positive)
    max_follows_per_session: int = attrs.field(default=128, validator=positive)
    follow_timeout: float = attrs.field(default=600.0, validator=positive)
    stateless: bool = False
    json_response: bool = False
    rest_after: float | None = attrs.field(default=0.02, validator=optional_positive)
    session_options: SessionOptions = attrs.field(factory=SessionOptions)
    shutdown_timeout: float | None = None
    store: Store | None = None
    health_path: str | None = "/healthz"
    legacy_sse: bool = True
    legacy_sse_path: str = attrs.field(default="/sse", validator=_path)
    legacy_messages_path: str = attrs.field(default="/messages", validator=_path)

    def __attrs_post_init__(self) -> None:
        if self.auth is not None and self.authenticate is not None:
            raise ValueError("give either auth= (OAuth) or authenticate= (your own hook), not both")

    @property
    def hosts(self) -> tuple[str, ...]:
        """The effective ``Host`` allowlist."""
        return self.allowed_hosts if self.allowed_hosts is not None else LOCALHOST_NAMES

    @property
    def shutdown_bound(self) -> float:
        """How long closing every session at shutdown may take."""
        if self.shutdown_timeout is not None:
            return self.shutdown_timeout
        return self.session_options.close_bound + 1.0


def with_declared_auth(handler: object, config: HttpServerConfig) -> HttpServerConfig:
    """``config`` protected as ``handler`` declares: a server that declares its
    authorization is never served open because a config left ``auth`` out. Raises
    ValueError when ``config`` names another protection (``auth=`` of its own or an
    ``authenticate=`` hook): two answers to "who may call" would be a guess."""
    declared = declared_auth(handler)
    if declared is not None and declared.awaits_resource:
        raise ValueError(
            "the server's AuthorizationServer names no resource: give resource= (its URL as "
            "clients reach it), or serve it with app.run / trimcp run on a loopback port"
        )
    if declared is None or config.auth is declared:
        return config
    if config.auth is not None or config.authenticate is not None:
        given = "auth=" if config.auth is not None else "authenticate="
        raise ValueError(
            f"the server declares its authorization (Server(auth=...)) and the HTTP config "
            f"gives {given} too: keep one (the server's applies wherever it is served)"
        )
    return attrs.evolve(config, auth=declared)
