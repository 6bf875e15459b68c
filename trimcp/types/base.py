"""The base of every wire type.

Wire types are declared ``@attrs.frozen(kw_only=True, repr=False, eq=False)`` and inherit
:class:`WireType`, whose ``repr``, ``==`` and ``hash`` are written once
(:class:`trimcp._record.Record`) rather than compiled by attrs for each class, which made
``import trimcp.types`` about a quarter cheaper. They behave like attrs' own.
"""

from trimcp._record import Record


class WireType(Record):
    """The base of every wire type: attrs-like ``repr``, ``==`` and ``hash``."""

    __slots__ = ()
