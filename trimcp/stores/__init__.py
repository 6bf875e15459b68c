"""Stores: where an HTTP server keeps the state a second process would need.

:class:`MemoryStore` (the default) keeps it in this process; :class:`RedisStore` in Redis,
so several replicas behind a load balancer serve the same sessions; each store's
:class:`Bus` carries the events replicas raise to the others. :func:`store_from_url`
turns ``memory://`` or ``redis://host:port/db`` into one.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from trimcp.stores.base import MemoryStore as MemoryStore
from trimcp.stores.base import Store as Store
from trimcp.stores.base import StoreUnavailable as StoreUnavailable
from trimcp.stores.bus import Bus as Bus
from trimcp.stores.bus import MemoryBus as MemoryBus

if TYPE_CHECKING:
    from trimcp.stores.redis import RedisStore as RedisStore


def __getattr__(name: str) -> Any:
    # RedisStore is loaded on first use: a server on the in-memory store (a stdio
    # server's cold start, say) never imports the Redis modules.
    if name == "RedisStore":
        from trimcp.stores.redis import RedisStore

        return RedisStore
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def store_from_url(url: str) -> Store:
    """A store for ``url``: ``memory://`` (this process) or ``redis://host:port/db``.

    ValueError names an unknown scheme."""
    if url in ("memory", "memory://"):
        return MemoryStore()
    if url.startswith("redis://"):
        from trimcp.stores.redis import RedisStore

        return RedisStore(url)
    from trimcp.stores.urls import shown_url

    raise ValueError(f"unknown store {shown_url(url)!r}: use memory:// or redis://host:port/db")


__all__ = [
    "Bus",
    "MemoryBus",
    "MemoryStore",
    "RedisStore",
    "Store",
    "StoreUnavailable",
    "store_from_url",
]
