"""Who a request acts for: :class:`AuthInfo`, and how a handler finds it.

No I/O here. The HTTP server verifies the bearer token of each request before anything
else is read, then records the resulting :class:`AuthInfo` next to the requests of that
HTTP request; a handler reads it as ``ctx.auth``. The lookup goes through
:data:`current_auth_source`, a context variable the transport sets for the tasks of a
session (or of one stateless request), so the session engine and the server framework
never need to know about HTTP.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping
from contextvars import ContextVar
from typing import Any, Protocol

import attrs

from trimcp._record import Record

#: ``rules(method, name) -> scopes`` names the scopes a request for ``name`` (a tool,
#: prompt or resource URI) needs beyond the server-wide ones.
ScopeRules = Callable[[str, str], frozenset[str]]


def _strings(value: Iterable[str]) -> tuple[str, ...]:
    return tuple(value)


def _scopes(value: Iterable[str] | str | None) -> frozenset[str]:
    if value is None:
        return frozenset()
    if isinstance(value, str):
        return frozenset(value.split())
    return frozenset(value)


@attrs.frozen(kw_only=True, repr=False, eq=False)
class AuthInfo(Record):
    """The principal of a request, from its verified access token.

    ``subject`` (the token's ``sub``), ``issuer`` and ``client_id`` say who; two values
    are *equal* when these three are, whatever their token, scopes or expiry, so a session
    bound to one stays usable after a refresh or a step-up. ``scopes`` were granted;
    ``expires_at`` is the token's ``exp`` (seconds since the epoch, None: none given);
    ``claims`` holds every claim of a JWT or field of an introspection answer. ``token``
    is the raw token (kept out of ``repr``): forward it only to the audience it was
    issued for.
    """

    subject: str | None = None
    issuer: str | None = None
    client_id: str | None = None
    scopes: frozenset[str] = attrs.field(default=frozenset(), converter=_scopes, eq=False)
    expires_at: float | None = attrs.field(default=None, eq=False)
    audience: tuple[str, ...] = attrs.field(default=(), converter=_strings, eq=False)
    claims: Mapping[str, Any] = attrs.field(factory=dict, eq=False, repr=False)
    token: str = attrs.field(default="", eq=False, repr=False)
    #: Set by :class:`~trimcp.auth.ProtectedResource`: the per-item scope rules, and
    #: whether lists leave out what this principal cannot use.
    rules: ScopeRules | None = attrs.field(default=None, eq=False, repr=False)
    hide_unauthorized: bool = attrs.field(default=False, eq=False, repr=False)

    def has_scopes(self, needed: Collection[str]) -> bool:
        """Whether every scope in ``needed`` was granted."""
        return all(scope in self.scopes for scope in needed)

    def allows(self, method: str, name: str) -> bool:
        """Whether this principal's scopes suffice for ``method`` on ``name`` (e.g.
        ``("tools/call", "delete_file")``), by the rules that admitted it."""
        rules = self.rules
        return rules is None or self.has_scopes(rules(method, name))


class AuthSource(Protocol):
    """What a transport offers so handlers can see who sent a request."""

    def auth_for(self, request_id: int | str) -> AuthInfo | None:
        """The principal of the inbound request ``request_id`` (None: anonymous/unknown)."""
        ...


class FixedAuth:
    """An :class:`AuthSource` for one principal (a stateless request, a legacy session).

    ``auth`` is an :class:`AuthInfo`, or whatever an ``authenticate`` hook returned.
    """

    __slots__ = ("auth",)

    def __init__(self, auth: Any) -> None:
        self.auth = auth

    def auth_for(self, request_id: int | str) -> Any:
        return self.auth


#: Set by the HTTP server for the tasks of a session (or of one stateless request).
current_auth_source: ContextVar[AuthSource | None] = ContextVar("trimcp_auth_source", default=None)


def request_auth(request_id: int | str) -> AuthInfo | None:
    """The principal of inbound request ``request_id`` in the current task, if any."""
    source = current_auth_source.get()
    if source is None:
        return None
    return source.auth_for(request_id)
