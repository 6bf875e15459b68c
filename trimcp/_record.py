"""``repr``, ``==`` and ``hash`` for frozen attrs classes, written once instead of per class.

attrs writes a ``__repr__``, ``__eq__`` and ``__hash__`` for each class it decorates, as
source code that it compiles when the class is created. Over trimcp's ~180 attrs classes
that was a large share of start-up (for the ~110 wire types alone, ~160 M of ~590 M
instructions of ``import trimcp.types`` under callgrind), paid by every process, while
these methods are rarely on a hot path. So trimcp's frozen classes are declared
``@attrs.frozen(..., repr=False, eq=False)`` and inherit :class:`Record`, whose methods
behave like attrs' own: the repr is ``ClassName(field=value, ...)`` over the fields with
``repr=True``; two instances are equal when they are of the very same class and their
fields with ``eq=True`` are equal; the hash is that of the class and those fields (so a
record holding a list or dict is unhashable, as with attrs).
"""

from __future__ import annotations

import attrs

#: class -> (names shown by repr, names compared by ==)
_NAMES: dict[type, tuple[tuple[str, ...], tuple[str, ...]]] = {}


def _names(cls: type) -> tuple[tuple[str, ...], tuple[str, ...]]:
    names = _NAMES.get(cls)
    if names is None:
        fields = attrs.fields(cls)
        names = _NAMES[cls] = (
            tuple(field.name for field in fields if field.repr),
            tuple(field.name for field in fields if field.eq),
        )
    return names


class Record:
    """Generic ``repr``, ``==`` and ``hash`` for frozen attrs classes (see the module doc)."""

    __slots__ = ()

    def __repr__(self) -> str:
        cls = type(self)
        shown = ", ".join(f"{name}={getattr(self, name)!r}" for name in _names(cls)[0])
        return f"{cls.__qualname__}({shown})"

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return all(getattr(self, name) == getattr(other, name) for name in _names(type(self))[1])

    def __hash__(self) -> int:
        cls = type(self)
        return hash((cls, *[getattr(self, name) for name in _names(cls)[1]]))
