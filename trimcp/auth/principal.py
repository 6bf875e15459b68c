"""Who a request acts for: :class:`AuthInfo`, and how a handler finds it.

No I/O here. The HTTP server verifies the bearer token of each request before anything
else is read, then records the resulting :class:`AuthInfo` on the context of each
request that HTTP request carried (``RequestContext.principal``); a handler reads it as
``ctx.auth``. Nothing else holds it: no context variable or connection state carries
one request's principal into another's (the lean HTTP engine serves every request of a
keep-alive connection in one task). :func:`principal_key` turns a principal into the one
key every ownership decision uses.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Collection, Iterable, Mapping
from typing import Any

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


#: The fields that say who a token's principal is (what :class:`AuthInfo` compares).
_IDENTITY_FIELDS = ("issuer", "subject", "client_id")


def principal_key(principal: object) -> str | None:
    """The one stable key of whoever a request acts for; None for an anonymous request.

    Every ownership decision compares these keys: HTTP sessions (in this process and
    shared between replicas), tasks (in memory and in Redis), the ``requestState``
    binding, listen streams and per-principal budgets. The key is a digest (fixed length,
    safe in a Redis key, reveals nothing of the identity) of:

    - a verified token's issuer, subject and client id (an :class:`AuthInfo`, or any
      value with those attributes): a refreshed or stepped-up token of the same principal
      keeps its key, whatever its scopes or expiry. A token that names none of the three
      is keyed by the token itself, so it shares nothing with another token;
    - a ``principal_key`` string attribute, for an ``authenticate`` hook that returns
      its own user objects;
    - otherwise the value an ``authenticate`` hook returned, by type and ``repr``: a
      ``str`` user id (or an int, a tuple of them) keys the same in every process. An
      object whose ``repr`` is the default ``<... at 0x...>`` has no stable identity: it
      is keyed by that object alone (safe, but a second replica or a second request that
      gets a new object does not match it), so return a string or set ``principal_key``.
    """
    if principal is None:
        return None
    own = getattr(principal, "principal_key", None)
    if isinstance(own, str):
        identity: list[Any] = ["own", own]
    elif isinstance(principal, AuthInfo) or any(
        getattr(principal, name, None) is not None for name in _IDENTITY_FIELDS
    ):
        fields = [getattr(principal, name, None) for name in _IDENTITY_FIELDS]
        if all(field is None for field in fields):
            identity = ["token", getattr(principal, "token", "") or f"object:{id(principal)}"]
        else:
            identity = ["oauth", *(None if field is None else str(field) for field in fields)]
    else:
        kind = type(principal)
        text = repr(principal)
        if kind.__repr__ is object.__repr__:
            text = f"object:{id(principal)}"
        identity = ["value", f"{kind.__module__}.{kind.__qualname__}", text]
    encoded = json.dumps(identity, separators=(",", ":"), ensure_ascii=False)
    digest = hashlib.sha256(encoded.encode("utf-8", "surrogatepass")).hexdigest()
    return f"p:{digest[:32]}"
