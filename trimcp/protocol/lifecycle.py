"""The session lifecycle as data: states, the transitions between them, what is legal when.

One table per question, so the rules can be read (and tested) in one place instead of being
scattered through the connection as ``if`` statements.

Server: NEW --recv initialize--> INITIALIZING --send its result--> OPERATING.
Client: NEW --send initialize--> INITIALIZING --recv its result--> OPERATING.
Client, stateless revision (2026-07-28): NEW --adopt a version--> OPERATING (no handshake;
``server/discover`` may be sent while NEW to choose it).
Either: any --close--> CLOSED.
"""

from __future__ import annotations

import enum
from typing import Final


class Role(enum.Enum):
    """Which end of the session this connection is."""

    CLIENT = "client"
    SERVER = "server"

    @property
    def peer(self) -> Role:
        return Role.SERVER if self is Role.CLIENT else Role.CLIENT


class State(enum.Enum):
    """Where a session is in its lifecycle."""

    NEW = "new"
    INITIALIZING = "initializing"
    OPERATING = "operating"
    CLOSED = "closed"


class Transition(enum.Enum):
    """The lifecycle facts that move a session between states."""

    SENT_INITIALIZE = "sent initialize"
    RECEIVED_INITIALIZE = "received initialize"
    SENT_INITIALIZE_RESULT = "sent initialize result"
    SENT_INITIALIZE_ERROR = "sent initialize error"
    RECEIVED_INITIALIZE_RESULT = "received initialize result"
    RECEIVED_INITIALIZE_ERROR = "received initialize error"
    ADOPTED_STATELESS = "adopted a stateless version"
    CLOSED = "closed"


C, S = Role.CLIENT, Role.SERVER
NEW, INIT, OPER, CLOSED = State.NEW, State.INITIALIZING, State.OPERATING, State.CLOSED

TRANSITIONS: Final[dict[tuple[Role, State, Transition], State]] = {
    (C, NEW, Transition.SENT_INITIALIZE): INIT,
    (C, INIT, Transition.RECEIVED_INITIALIZE_RESULT): OPER,
    (C, INIT, Transition.RECEIVED_INITIALIZE_ERROR): NEW,
    (C, NEW, Transition.ADOPTED_STATELESS): OPER,
    (S, NEW, Transition.RECEIVED_INITIALIZE): INIT,
    (S, INIT, Transition.SENT_INITIALIZE_RESULT): OPER,
    (S, INIT, Transition.SENT_INITIALIZE_ERROR): NEW,
}

#: ``None`` means "every method" (apart from ``initialize`` once operating).
ANY: Final = None

#: Requests this side may RECEIVE in each state. Others get an error reply.
INBOUND_REQUESTS: Final[dict[tuple[Role, State], frozenset[str] | None]] = {
    (S, NEW): frozenset({"initialize", "ping"}),
    (S, INIT): frozenset({"ping"}),
    (S, OPER): ANY,
    (S, CLOSED): frozenset(),
    (C, NEW): frozenset({"ping"}),
    (C, INIT): frozenset({"ping"}),
    (C, OPER): ANY,
    (C, CLOSED): frozenset(),
}

#: Requests this side may SEND in each state. Others are a local error.
OUTBOUND_REQUESTS: Final[dict[tuple[Role, State], frozenset[str] | None]] = {
    (C, NEW): frozenset({"initialize", "ping", "server/discover"}),
    (C, INIT): frozenset({"ping"}),
    (C, OPER): ANY,
    (C, CLOSED): frozenset(),
    (S, NEW): frozenset({"ping"}),
    (S, INIT): frozenset({"ping"}),
    (S, OPER): ANY,
    (S, CLOSED): frozenset(),
}


def next_state(role: Role, state: State, transition: Transition) -> State:
    """The state after ``transition``; unchanged when the table has no entry for it."""
    if transition is Transition.CLOSED:
        return CLOSED
    return TRANSITIONS.get((role, state, transition), state)


def request_allowed(
    table: dict[tuple[Role, State], frozenset[str] | None], role: Role, state: State, method: str
) -> bool:
    """Whether ``method`` is legal for ``role`` in ``state`` according to ``table``."""
    allowed = table[(role, state)]
    if allowed is None:
        return method != "initialize"
    return method in allowed
