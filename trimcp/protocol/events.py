"""Events the protocol core gives out: facts about what the peer sent.

Named as facts (``RequestReceived``, not ``HandleRequest``) because the core only reports;
deciding what to do is the session engine's job.
"""

from __future__ import annotations

from typing import Any

import attrs

from trimcp._record import Record
from trimcp.errors import McpError, RemoteProtocolError
from trimcp.protocol.jsonrpc import RequestId
from trimcp.types.common import ProgressToken as ProgressToken


@attrs.frozen(kw_only=True, repr=False, eq=False)
class RequestReceived(Record):
    """The peer sent a request that passed every protocol check; it now awaits one answer.

    ``params`` is the typed params object for methods the registry knows, else the raw dict
    (or None). Answer it with ``send_result``/``send_error``, or ``forget_inbound`` it when
    it was cancelled.
    """

    id: RequestId
    method: str
    params: Any
    progress_token: ProgressToken | None = None


@attrs.frozen(kw_only=True, repr=False, eq=False)
class NotificationReceived(Record):
    """The peer sent a notification (other than cancel and progress, which have their own)."""

    method: str
    params: Any


@attrs.frozen(kw_only=True, repr=False, eq=False)
class CancelReceived(Record):
    """The peer cancelled one of its in-flight requests to us (never ``initialize``)."""

    request_id: RequestId
    reason: str | None = None


@attrs.frozen(kw_only=True, repr=False, eq=False)
class ProgressReceived(Record):
    """Progress for one of our in-flight requests (``request_id`` is ours)."""

    request_id: RequestId
    progress: float
    total: float | None = None
    message: str | None = None


@attrs.frozen(kw_only=True, repr=False, eq=False)
class ResponseReceived(Record):
    """The result of one of our requests; ``result`` is typed for known methods."""

    id: RequestId
    method: str
    result: Any


@attrs.frozen(kw_only=True, repr=False, eq=False)
class ErrorReceived(Record):
    """One of our requests failed (``id``/``method`` None: the peer could not read an id)."""

    id: RequestId | None
    method: str | None
    error: McpError


@attrs.frozen(kw_only=True, repr=False, eq=False)
class MessageRejected(Record):
    """The peer sent something invalid. Send ``reply`` (when not None) and carry on.

    ``answers``: the peer's requests the reply settles for good (the refused request, or
    every request of a batch refused whole), so a transport that waits for their answers
    can stop waiting. Empty when it settles none, e.g. for a request refused because its
    id is already in use (the request holding that id is still to be answered).
    """

    error: RemoteProtocolError
    reply: bytes | None
    answers: tuple[RequestId, ...] = ()
    #: True when the refusal is an expected step of the protocol, not a fault of the peer:
    #: a session-era server refusing the ``server/discover`` probe of a client in auto
    #: mode (the client falls back to ``initialize``). Worth a debug line, not a warning.
    expected: bool = False


@attrs.frozen(kw_only=True, repr=False, eq=False)
class MessageIgnored(Record):
    """A valid message that needs nothing: a late response, a cancel for a finished request."""

    reason: str


@attrs.frozen(kw_only=True, repr=False, eq=False)
class LateResponseReceived(Record):
    """The result of a request of ours that is no longer awaited (its caller left: we
    cancelled it, or it timed out): ``result`` as decoded JSON, never structured. Usually
    dropped; the session engine acts on the few its callers asked it to look at."""

    id: RequestId
    result: Any


@attrs.frozen(kw_only=True, repr=False, eq=False)
class BatchReceived(Record):
    """A JSON-RPC batch (2025-03-26 only): its events, in order. Answer it as one array."""

    events: tuple[Event, ...]


Event = (
    RequestReceived
    | NotificationReceived
    | CancelReceived
    | ProgressReceived
    | ResponseReceived
    | ErrorReceived
    | MessageRejected
    | MessageIgnored
    | LateResponseReceived
    | BatchReceived
)
