"""One helper for the one place exception groups need unwrapping: our context managers.

Trio nurseries wrap every error in an ``ExceptionGroup``. For a user of
``async with open_session(...)`` a group holding exactly one exception is noise: they
should see that exception, with its own traceback and context, and not a "during handling
of the above exception" chain through the group. Groups with several exceptions are real
and stay groups.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import NoReturn

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


def raise_alone(exc: BaseException) -> NoReturn:
    """Raise ``exc`` (taken out of a group) keeping its own ``__context__``.

    Raising inside an ``except`` (or a context manager's exit) would make the group its
    context; the ``finally`` puts the original back while the exception propagates.
    """
    context, suppress = exc.__context__, exc.__suppress_context__
    try:
        raise exc
    finally:
        exc.__context__ = context
        exc.__suppress_context__ = suppress
        del exc


@asynccontextmanager
async def unwrap_single_exception() -> AsyncIterator[None]:
    """Re-raise a single-exception group from the block as that exception alone."""
    try:
        yield
    except BaseExceptionGroup as group:
        only = single_exception(group)
        if only is None:
            raise
        raise_alone(only)


@asynccontextmanager
async def open_nursery_unwrapped() -> AsyncIterator[trio.Nursery]:
    """``trio.open_nursery()`` whose single-exception groups are raised as that exception."""
    async with unwrap_single_exception(), trio.open_nursery() as nursery:
        yield nursery
