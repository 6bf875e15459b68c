"""The names the Redis event store gives streams and events, and their one parser.

A client hands an event id back in ``Last-Event-ID``: every part of it is input. So the
grammar lives here once, beside the functions that mint names, and
:func:`parse_event_id` accepts exactly what they can make, with the same bounds: a name
this server could not have issued is refused before any Redis call, and no work is ever
proportional to its length.

- A replica's id is :data:`REPLICA_ID_BYTES` random bytes in lower-case hex
  (:func:`new_replica_id`).
- An event id is ``<stream>_<entry>``: ``<entry>`` is a Redis stream entry id
  (``<ms>-<seq>``, both unsigned 64-bit decimals without leading zeros), ``0-0`` for a POST
  stream's priming event (never stored), or ``0-<n>`` for an event sent while Redis was
  down.
- ``<stream>`` is ``0`` (the session's GET stream) or a POST stream's
  ``<replica>.<number>`` or ``<replica>.<number>.<ids>``: ``<number>`` counts the POST
  streams of the session on that replica from 1; ``<ids>`` names the stream's requests
  (:func:`name_requests`: a number in decimal, a string as ``s`` and the hex of its UTF-8,
  comma-separated, at most :data:`MAX_NAMED_IDS` characters).
"""

from __future__ import annotations

import re
import secrets
from collections.abc import Sequence

import attrs

from trimcp.protocol.jsonrpc import RequestId

#: The random bytes of a replica id (its hex is twice as long).
REPLICA_ID_BYTES = 6
#: The longest request ids a POST stream's name carries (longer: left out, see
#: :func:`name_requests`).
MAX_NAMED_IDS = 200
#: The name of the session's GET stream.
GET_STREAM = "0"
#: The entry id of a POST stream's priming event (never stored: before every entry).
PRIMING = "0-0"
_U64 = 2**64 - 1
_MAX_DIGITS = len(str(_U64))
#: The longest event id :func:`parse_event_id` accepts: the longest one minted.
MAX_EVENT_ID_CHARS = 2 * REPLICA_ID_BYTES + 1 + 19 + 1 + MAX_NAMED_IDS + 1 + 2 * _MAX_DIGITS + 1

_REPLICA = re.compile(rf"[0-9a-f]{{{2 * REPLICA_ID_BYTES}}}")
_NUMBER = re.compile(r"[1-9][0-9]{0,18}")
_ENTRY = re.compile(rf"(0|[1-9][0-9]{{0,{_MAX_DIGITS - 1}}})-(0|[1-9][0-9]{{0,{_MAX_DIGITS - 1}}})")
_INT_ID = re.compile(r"-?(0|[1-9][0-9]*)")
_HEX_ID = re.compile(r"s(?:[0-9a-f]{2})*")


def new_replica_id() -> str:
    """A fresh replica id (random: two processes never share one)."""
    return secrets.token_hex(REPLICA_ID_BYTES)


def is_replica_id(text: str) -> bool:
    """Whether ``text`` has the form :func:`new_replica_id` gives."""
    return _REPLICA.fullmatch(text) is not None


def name_requests(request_ids: Sequence[RequestId]) -> str | None:
    """The ``<ids>`` part of a POST stream's name (None: none, or longer than
    :data:`MAX_NAMED_IDS` characters, so left out)."""
    if len(request_ids) == 1 and type(request_ids[0]) is int:
        named = str(request_ids[0])  # the usual case (the SDK's ids)
    else:
        named = ",".join(
            str(rid) if type(rid) is int else "s" + str(rid).encode("utf-8", "surrogatepass").hex()
            for rid in request_ids
        )
    if not named or len(named) > MAX_NAMED_IDS:
        return None
    return named


def post_stream_name(number: int, request_ids: Sequence[RequestId]) -> str:
    """``<number>`` or ``<number>.<ids>``: a POST stream's name on the replica running it."""
    named = name_requests(request_ids)
    return str(number) if named is None else f"{number}.{named}"


@attrs.frozen(kw_only=True, slots=True)
class EventName:
    """What a well-formed event id says (see the module docstring)."""

    #: The stream's name in the session's Redis stream (``0``, or ``<replica>.<local>``).
    stream: str
    #: The replica whose POST stream it is (None: the GET stream).
    owner: str | None
    #: The POST stream's name on its replica (``<number>[.<ids>]``; ``0`` for the GET stream).
    local: str
    #: The requests the name carries (None: the GET stream, or a name without them).
    request_ids: tuple[RequestId, ...] | None
    #: The entry id after which to replay.
    entry: str

    @property
    def stored(self) -> bool:
        """Whether ``entry`` can be a stored entry (not a priming or unstored event's)."""
        return not self.entry.startswith("0-")


def parse_event_id(event_id: str) -> EventName | None:
    """What ``event_id`` names, or None when the store could not have issued it (too long,
    a part out of its range or written otherwise than the store writes it). Never does
    work proportional to more than :data:`MAX_EVENT_ID_CHARS` characters."""
    if len(event_id) > MAX_EVENT_ID_CHARS:
        return None
    stream, _, entry = event_id.rpartition("_")
    if not _entry_ok(entry):
        return None
    if stream == GET_STREAM:
        if entry == PRIMING:
            return None  # the GET stream's priming events are stored: never 0-0
        return EventName(stream=stream, owner=None, local=stream, request_ids=None, entry=entry)
    owner, dot, local = stream.partition(".")
    if not dot or _REPLICA.fullmatch(owner) is None:
        return None
    number, dot, named = local.partition(".")
    if _NUMBER.fullmatch(number) is None:
        return None
    request_ids = None
    if dot:
        request_ids = _parse_requests(named)
        if request_ids is None:
            return None
    return EventName(stream=stream, owner=owner, local=local, request_ids=request_ids, entry=entry)


def _entry_ok(entry: str) -> bool:
    found = _ENTRY.fullmatch(entry)
    return found is not None and int(found[1]) <= _U64 and int(found[2]) <= _U64


def _parse_requests(named: str) -> tuple[RequestId, ...] | None:
    """The request ids :func:`name_requests` wrote as ``named`` (None: it could not have)."""
    if len(named) > MAX_NAMED_IDS:
        return None
    ids: list[RequestId] = []
    for part in named.split(","):
        if _INT_ID.fullmatch(part):
            ids.append(int(part))
        elif _HEX_ID.fullmatch(part):
            try:
                ids.append(bytes.fromhex(part[1:]).decode("utf-8", "surrogatepass"))
            except UnicodeDecodeError:
                return None
        else:
            return None
    # Written back exactly as it came (no "-0", no upper-case hex, no empty part):
    # otherwise two names would stand for one stream.
    if name_requests(ids) != named:
        return None
    return tuple(ids)
