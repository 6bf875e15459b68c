"""What the HTTP client needs to know about the JSON-RPC messages passing through it.

The transport moves bytes, but HTTP makes it look at them: a POST that carries a request
waits for an answer, ``initialize`` is remembered for re-initialization, the initialize
result carries the protocol version every later request must name in a header, and a
``notifications/cancelled`` lets the transport drop the cancelled request's stream.
Everything here is pure (no I/O).
"""

from __future__ import annotations

from typing import Any

import attrs

from trimcp._record import Record
from trimcp.errors import McpError
from trimcp.protocol.jsonrpc import RequestId, dump_json, encode_error, parse_json
from trimcp.protocol.modern import META_PROTOCOL_VERSION

INITIALIZE = "initialize"
INITIALIZED = "notifications/initialized"
CANCELLED = "notifications/cancelled"


@attrs.frozen(kw_only=True, repr=False, eq=False)
class OutgoingInfo(Record):
    """What one outgoing POST body holds.

    ``request_ids``: ids of the requests in it (answers are awaited for each).
    ``method``: the method of a single request or notification (None for a batch or a
    response). ``cancelled_id``: for ``notifications/cancelled``, the request it names.
    """

    request_ids: tuple[RequestId, ...] = ()
    method: str | None = None
    cancelled_id: RequestId | None = None
    #: The params object of a single request or notification (None otherwise).
    params: dict[str, Any] | None = None

    @property
    def is_initialize(self) -> bool:
        return self.method == INITIALIZE and len(self.request_ids) == 1

    @property
    def modern_version(self) -> str | None:
        """The 2026 protocol version a single request names in its ``_meta``, if any
        (such a request is stateless: it carries its own version header, no session)."""
        if self.params is None or len(self.request_ids) != 1:
            return None
        meta = self.params.get("_meta")
        version = meta.get(META_PROTOCOL_VERSION) if type(meta) is dict else None
        return version if type(version) is str and _header_safe(version) else None


def _is_id(value: object) -> bool:
    return type(value) is int or type(value) is str


def describe_outgoing(data: bytes) -> OutgoingInfo:
    """Classify one outgoing message (or batch). Never raises: junk is "not a request"."""
    try:
        value = parse_json(data)
    except McpError:
        return OutgoingInfo()
    items = value if type(value) is list else [value]
    ids = tuple(
        item["id"]
        for item in items
        if type(item) is dict and "method" in item and _is_id(item.get("id"))
    )
    if type(value) is not dict:
        return OutgoingInfo(request_ids=ids)
    method = value.get("method")
    if type(method) is not str:
        return OutgoingInfo(request_ids=ids)
    cancelled_id: RequestId | None = None
    params = value.get("params")
    if method == CANCELLED and type(params) is dict and _is_id(params.get("requestId")):
        cancelled_id = params["requestId"]
    return OutgoingInfo(
        request_ids=ids,
        method=method,
        cancelled_id=cancelled_id,
        params=params if type(params) is dict else None,
    )


@attrs.frozen(kw_only=True, repr=False, eq=False)
class Inbound(Record):
    """One message from the server, ready for the engine, and what it answers.

    ``answers``: the id it is a response (or error) to, if it is one; ``None`` for requests,
    notifications, undecodable data and error responses with a null id (see
    ``null_id_error``). ``result``: the result object of a successful response.
    """

    data: bytes
    answers: RequestId | None = None
    null_id_error: bool = False
    result: dict[str, Any] | None = None


def split_inbound(data: bytes) -> list[Inbound]:
    """Split a body or event into messages (a JSON array into its elements).

    Undecodable data is passed on whole for the engine to reject.
    """
    try:
        value = parse_json(data)
    except McpError:
        return [Inbound(data=data)]
    if type(value) is list:
        if not value:
            return [Inbound(data=data)]
        return [_inbound(dump_json(item), item) for item in value]
    return [_inbound(data, value)]


def _inbound(data: bytes, value: Any) -> Inbound:
    if type(value) is not dict or "method" in value:
        return Inbound(data=data)
    if "result" in value:
        result = value["result"]
        if _is_id(value.get("id")):
            return Inbound(
                data=data,
                answers=value["id"],
                result=result if type(result) is dict else None,
            )
        return Inbound(data=data)
    if "error" in value:
        if type(value["error"]) is not dict or value.get("jsonrpc") != "2.0":
            # Not JSON-RPC: e.g. an OAuth error body ({"error": "invalid_token"}) on a
            # 401. Taking it for an answer would leave the request waiting for nothing.
            return Inbound(data=data)
        if _is_id(value.get("id")):
            return Inbound(data=data, answers=value["id"])
        if value.get("id") is None:
            return Inbound(data=data, null_id_error=True)
    return Inbound(data=data)


def with_id(data: bytes, request_id: RequestId) -> bytes:
    """An error response with a null id, re-addressed to ``request_id``.

    A server that rejects a single-request POST before reading its id answers with
    ``"id": null``; on that POST the error can only be about that request.
    """
    value = parse_json(data)
    value["id"] = request_id
    return dump_json(value)


def error_reply(request_id: RequestId, error: McpError) -> bytes:
    """A JSON-RPC error response the transport makes up for a request that failed."""
    return encode_error(request_id, error)


def protocol_version_of(result: dict[str, Any] | None) -> str | None:
    """The ``protocolVersion`` of an initialize result, if it has a usable one."""
    if result is None:
        return None
    version = result.get("protocolVersion")
    if type(version) is str and _header_safe(version):
        return version
    return None


def _header_safe(version: str) -> bool:
    return version.isascii() and version.isprintable() and 0 < len(version) <= 64
