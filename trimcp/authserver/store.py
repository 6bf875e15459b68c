"""Where the authorization server keeps its state: :class:`AuthStore`, in memory or Redis.

Everything the server remembers between two HTTP requests is one small JSON record under
a *kind* and a key: registered clients, consent asked and given, logins under way
upstream, authorization codes, refresh tokens and their families, and the token signing
keys. Every record has a TTL; the store holds at most ``max_entries`` records in all and
at most ``max_per_client`` that one client's requests made (codes, logins, refresh
families), so one client cannot crowd out the others. A refused write returns False and
nothing is stored.

Secrets are never keys: codes and refresh tokens are stored under their SHA-256 digest,
so a copy of the store holds no usable code or token.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, Protocol

import orjson

#: Records held at most by a :class:`MemoryAuthStore`.
DEFAULT_MAX_ENTRIES = 100_000
#: Records one client's requests may hold at a time (codes, logins, families...).
DEFAULT_MAX_PER_CLIENT = 1_000
#: Bytes one record may take once encoded (a registration's metadata is the largest).
MAX_RECORD_BYTES = 16 * 1024

Record = dict[str, Any]


class AuthStore(Protocol):
    """The authorization server's records (see the module docstring). Every call is
    bounded in time (Redis: its client's timeout, then ``StoreUnavailable``)."""

    async def put(
        self,
        kind: str,
        key: str,
        value: Record,
        ttl: float,
        *,
        client: str | None = None,
        only_new: bool = False,
    ) -> bool:
        """Store ``value`` for ``ttl`` seconds; False (nothing stored) when the store or
        ``client``'s share is full, or, with ``only_new``, when ``key`` is taken."""
        ...

    async def get(self, kind: str, key: str) -> Record | None:
        """The live record, or None."""
        ...

    async def take(self, kind: str, key: str) -> Record | None:
        """The live record, deleted in the same step: of two callers, one gets it."""
        ...

    async def delete(self, kind: str, key: str) -> None:
        """Forget the record (nothing when there is none)."""
        ...


def encode(value: Record) -> bytes:
    """A record as stored; ValueError past :data:`MAX_RECORD_BYTES`."""
    data = orjson.dumps(value)
    if len(data) > MAX_RECORD_BYTES:
        raise ValueError(f"a record of {len(data)} bytes is over {MAX_RECORD_BYTES}")
    return data


def decode(data: bytes) -> Record:
    """A stored record (ValueError when it is not a JSON object)."""
    value = orjson.loads(data)
    if not isinstance(value, dict):
        raise ValueError("a stored record is not a JSON object")
    return value


class MemoryAuthStore:
    """:class:`AuthStore` in this process's memory: for one process (``--workers`` and
    replicas need :class:`~trimcp.authserver.redis_store.RedisAuthStore`).

    ``clock``: seconds since the epoch (tests pass their own).
    """

    def __init__(
        self,
        *,
        max_entries: int = DEFAULT_MAX_ENTRIES,
        max_per_client: int = DEFAULT_MAX_PER_CLIENT,
        clock: Callable[[], float] = time.time,
    ) -> None:
        if max_entries < 1 or max_per_client < 1:
            raise ValueError("max_entries and max_per_client must be at least 1")
        self.max_entries = max_entries
        self.max_per_client = max_per_client
        self._clock = clock
        # (kind, key) -> (expires at, client, encoded value)
        self._records: dict[tuple[str, str], tuple[float, str | None, bytes]] = {}
        self._per_client: dict[str, int] = {}

    def __len__(self) -> int:
        return len(self._records)

    def _drop(self, where: tuple[str, str]) -> None:
        found = self._records.pop(where, None)
        if found is not None and found[1] is not None:
            left = self._per_client[found[1]] - 1
            if left:
                self._per_client[found[1]] = left
            else:
                del self._per_client[found[1]]

    def _live(self, where: tuple[str, str]) -> tuple[float, str | None, bytes] | None:
        found = self._records.get(where)
        if found is not None and found[0] <= self._clock():
            self._drop(where)
            return None
        return found

    def _purge(self) -> None:
        now = self._clock()
        for where in [w for w, (until, _, _) in self._records.items() if until <= now]:
            self._drop(where)

    async def put(
        self,
        kind: str,
        key: str,
        value: Record,
        ttl: float,
        *,
        client: str | None = None,
        only_new: bool = False,
    ) -> bool:
        data = encode(value)
        where = (kind, key)
        if self._live(where) is not None:
            if only_new:
                return False
            self._drop(where)
        if len(self._records) >= self.max_entries:
            self._purge()
        if len(self._records) >= self.max_entries:
            return False
        if client is not None and self._per_client.get(client, 0) >= self.max_per_client:
            self._purge()
            if self._per_client.get(client, 0) >= self.max_per_client:
                return False
        self._records[where] = (self._clock() + ttl, client, data)
        if client is not None:
            self._per_client[client] = self._per_client.get(client, 0) + 1
        return True

    async def get(self, kind: str, key: str) -> Record | None:
        found = self._live((kind, key))
        return None if found is None else decode(found[2])

    async def take(self, kind: str, key: str) -> Record | None:
        found = self._live((kind, key))
        if found is None:
            return None
        self._drop((kind, key))
        return decode(found[2])

    async def delete(self, kind: str, key: str) -> None:
        self._drop((kind, key))
