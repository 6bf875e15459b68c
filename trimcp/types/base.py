"""The base of every wire type: ``repr``, ``==`` and ``hash`` written once, not per class.

attrs writes a ``__repr__``, ``__eq__`` and ``__hash__`` for each class it decorates, as
source code that it compiles when the class is created. For the ~110 wire types that was
about a third of the cost of ``import trimcp.types`` (~170 M of ~390 M instructions under
callgrind), paid by every process at start-up, while these methods are rarely called on a
hot path. So the wire types are declared ``@attrs.frozen(kw_only=True, repr=False,
eq=False)`` and inherit the generic methods below, which behave like attrs' own: the repr
is ``ClassName(field=value, ...)``; two instances are equal when they are of the very same
class and their fields are equal, in order; the hash is that of the class and the fields.
"""

from __future__ import annotations

from typing import Any

import attrs

_FIELD_NAMES: dict[type, tuple[str, ...]] = {}


def _field_names(cls: type) -> tuple[str, ...]:
    names = _FIELD_NAMES.get(cls)
    if names is None:
        names = _FIELD_NAMES[cls] = tuple(field.name for field in attrs.fields(cls))
    return names


class WireType:
    """Generic ``repr``, ``==`` and ``hash`` for attrs wire types (see the module doc)."""

    __slots__ = ()

    def __repr__(self) -> str:
        cls = type(self)
        fields = ", ".join(f"{name}={getattr(self, name)!r}" for name in _field_names(cls))
        return f"{cls.__qualname__}({fields})"

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return all(getattr(self, name) == getattr(other, name) for name in _field_names(type(self)))

    def __ne__(self, other: object) -> bool:
        equal = self.__eq__(other)
        return equal if equal is NotImplemented else not equal

    def __hash__(self) -> int:
        cls = type(self)
        values: list[Any] = [getattr(self, name) for name in _field_names(cls)]
        return hash((cls, *values))
