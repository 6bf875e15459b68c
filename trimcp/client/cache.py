"""The client's response cache (2026-07-28 ``ttlMs`` / ``cacheScope``).

A 2026 server marks the results of ``tools/list``, ``prompts/list``, ``resources/list``,
``resources/templates/list`` and ``resources/read`` with how long they stay fresh
(``ttlMs``) and who may share them (``cacheScope``). The client keeps each fresh result
under its method and the params that shape it (the cursor, the URI; never ``_meta``), and
answers the same request from memory until the TTL passes:

- ``ttlMs`` absent, zero or negative: not kept (the spec's "immediately stale");
- results of a retried request (``inputResponses``/``requestState``) and interim
  ``input_required`` results: never kept;
- ``cacheScope``: this cache belongs to one client, so it never crosses an authorization
  context; ``"private"`` and ``"public"`` results are both kept for that client alone;
- a change notification empties what it concerns at once (``list_changed`` the listing,
  ``resources/updated`` the read of that URI);
- at most ``max_entries`` results; the least recently used goes first.

Freshness is measured on Trio's clock (``trio.current_time``), as the spec's
``now < t_received + ttlMs``.
"""

from __future__ import annotations

import json
from collections import OrderedDict
from typing import Any, Final

from trimcp import serde
from trimcp.protocol.methods import DISCOVER, METHODS

#: The methods whose results may be cached: the method table's cacheable ones, less
#: ``server/discover``, which the client asks once per connection anyway.
CACHEABLE_METHODS: Final = frozenset(
    m.name for m in METHODS.values() if m.cacheable and m is not DISCOVER
)
#: What each change notification makes stale, by the method table's ``stale_after``: the
#: methods, and the param a notification naming one item matches (``resources/updated``
#: names a URI: the reads of that URI only).
_STALE_AFTER: Final = {
    note: tuple((m.name, m.target_field) for m in METHODS.values() if note in m.stale_after)
    for note in {note for m in METHODS.values() for note in m.stale_after}
}
DEFAULT_CACHE_ENTRIES: Final = 256

Key = tuple[str, str]


def cache_key(method: str, params: Any) -> Key | None:
    """The key of a cacheable request, or None when it must not be cached (another
    method, or a retry carrying ``inputResponses``/``requestState``)."""
    if method not in CACHEABLE_METHODS:
        return None
    wire: Any = serde.unstructure(params) if params is not None else {}
    if not isinstance(wire, dict):
        return None
    if "inputResponses" in wire or "requestState" in wire:
        return None
    shaping = {name: value for name, value in wire.items() if name != "_meta"}
    return method, json.dumps(shaping, sort_keys=True, separators=(",", ":"))


class ResponseCache:
    """Fresh 2026 results by request, bounded (see the module docstring)."""

    def __init__(self, max_entries: int = DEFAULT_CACHE_ENTRIES) -> None:
        if max_entries < 0:
            raise ValueError(f"max_entries must be >= 0, got {max_entries!r}")
        self.max_entries = max_entries
        self._entries: OrderedDict[Key, tuple[float, Any]] = OrderedDict()
        #: Requests answered from the cache (for tests and statistics).
        self.hits = 0

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, key: Key, now: float) -> Any:
        """The fresh result for ``key``, or None (a stale one is dropped)."""
        entry = self._entries.get(key)
        if entry is None:
            return None
        expires, result = entry
        if now >= expires:
            del self._entries[key]
            return None
        self._entries.move_to_end(key)
        self.hits += 1
        return result

    def put(self, key: Key, result: Any, now: float) -> None:
        """Keep ``result`` if its ``ttlMs`` says it stays fresh for a while."""
        ttl_ms = getattr(result, "ttl_ms", None)
        if self.max_entries == 0 or not isinstance(ttl_ms, int) or ttl_ms <= 0:
            return
        if getattr(result, "result_type", None) not in (None, "complete"):
            return
        self._entries[key] = (now + ttl_ms / 1000, result)
        self._entries.move_to_end(key)
        while len(self._entries) > self.max_entries:
            self._entries.popitem(last=False)

    def invalidate(self, method: str, params: Any = None) -> None:
        """Forget what the change notification ``method`` made stale."""
        for stale, field in _STALE_AFTER.get(method, ()):
            # A notification naming the item (resources/updated's uri) spares the others.
            named = getattr(params, field, None) if field is not None else None
            for key in [k for k in self._entries if k[0] == stale]:
                if named is None or json.loads(key[1]).get(field) == named:
                    del self._entries[key]

    def clear(self) -> None:
        """Forget everything (e.g. after the credentials changed)."""
        self._entries.clear()
