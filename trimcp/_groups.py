"""One helper for the one place exception groups need unwrapping: our context managers.

Trio nurseries wrap every error in an ``ExceptionGroup``. For a user of
``async with open_session(...)`` a group holding exactly one exception is noise: they
should see that exception. Groups with several exceptions are real and stay groups.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import trio


def single_exception(group: BaseExceptionGroup[BaseException]) -> BaseException | None:
    """The one leaf exception of a (possibly nested) group, or None if there are several."""
    exceptions = group.exceptions
    while len(exceptions) == 1:
        only = exceptions[0]
        if not isinstance(only, BaseExceptionGroup):
            return only
        exceptions = only.exceptions
    return None


@asynccontextmanager
async def open_nursery_unwrapped() -> AsyncIterator[trio.Nursery]:
    """``trio.open_nursery()`` whose single-exception groups are raised as that exception."""
    only: BaseException | None = None
    try:
        async with trio.open_nursery() as nursery:
            yield nursery
    except BaseExceptionGroup as group:
        only = single_exception(group)
        if only is None:
            raise
    if only is not None:
        # Raised outside the except block so the group does not become its __context__.
        try:
            raise only
        finally:
            only = None
