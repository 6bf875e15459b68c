"""Cursor pagination for MCP list results (``tools/list``, ``resources/list``, ...).

:func:`paginate` cuts one page out of a sequence and returns the opaque cursor for the
next one. A client must treat cursors as opaque, and a server must answer an invalid one
with ``-32602``; :func:`paginate` raises exactly that
(``McpError(INVALID_PARAMS, "Invalid cursor")``) for a cursor it did not issue, one that was
altered, truncated or issued under another ``salt``, or one pointing past the end.

What a cursor holds, and what "stable" means here
-------------------------------------------------
A cursor is URL-safe base64 (no padding) of a 12-byte HMAC-SHA256 tag over a small body:
the position of the next page and, when ``key`` is given, the key of the last item
returned. The tag is keyed with ``salt``: pass a server secret plus the list's name (e.g.
``secret + "tools/list"``) and cursors can neither be forged nor replayed against another
list; with the default empty salt they still reject accidental damage. The same inputs
always give the same cursor.

Lists can change between pages (a tool registered or removed). Two modes:

- Without ``key`` (offset mode) the cursor is a position. An item inserted or removed
  before it shifts the rest by one: the next page then repeats or skips an item. A
  position past the end of the (now shorter) list is an invalid cursor.
- With ``key`` (keyed mode, recommended; keys must be unique) the next page starts right
  after the item whose key the cursor holds, wherever that item now is, so items added or
  removed elsewhere never cause a repeat or a skip: every item present from the first page
  to the last is returned exactly once. If that item itself is gone, the page starts at the
  first item whose key sorts after it when the list is sorted by key, and otherwise at the
  position the cursor recorded (clamped to the end): best effort, never an error. Keys
  longer than 1,024 UTF-8 bytes are not stored; such a cursor resumes by position.

Cost: O(page) per call, plus one pass over the list in keyed mode when the last-seen item
moved. Input cursors longer than 2,048 characters are rejected before decoding. Pure
functions: no I/O, nothing to cancel.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import re
from collections.abc import Callable, Sequence
from typing import Final, TypeVar

from trimcp.errors import INVALID_PARAMS, McpError

__all__ = ["MAX_CURSOR_LENGTH", "MAX_KEY_BYTES", "paginate"]

T = TypeVar("T")

MAX_CURSOR_LENGTH: Final = 2048
MAX_KEY_BYTES: Final = 1024

_TAG_BYTES: Final = 12
_DOMAIN: Final = b"trimcp.cursor.v1\x00"  # so these tags mean nothing in any other protocol
_BASE64URL: Final = re.compile(r"[A-Za-z0-9_-]+")
# Bodies: b"o<pos>" (offset mode), b"k<pos>:<key>" (keyed), b"p<pos>" (keyed, key too long).
_BODY: Final = re.compile(rb"(?P<mode>[okp])(?P<pos>0|[1-9][0-9]{0,17})(?::(?P<key>.*))?", re.S)


def paginate(
    items: Sequence[T],
    cursor: str | None,
    page_size: int | None,
    *,
    salt: str = "",
    key: Callable[[T], str] | None = None,
) -> tuple[list[T], str | None]:
    """Return the page of ``items`` that ``cursor`` points at, and the next page's cursor.

    ``cursor=None`` starts at the beginning. ``page_size=None`` returns everything from the
    cursor on, with no next cursor. The next cursor is ``None`` on the last page. Raises
    ``McpError(INVALID_PARAMS, "Invalid cursor")`` for a cursor this function did not issue
    with the same ``salt`` and mode (with or without ``key``), and :class:`ValueError` for a
    ``page_size`` below 1. See the module docstring for what happens when ``items`` changed
    since the cursor was issued.
    """
    if page_size is not None and (
        isinstance(page_size, bool) or not isinstance(page_size, int) or page_size < 1
    ):
        raise ValueError(f"page_size must be a positive int or None, not {page_size!r}")
    start = 0 if cursor is None else _resume(items, cursor, salt, key)
    if page_size is None:
        return list(items[start:]), None
    end = min(start + page_size, len(items))
    page = list(items[start:end])
    if end >= len(items):
        return page, None
    return page, _issue(end, None if key is None else key(items[end - 1]), key is not None, salt)


def _issue(position: int, last_key: str | None, keyed: bool, salt: str) -> str:
    body = b"%c%d" % (ord("k" if keyed else "o"), position)
    if last_key is not None:
        encoded = last_key.encode("utf-8")
        if len(encoded) > MAX_KEY_BYTES:
            body = b"p%d" % position
        else:
            body += b":" + encoded
    token = _tag(body, salt) + body
    return base64.urlsafe_b64encode(token).rstrip(b"=").decode("ascii")


def _tag(body: bytes, salt: str) -> bytes:
    return hmac.new(salt.encode("utf-8"), _DOMAIN + body, hashlib.sha256).digest()[:_TAG_BYTES]


def _invalid() -> McpError:
    return McpError(INVALID_PARAMS, "Invalid cursor")


def _resume(items: Sequence[T], cursor: str, salt: str, key: Callable[[T], str] | None) -> int:
    """The index the page for ``cursor`` starts at; raises the invalid-cursor error."""
    if not isinstance(cursor, str) or len(cursor) > MAX_CURSOR_LENGTH:
        raise _invalid()
    if _BASE64URL.fullmatch(cursor) is None:
        raise _invalid()
    try:
        token = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
    except (binascii.Error, ValueError):
        raise _invalid() from None
    # Reject spellings that decode to the same bytes (unused low bits in the last character):
    # a cursor is valid only in the exact form it was issued.
    if base64.urlsafe_b64encode(token).rstrip(b"=").decode("ascii") != cursor:
        raise _invalid()
    tag, body = token[:_TAG_BYTES], token[_TAG_BYTES:]
    if len(tag) != _TAG_BYTES or not hmac.compare_digest(tag, _tag(body, salt)):
        raise _invalid()
    parsed = _BODY.fullmatch(body)
    if parsed is None:
        raise _invalid()
    mode, position, raw_key = parsed["mode"], int(parsed["pos"]), parsed["key"]
    if mode == b"o":
        if key is not None or raw_key is not None or position > len(items):
            raise _invalid()
        return position
    if key is None or (mode == b"k") != (raw_key is not None):
        raise _invalid()
    if raw_key is None:
        return min(position, len(items))
    try:
        last_key = raw_key.decode("utf-8")
    except UnicodeDecodeError:
        raise _invalid() from None
    return _after_key(items, key, last_key, position)


def _after_key(items: Sequence[T], key: Callable[[T], str], last_key: str, hint: int) -> int:
    # Fast path: nothing moved since the cursor was issued.
    if 0 < hint <= len(items) and key(items[hint - 1]) == last_key:
        return hint
    is_sorted = True
    first_after: int | None = None
    previous: str | None = None
    for index, item in enumerate(items):
        current = key(item)
        if current == last_key:
            return index + 1
        if previous is not None and current < previous:
            is_sorted = False
        if first_after is None and current > last_key:
            first_after = index
        previous = current
    if is_sorted:
        return len(items) if first_after is None else first_after
    return min(hint, len(items))
