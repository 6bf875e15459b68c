"""The Redis-backed store: replicas behind a load balancer share what they need."""

from __future__ import annotations

from typing import TYPE_CHECKING

from trimcp.transports.http_server.event_store import EventStore

if TYPE_CHECKING:
    from trimcp.stores.redis_client import RedisAddress, RedisClient

DEFAULT_PREFIX = "trimcp:"


class RedisStore:
    """State shared through one Redis database (``redis://host:port/db``).

    ``prefix`` starts every key (give each application its own); ``timeout`` bounds every
    call (see :class:`~trimcp.stores.redis_client.RedisClient`); ``event_ttl`` is how long
    a session's events stay after its last event; ``max_events`` bounds each session's
    event stream (approximately: Redis trims in whole blocks).

    Needs the ``redis`` extra (``pip install 'trimcp[redis]'``, which brings hiredis).
    Opens connections on first use; close it with :meth:`aclose`.
    """

    def __init__(
        self,
        url: str,
        *,
        prefix: str = DEFAULT_PREFIX,
        timeout: float = 2.0,
        max_connections: int = 32,
        event_ttl: float = 3600.0,
        max_events: int = 512,
    ) -> None:
        try:
            from trimcp.stores.redis_client import RedisAddress, RedisClient
        except ImportError as error:  # pragma: no cover - depends on the environment
            raise ImportError(
                f"RedisStore needs hiredis ({error}): pip install 'trimcp[redis]'"
            ) from error
        self.address: RedisAddress = RedisAddress.from_url(url)
        self.client: RedisClient = RedisClient(
            self.address, timeout=timeout, max_connections=max_connections
        )
        self.prefix = prefix
        self.event_ttl = event_ttl
        self.max_events = max_events

    def key(self, *parts: str) -> str:
        """A key in this store's namespace."""
        return self.prefix + ":".join(parts)

    def event_store(self, session_id: str) -> EventStore:
        from trimcp.stores.redis_events import RedisEventStore

        return RedisEventStore(
            self.client, self.key("ev", session_id),
            max_events=self.max_events, ttl=self.event_ttl,
        )

    async def aclose(self) -> None:
        await self.client.aclose()

    def __repr__(self) -> str:
        return f"RedisStore({str(self.address)!r}, prefix={self.prefix!r})"
