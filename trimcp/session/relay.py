"""Relayed requests: an inbound request of one session sent on by another, untouched.

A handler implementing :class:`trimcp.session.hooks.RequestRelay` names, per method, the
requests it relays and, per session, where to. The engine then skips the handler task and
the typed classes: the request's params (decoded JSON) go to the target session under a new
id, and the answer comes back as decoded JSON under the peer's id. One :class:`Relayed`
record ties the two halves: the origin session keeps it under the peer's id, the target
session under its own, among the requests it awaits.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from trimcp.protocol.events import ProgressToken
from trimcp.protocol.jsonrpc import RequestId

if TYPE_CHECKING:
    from trimcp.session.engine import Session


class Relayed:
    """One relayed request: who asked (``origin``, ``origin_id``, the peer's progress
    ``token``) and where it went (``target``, ``target_id``, set once it is sent)."""

    __slots__ = ("last_progress", "method", "origin", "origin_id", "target", "target_id", "token")

    def __init__(
        self, origin: Session, origin_id: RequestId, method: str, token: ProgressToken | None
    ) -> None:
        self.origin = origin
        self.origin_id = origin_id
        self.method = method
        self.token = token
        self.target: Session | None = None
        self.target_id: RequestId | None = None
        #: The last progress value passed on (progress must increase; a backend going
        #: backwards is not passed on).
        self.last_progress: float | None = None


def without_progress_token(params: Any) -> Any:
    """``params`` without the peer's ``_meta.progressToken`` (the target session allocates
    its own token; the peer's means nothing there). Copies; never changes ``params``."""
    if type(params) is not dict:
        return params
    meta = params.get("_meta")
    if type(meta) is not dict or "progressToken" not in meta:
        return params
    rest = {key: value for key, value in meta.items() if key != "progressToken"}
    copy = dict(params)
    if rest:
        copy["_meta"] = rest
    else:
        del copy["_meta"]
    return copy
