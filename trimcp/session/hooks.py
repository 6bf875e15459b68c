"""Optional hooks the session engine looks for, each a named interface.

A transport or handler opts in by having the methods; the engine checks once, when a
session is made (``isinstance`` against these runtime-checkable protocols), and keeps the
bound methods. Nothing here is required: an ordinary transport and handler work without.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol, runtime_checkable

import trio

if TYPE_CHECKING:
    from trimcp.session.engine import Session
    from trimcp.session.transport import Outgoing


@runtime_checkable
class RestingTransport(Protocol):
    """A transport whose session may rest (see ``resting_session``)."""

    def can_rest(self) -> bool:
        """True when the transport holds no input for the session (it may rest now)."""
        ...

    def rest(self) -> None:
        """The session is resting: drop what only an awake session needs."""
        ...


@runtime_checkable
class ImmediateTransport(Protocol):
    """A transport that can sometimes write a message at once, without waiting (a pipe
    with room for it): the engine then skips the hop to its writer task."""

    def send_now(self, message: Outgoing) -> bool:
        """Write ``message`` whole if that needs no waiting and return True; else write
        nothing and return False (the engine queues it as usual). Synchronous, so it
        cannot be cancelled half-way."""
        ...


@runtime_checkable
class ManyTransport(Protocol):
    """A transport that hands over every message it already holds at once (a pipe read
    often holds many pipelined requests): a reader then awaits once per read, not once
    per message."""

    async def receive_many(self) -> list[bytes]:
        """At least one message, in order; raises and is cancelled as ``receive`` is."""
        ...


@runtime_checkable
class SessionAttendant(Protocol):
    """A handler with a task of its own per session (the server framework delivers list
    changes this way, whatever transport made the session)."""

    async def attend_session(
        self, session: Session, *, task_status: trio.TaskStatus[None] = ...
    ) -> None:
        """Started among the session's service tasks; after ``task_status.started()`` it may
        run until the session closes (it is cancelled as the close sequence ends)."""
        ...


@runtime_checkable
class RestingHandler(Protocol):
    """A handler whose per-session state can say whether the session may rest."""

    def can_rest(self, session: Session) -> bool:
        """True when nothing of the handler's is under way for ``session``."""
        ...


@runtime_checkable
class RequestRelay(Protocol):
    """A handler that relays some inbound requests to another session untouched.

    A relayed request never becomes a handler task or a typed object: its params stay the
    decoded JSON, it goes to the target session with a new id (and a new progress token when
    the peer asked for progress), and the target's answer, error or progress comes back with
    the peer's id and token. Cancellation is mapped both ways, like any request. The proxy
    (``trimcp.proxy``) forwards most requests this way.
    """

    def relays(self, method: str) -> bool:
        """Whether inbound requests or notifications of ``method`` are relayed (their params
        then stay raw, also when :meth:`relay_target` gives no target and the handler gets
        them). Relayed notifications go from the reader, in order with relayed requests.
        Never asked for ``initialize``, ``notifications/cancelled`` or
        ``notifications/progress`` (the engine maps those itself)."""
        ...

    def relay_target(self, session: Session) -> Session | None:
        """The session to relay ``session``'s requests to now, or None (``handle_request``
        handles them, with raw params)."""
        ...
