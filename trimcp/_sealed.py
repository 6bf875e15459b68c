"""One shared, sealed, empty table for the state of resting sessions.

An idle session keeps only its state, and thousands of them may be held at once: an empty
``dict`` still costs 64 bytes, and an emptied one keeps the table it grew to. While a
session rests, each of its tables that holds nothing is :data:`SEALED` instead (one
object for all of them), and its owner makes a fresh one when the session wakes. A write
to it (``table[key] = value``, the only way the owners add) raises: something forgot to
wake the session first (reads, ``pop`` with a default and ``clear`` work, as on any
empty dict).
"""

from __future__ import annotations

from typing import Any, Final


class Sealed(dict[Any, Any]):
    """An empty dict that refuses to hold anything (see the module docstring)."""

    __slots__ = ()

    def __setitem__(self, key: Any, value: Any) -> None:
        raise RuntimeError("a resting session's tables take nothing: wake it first")


#: The table of every resting session's empty tables.
SEALED: Final[dict[Any, Any]] = Sealed()
