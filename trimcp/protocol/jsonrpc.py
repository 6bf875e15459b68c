"""JSON-RPC 2.0 envelopes: parse, classify and encode single messages and batches.

This is the hot path of every message, so it works on plain dicts (what ``json.loads``
gives) and checks exactly what JSON-RPC and MCP require, nothing more. Params and results
stay raw here; the :mod:`trimcp.protocol.connection` structures them by method name.

Classification never raises anything but :class:`InvalidMessage`, whose ``request_id``
is the id to answer with (``None`` when the id itself is unusable or absent).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any, Final

import attrs

from trimcp._record import Record
from trimcp.errors import (
    INVALID_PARAMS,
    INVALID_REQUEST,
    PARSE_ERROR,
    McpError,
    RemoteProtocolError,
)
from trimcp.types.common import RequestId as RequestId

try:  # the fast path; the stdlib stays the reference for everything orjson refuses
    from orjson import dumps as _orjson_dumps_impl
    from orjson import loads as _orjson_loads_impl

    _orjson_dumps: Callable[[Any], bytes] | None = _orjson_dumps_impl
    _orjson_loads: Callable[[bytes | str], Any] | None = _orjson_loads_impl
except ImportError:  # pragma: no cover - orjson is a declared dependency
    _orjson_dumps = None
    _orjson_loads = None


JSONRPC_VERSION: Final = "2.0"


@attrs.define(repr=False, eq=False)
class Request(Record):
    """A JSON-RPC request: it has an id and expects exactly one response.

    Made for every request read and only read after: not frozen, since a frozen attrs
    class costs about 1,000 more instructions per field to make."""

    id: RequestId
    method: str
    params: dict[str, Any] | None = None


@attrs.frozen(kw_only=True, repr=False, eq=False)
class Notification(Record):
    """A JSON-RPC notification: no id, no response."""

    method: str
    params: dict[str, Any] | None = None


@attrs.frozen(kw_only=True, repr=False, eq=False)
class Response(Record):
    """A successful JSON-RPC response."""

    id: RequestId
    result: dict[str, Any]


@attrs.frozen(kw_only=True, repr=False, eq=False)
class ErrorResponse(Record):
    """A JSON-RPC error response. ``id`` is None when the request's id could not be read."""

    id: RequestId | None
    error: McpError


Message = Request | Notification | Response | ErrorResponse

#: What :func:`classify` makes a request with (then sets its three slots): calling the
#: class costs its generated ``__init__``'s frame and the class call's argument tuple.
_new_request: Final = object.__new__


class InvalidMessage(RemoteProtocolError):
    """A message the peer sent is not valid JSON-RPC / MCP.

    ``request_id`` is the id to put in the error reply (None if unknown or unusable);
    ``replyable`` is False for messages that must never be answered (invalid responses).
    """

    def __init__(
        self,
        code: int,
        message: str,
        *,
        request_id: RequestId | None = None,
        replyable: bool = True,
        data: Any = None,
    ) -> None:
        super().__init__(code, message, data)
        self.request_id = request_id
        self.replyable = replyable


#: A run of 19+ digits may be an integer outside the signed 64-bit range, which orjson
#: reads as a float (2**64 would arrive as 1.8446744073709552e+19): such texts go to the
#: stdlib, which keeps every integer exact. Digits inside strings trip it too (harmless).
#: Found by mapping digits to "1" and the rest to "0" and searching for 19 ones: two C
#: passes, about 13x faster than a regex (whose cost matched orjson's parse itself).
#: ``bytes.find``, not ``in``: ``in`` first tries the needle as an integer and makes and
#: clears a TypeError, which cost as much as the search (callgrind: 2,500 against 1,250).
_DIGITS_AS_ONES = bytes(0x31 if 0x30 <= c <= 0x39 else 0x30 for c in range(256))
_LONG_DIGIT_RUN = b"1" * 19
_LONG_DIGITS_TEXT = re.compile(r"[0-9]{19}")


def holds_long_digit_run(data: bytes) -> bool:
    """Whether ``data`` holds a run of 19 or more digits (the big-integer check of
    :func:`parse_json`). A reader holding many messages at once asks once for all of them,
    joined by a line break (no run crosses it), and parses each with ``screened``: the
    per-call share of the check is paid once per read instead of once per message."""
    return data.translate(_DIGITS_AS_ONES).find(_LONG_DIGIT_RUN) != -1


#: What :func:`parse_json` runs first on a text without a long digit run (orjson's
#: ``loads``; None without orjson): a reader that screened its texts with
#: :func:`holds_long_digit_run` may call it directly (no frame of ours per message) and
#: must give a text it refuses (``ValueError``) to ``parse_json(data, True)``, which
#: reads or refuses it exactly.
loads_screened: Final[Callable[[bytes], Any] | None] = _orjson_loads


def parse_json(data: bytes | str, screened: bool = False) -> Any:
    """Decode one JSON text. Raises :class:`InvalidMessage` (``-32700``) on anything bad.

    What is accepted is RFC 8259 JSON in UTF-8, and nothing looser (the official SDK
    refuses the same things):

    - integers of any size stay exact Python ints (a request id of ``2**64`` is an id);
    - invalid UTF-8, other encodings (UTF-16/32) and a byte order mark are parse errors;
    - a string with an unpaired UTF-16 surrogate escape (``"\\ud800"``) is refused
      (``-32600``, with the request's id when it has one): it has no UTF-8 form, so no
      handler could pass it on;
    - nesting deeper than about 1,000 levels is a parse error (never a ``RecursionError``).

    orjson parses when it can (3-5x faster); what it refuses or would read inexactly goes
    to the stdlib, with the same checks, so the accepted language is the same either way.

    ``screened`` (by position): the caller found no long run of digits in ``data`` (or in
    a text holding it) with :func:`holds_long_digit_run`, so the check is not made again.
    """
    if _orjson_loads is not None:
        # Whether it may hold a big integer (holds_long_digit_run, inline: every message
        # asks).
        if screened:
            risky = False
        elif isinstance(data, bytes):
            risky = data.translate(_DIGITS_AS_ONES).find(_LONG_DIGIT_RUN) != -1
        else:
            risky = _LONG_DIGITS_TEXT.search(data) is not None
        if not risky:
            try:
                return _orjson_loads(data)
            except ValueError:
                pass
    return _parse_strictly(data)


def _parse_strictly(data: bytes | str) -> Any:
    if isinstance(data, bytes):
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            raise InvalidMessage(
                PARSE_ERROR, "Parse error: invalid UTF-8 (JSON messages must be UTF-8)"
            ) from None
    else:
        text = data
    if text.startswith("\ufeff"):
        raise InvalidMessage(
            PARSE_ERROR,
            "Parse error: the message starts with a byte order mark; send UTF-8 without a BOM",
        )
    try:
        value = json.loads(text)
    except RecursionError:
        raise InvalidMessage(PARSE_ERROR, "Parse error: JSON nested too deeply") from None
    except ValueError as exc:
        raise InvalidMessage(PARSE_ERROR, f"Parse error: {exc}") from None
    if _holds_lone_surrogate(value):
        # Parsed fine, so the refusal can name the request: its sender gets an answer.
        raw_id = value.get("id") if type(value) is dict else None
        raise InvalidMessage(
            INVALID_REQUEST,
            "Invalid request: a string holds an unpaired UTF-16 surrogate escape "
            "(\\ud800-\\udfff), which has no UTF-8 form",
            request_id=raw_id if _is_valid_id(raw_id) and "method" in value else None,
        )
    return value


def _holds_lone_surrogate(value: Any) -> bool:
    """Whether any string (key or value) in a decoded JSON value has a lone surrogate."""
    stack = [value]
    while stack:
        item = stack.pop()
        kind = type(item)
        if kind is str:
            if not item.isascii() and _unencodable(item):
                return True
        elif kind is dict:
            for key in item:
                if not key.isascii() and _unencodable(key):
                    return True
            stack.extend(item.values())
        elif kind is list:
            stack.extend(item)
    return False


def _unencodable(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def _is_valid_id(value: object) -> bool:
    # bool is a subclass of int, but `true` is not a valid JSON-RPC id; MCP forbids null.
    return (type(value) is int) or (type(value) is str)


def classify(obj: Any) -> Message:
    """Turn one decoded JSON value into a typed envelope, or raise :class:`InvalidMessage`."""
    if type(obj) is not dict:
        raise InvalidMessage(INVALID_REQUEST, "Invalid request: a message must be a JSON object")
    raw_id = obj.get("id")
    has_id = "id" in obj
    # (_is_valid_id, inline: every message asks)
    id_ok = has_id and (type(raw_id) is int or type(raw_id) is str)
    reply_id: RequestId | None = raw_id if id_ok else None
    if obj.get("jsonrpc") != JSONRPC_VERSION:
        raise InvalidMessage(
            INVALID_REQUEST, 'Invalid request: "jsonrpc" must be "2.0"', request_id=reply_id
        )
    if "method" in obj:
        method = obj["method"]
        if type(method) is not str or not method:
            raise InvalidMessage(
                INVALID_REQUEST,
                'Invalid request: "method" must be a non-empty string',
                request_id=reply_id,
            )
        if has_id and not id_ok:
            raise InvalidMessage(
                INVALID_REQUEST, 'Invalid request: "id" must be a string or an integer'
            )
        params = obj.get("params")
        if type(params) is not dict:  # (one check for the usual case: params present)
            if params is not None:
                raise InvalidMessage(
                    INVALID_PARAMS,
                    'Invalid params: "params" must be an object',
                    request_id=reply_id,
                )
            if "params" in obj:
                raise InvalidMessage(
                    INVALID_PARAMS,
                    'Invalid params: "params" must be an object, not null',
                    request_id=reply_id,
                )
        if reply_id is not None:
            # Request(reply_id, method, params) without the class call (every request
            # makes one): its slots set here, as its __init__ would (no validators).
            request = _new_request(Request)
            request.id = reply_id
            request.method = method
            request.params = params
            return request
        return Notification(method=method, params=params)
    has_result = "result" in obj
    has_error = "error" in obj
    if not has_result and not has_error:
        # Neither a request nor a response: answer it, but with a null id, since we cannot
        # tell whose id it carries.
        raise InvalidMessage(
            INVALID_REQUEST, 'Invalid message: needs one of "method", "result" or "error"'
        )
    # A response: it is never answered, whatever is wrong with it (answering could make
    # two peers reply to each other's errors forever).
    if has_result and has_error:
        raise InvalidMessage(
            INVALID_REQUEST, 'Invalid response: both "result" and "error"', replyable=False
        )
    if has_result:
        result = obj["result"]
        if not id_ok:
            raise InvalidMessage(INVALID_REQUEST, "Invalid response id", replyable=False)
        if type(result) is not dict:
            raise InvalidMessage(
                INVALID_REQUEST,
                'Invalid response: "result" must be an object',
                request_id=reply_id,
                replyable=False,
            )
        assert reply_id is not None
        return Response(id=reply_id, result=result)
    if has_id and raw_id is not None and not id_ok:
        raise InvalidMessage(INVALID_REQUEST, "Invalid error response id", replyable=False)
    return ErrorResponse(id=reply_id, error=_error_from_object(obj["error"]))


def _error_from_object(error: Any) -> McpError:
    if type(error) is not dict:
        return McpError(INVALID_REQUEST, "Peer sent a malformed error object", data=error)
    code = error.get("code")
    if type(code) is not int:
        code = INVALID_REQUEST
    message = error.get("message")
    if type(message) is not str:
        message = "Peer sent an error without a message"
    return McpError(code, message, error.get("data"))


# --- encoding ---------------------------------------------------------------------------

_dumps_utf8 = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode
_dumps_ascii = json.JSONEncoder(separators=(",", ":"), ensure_ascii=True, allow_nan=False).encode


_join_bytes: Final = b"".join


def dump_json(obj: Any) -> bytes:
    """Encode a JSON value compactly as UTF-8.

    orjson encodes when installed (about 18x faster on a 50-tool list); it writes NaN and
    infinities as ``null`` (as JavaScript does). What it refuses (lone surrogates, integers
    over 64 bits, non-string keys) goes to the stdlib: strings holding lone surrogates
    (legal as ``\\ud800`` escapes in JSON input) cannot be UTF-8 encoded, so those messages
    fall back to ASCII escapes, and the output is always valid. Raises ``TypeError`` for
    values JSON cannot hold (and, on the stdlib path, ``ValueError`` for NaN/Infinity).
    """
    if _orjson_dumps is not None:
        try:
            encoded = _orjson_dumps(obj)
        except TypeError:
            pass
        else:
            # orjson hands back its whole growth buffer: a 13-byte message keeps 4 KiB
            # allocated, a 5 KB one 64 KiB. Encoded messages are kept (event stores,
            # backlogs, queues), so return a right-sized copy: the memcpy costs a few
            # percent of the encode and saves up to 300x the memory. Joined with an
            # empty bytes (two items, so join copies): a third of what
            # bytes(memoryview(...)) cost (callgrind: 780 instructions against 2,200).
            return _join_bytes((encoded, b""))
    text = _dumps_utf8(obj)
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        return _dumps_ascii(obj).encode("ascii")


def request_object(request_id: RequestId, method: str, params: Any) -> dict[str, Any]:
    """The JSON object of a request (``params`` left out when None)."""
    if params is None:
        return {"jsonrpc": JSONRPC_VERSION, "id": request_id, "method": method}
    return {"jsonrpc": JSONRPC_VERSION, "id": request_id, "method": method, "params": params}


def notification_object(method: str, params: Any) -> dict[str, Any]:
    """The JSON object of a notification (``params`` left out when None)."""
    if params is None:
        return {"jsonrpc": JSONRPC_VERSION, "method": method}
    return {"jsonrpc": JSONRPC_VERSION, "method": method, "params": params}


def response_object(request_id: RequestId, result: Any) -> dict[str, Any]:
    """The JSON object of a successful response."""
    return {"jsonrpc": JSONRPC_VERSION, "id": request_id, "result": result}


def error_object(request_id: RequestId | None, error: McpError) -> dict[str, Any]:
    """The JSON object of an error response."""
    return {"jsonrpc": JSONRPC_VERSION, "id": request_id, "error": error.to_error_object()}


def encode_error(request_id: RequestId | None, error: McpError) -> bytes:
    """Encode an error response; never fails (unencodable ``data`` is dropped)."""
    try:
        return dump_json(error_object(request_id, error))
    except (TypeError, ValueError, RecursionError):
        bare = McpError(error.code, error.message)
        return dump_json(error_object(request_id, bare))


def encode_batch(messages: list[bytes]) -> bytes:
    """Join already-encoded messages into one JSON array (a batch reply)."""
    return b"[" + b",".join(messages) + b"]"
