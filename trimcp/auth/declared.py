"""A server that carries its own authorization: ``trimcp.Server(auth=...)``.

Its protection belongs to the server, not to one way of running it: the HTTP app applies
it whatever config it is given, the run path (``Server.run``, ``trimcp run``, workers)
announces it, and transports that cannot apply it refuse to serve the server. Kept apart
(and light) so that a stdio server asking "am I protected?" loads nothing of HTTP.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol, runtime_checkable

if TYPE_CHECKING:
    from trimcp.auth.resource import ProtectedResource


@runtime_checkable
class DeclaresAuth(Protocol):
    """A handler with an ``auth`` attribute: its OAuth protection, or None (open)."""

    @property
    def auth(self) -> ProtectedResource | None: ...


def declared_auth(handler: object) -> ProtectedResource | None:
    """The authorization ``handler`` declares itself (None: it declares none)."""
    return handler.auth if isinstance(handler, DeclaresAuth) else None
