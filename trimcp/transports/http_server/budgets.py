"""What an HTTP request may hold open, budgeted: follows of another replica's stream, and
2026-07-28 ``subscriptions/listen`` streams.

Each is a lease (see :mod:`trimcp.stores.leases`) held while the response is open and
counted in the store's leases when the store is shared (Redis): the bounds then hold
across every replica, not per process. Refusals come before the response starts: 429
when the caller's (or the session's) share is used up, 503 for the server's total, each
naming the setting; a store that cannot count gives 503 naming it.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Hashable, Sequence
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING

from trimcp.auth.principal import principal_key
from trimcp.errors import INTERNAL_ERROR
from trimcp.protocol.jsonrpc import RequestId
from trimcp.stores.base import StoreUnavailable
from trimcp.stores.leases import (
    Lease,
    LeaseRefused,
    Leases,
    MemoryLeases,
    Scope,
    SharesLeases,
    give_back,
)
from trimcp.transports.http_server.asgi import HttpRejection

if TYPE_CHECKING:
    from trimcp.stores.base import Store
    from trimcp.transports.http_server.config import HttpServerConfig

#: The words each scope's refusal uses (by the start of its key).
_WHAT = {
    "follow:s:": "resumed streams followed from other replicas for this session",
    "follow:p:": "resumed streams followed from other replicas for this caller",
    "follow": "resumed streams followed from other replicas",
    "listen:p:": "subscriptions/listen streams of this caller",
    "listen": "subscriptions/listen streams",
}


class StreamBudgets:
    """The follow and listen budgets of one HTTP app."""

    def __init__(self, config: HttpServerConfig, store: Store | None) -> None:
        self.config = config
        #: Where leases are counted (the store's when it is shared, else this process).
        self.leases: Leases = MemoryLeases()
        if store is not None and store.shared and isinstance(store, SharesLeases):
            self.leases = store.leases()

    @asynccontextmanager
    async def follow(self, session_id: str, principal: Hashable | None) -> AsyncIterator[None]:
        """Hold one follow of session ``session_id`` for ``principal`` for the block.
        Raises :class:`HttpRejection` (429, 503) past a bound."""
        config = self.config
        key = principal_key(principal) or ""
        scopes = (
            Scope(
                key=f"follow:s:{session_id}",
                limit=config.max_follows_per_session,
                setting="HttpServerConfig.max_follows_per_session",
            ),
            Scope(
                key=f"follow:p:{key}",
                limit=config.max_follows_per_principal,
                setting="HttpServerConfig.max_follows_per_principal",
            ),
            Scope(key="follow", limit=config.max_follows, setting="HttpServerConfig.max_follows"),
        )
        async with self._held(scopes, None):
            yield

    @asynccontextmanager
    async def listen(
        self,
        principal: Hashable | None,
        request_id: RequestId,
        *,
        max_streams: int,
        max_per_principal: int,
    ) -> AsyncIterator[None]:
        """Hold one listen stream of ``principal`` for the block (the bounds of the
        server's listen hub). Raises :class:`HttpRejection` (429, 503, with a JSON-RPC
        ``-32603`` answering ``request_id``) past a bound."""
        key = principal_key(principal) or ""
        scopes = (
            Scope(
                key=f"listen:p:{key}",
                limit=max_per_principal,
                setting="StatelessOptions.listen_max_streams_per_principal",
            ),
            Scope(key="listen", limit=max_streams, setting="StatelessOptions.listen_max_streams"),
        )
        async with self._held(scopes, request_id):
            yield

    @asynccontextmanager
    async def _held(
        self, scopes: Sequence[Scope], request_id: RequestId | None
    ) -> AsyncIterator[None]:
        lease = await self._acquire(scopes, request_id)
        try:
            yield
        finally:
            await give_back(self.leases, lease)

    async def _acquire(self, scopes: Sequence[Scope], request_id: RequestId | None) -> Lease:
        try:
            return await self.leases.acquire(scopes)
        except LeaseRefused as refused:
            scope = refused.scope
            what = next(words for start, words in _WHAT.items() if scope.key.startswith(start))
            message = (
                f"Too many {what} are open (the limit is {scope.limit}, {scope.setting}); "
                "close one or try again later"
            )
            status = 429 if ":" in scope.key else 503  # a caller's share, or the total
            if request_id is None:
                raise HttpRejection(status, message) from None
            raise HttpRejection(
                status, message, code=INTERNAL_ERROR, request_id=request_id
            ) from None
        except StoreUnavailable as error:
            raise HttpRejection(503, f"Could not count open streams: {error}") from None
