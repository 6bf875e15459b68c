"""The canonical form of a resource URI: the one name authorization and lookup agree on.

A server must decide who may read a resource on the same string it serves: if the scope
check matched the URI as sent while the lookup decoded it, ``notes://%70rivate`` would pass a
rule for ``notes://private*`` and still be served as ``notes://private``. So both use
:func:`canonical_uri`, which is RFC 3986 section 6.2.2 normalization, plus a refusal of what
has no single reading:

- the scheme is lower-cased (``NOTES://x`` is ``notes://x``); so is the host, for the schemes
  whose host is a DNS name (``http``, ``https``, ``ws``, ``wss``): in other schemes MCP servers
  use the authority as data (``notes://{name}``), so its case is kept;
- percent-escapes of unreserved characters (``A-Z a-z 0-9 - . _ ~``) are decoded (``%70`` is
  ``p``) and every other escape is written with upper-case hex (``%2f`` is ``%2F``); an escape
  of a reserved character stays an escape (``%2F`` is data, not a ``/``), and ``%25`` stays
  ``%25`` (``%2570`` names the text ``%70``, never ``p``: nothing is decoded twice);
- characters a URI cannot hold (non-ASCII, space, controls, ``" < > \\ ^ ` { | }``) are
  percent-encoded as UTF-8, as RFC 3987 maps an IRI to a URI;
- refused with :class:`AmbiguousUri`: a ``%`` not followed by two hex digits, text that is
  not valid Unicode (a lone surrogate), and a ``.`` or ``..`` segment (also encoded, as
  ``%2E``) in the authority or path, which readers resolve differently.

:func:`canonical_uri` is idempotent. It does no I/O and cannot be cancelled part-way.
"""

from __future__ import annotations

import re
from typing import Final

__all__ = ["AmbiguousUri", "canonical_uri"]

_UNRESERVED: Final = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
_RESERVED: Final = frozenset(":/?#[]@!$&'()*+,;=")
_ALLOWED: Final = _UNRESERVED | _RESERVED | {"%"}
# One escape, or one run of characters a URI cannot hold (encoded together, as UTF-8).
_ESCAPE_OR_FOREIGN: Final = re.compile(
    r"%(?:[0-9A-Fa-f]{2})?|[^" + re.escape("".join(sorted(_ALLOWED))) + "]+"
)
_ESCAPE: Final = re.compile(r"(%[0-9A-F]{2})")
_PLAIN: Final = re.compile("[" + re.escape("".join(sorted(_UNRESERVED | _RESERVED))) + "]*")
_SCHEME: Final = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*:")
_DNS_SCHEMES: Final = frozenset({"http", "https", "ws", "wss"})


class AmbiguousUri(ValueError):
    """A URI with no single reading; ``uri`` is the text as given, ``reason`` says why."""

    def __init__(self, uri: str, reason: str) -> None:
        shown = uri[:200]
        super().__init__(f"the URI {shown!r} is ambiguous: {reason}")
        self.uri = uri
        self.reason = reason


def canonical_uri(uri: str) -> str:
    """``uri`` in canonical form (see the module docstring); raises :class:`AmbiguousUri`."""
    text = _normalize_escapes(uri)
    scheme_match = _SCHEME.match(text)
    if scheme_match is None:
        _refuse_dot_segments(uri, text)
        return text
    scheme = scheme_match.group()[:-1].lower()
    rest = text[scheme_match.end() :]
    _refuse_dot_segments(uri, rest)
    if scheme in _DNS_SCHEMES and rest.startswith("//"):
        end = _end_of(rest, 2, "/?#")
        authority = rest[2:end]
        user, at, hostport = authority.rpartition("@")
        # Lower-case the host's text, not its escapes (their hex stays upper case).
        pieces = _ESCAPE.split(hostport)
        host = "".join(p if i % 2 else p.lower() for i, p in enumerate(pieces))
        rest = f"//{user}{at}{host}{rest[end:]}"
    return f"{scheme}:{rest}"


def _normalize_escapes(uri: str) -> str:
    if _PLAIN.fullmatch(uri):
        return uri  # the common case: nothing escaped, nothing to encode

    def fix(found: re.Match[str]) -> str:
        piece = found.group()
        if piece.startswith("%"):
            if len(piece) != 3:
                raise AmbiguousUri(
                    uri, f"a '%' at position {found.start()} is not followed by two hex digits"
                )
            char = chr(int(piece[1:], 16))
            return char if char in _UNRESERVED else piece.upper()
        try:
            raw = piece.encode("utf-8")
        except UnicodeEncodeError:
            raise AmbiguousUri(uri, "it holds text that is not valid Unicode") from None
        return "".join(f"%{byte:02X}" for byte in raw)

    return _ESCAPE_OR_FOREIGN.sub(fix, uri)


def _end_of(text: str, start: int, stops: str) -> int:
    end = len(text)
    for stop in stops:
        found = text.find(stop, start)
        if 0 <= found < end:
            end = found
    return end


def _refuse_dot_segments(uri: str, hier: str) -> None:
    """Refuse a ``.``/``..`` segment in the authority-and-path part ``hier`` (escapes of
    unreserved characters already decoded, so ``%2E`` was seen as ``.``)."""
    path = hier[: _end_of(hier, 0, "?#")]
    if "." not in path:
        return
    for segment in path.split("/"):
        if segment in (".", ".."):
            raise AmbiguousUri(
                uri,
                f"it has a {segment!r} path segment, which readers resolve differently; "
                "send the URI without dot segments",
            )
