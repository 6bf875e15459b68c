"""Iterating a paginated listing, bounded against servers whose cursors never end."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Generic, TypeVar

from trimcp.client.errors import PaginationError

T = TypeVar("T")


class PageIterator(Generic[T]):
    """Async iterator over every item of a paginated listing, fetching pages on demand.

    Raises :class:`PaginationError` (after yielding the items received so far) when the
    server repeats a cursor or the listing runs past ``max_pages`` pages. Cancellation:
    cancelling a fetch cancels that request (see :mod:`trimcp.client.client`); the iterator
    should then be dropped.
    """

    def __init__(
        self,
        method: str,
        fetch: Callable[[str | None], Awaitable[tuple[list[T], str | None]]],
        max_pages: int,
    ) -> None:
        if max_pages < 1:
            raise ValueError(f"max_pages must be >= 1, got {max_pages!r}")
        self._method = method
        self._fetch = fetch
        self._max_pages = max_pages
        self._buffer: list[T] = []
        self._index = 0
        self._cursor: str | None = None
        self._seen: set[str] = set()
        self._pages = 0
        self._done = False
        self._stop: PaginationError | None = None

    @property
    def pages(self) -> int:
        """How many pages have been fetched so far."""
        return self._pages

    def __aiter__(self) -> PageIterator[T]:
        return self

    async def __anext__(self) -> T:
        while self._index >= len(self._buffer):
            if self._stop is not None:
                raise self._stop
            if self._done:
                raise StopAsyncIteration
            if self._pages >= self._max_pages:
                raise PaginationError(
                    self._method,
                    self._pages,
                    f"the listing did not end within {self._max_pages} pages "
                    "(the client's max_pages)",
                )
            items, cursor = await self._fetch(self._cursor)
            self._pages += 1
            self._buffer, self._index = items, 0
            if cursor is None:
                self._done = True
            elif cursor in self._seen or cursor == self._cursor:
                self._stop = PaginationError(
                    self._method,
                    self._pages,
                    f"the server repeated the cursor {cursor[:80]!r} on page {self._pages}",
                )
            else:
                if self._cursor is not None:
                    self._seen.add(self._cursor)
                self._cursor = cursor
        item = self._buffer[self._index]
        self._index += 1
        return item
