"""The optional lifespan hook of a session handler, for serving loops to enter.

A serving loop (the HTTP app, the WebSocket listener, ``Server.serve_session``) enters its
handler's lifespan once around everything it serves; the server framework implements it
(:mod:`trimcp.server.lifespan`). Transports see only this interface.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager
from typing import Any, Protocol, runtime_checkable


@runtime_checkable
class HasLifespan(Protocol):
    """A session handler with a lifespan: ``async with handler.open_lifespan(): serve``."""

    def open_lifespan(self) -> AbstractAsyncContextManager[Any]: ...


@contextlib.asynccontextmanager
async def open_handler_lifespan(handler: object) -> AsyncIterator[None]:
    """Enter ``handler``'s lifespan for the body when it has one (see :class:`HasLifespan`).

    A factory of handlers (or any other object) has none: the body just runs. Errors from
    the lifespan propagate. Cancellation: as the lifespan's own context manager.
    """
    if isinstance(handler, HasLifespan):
        async with handler.open_lifespan():
            yield
    else:
        yield
