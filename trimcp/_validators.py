"""Small attrs validators and the "argument not given" sentinel, shared by every options class.

The ground floor: imports nothing of trimcp, so any layer may use it.
"""

from __future__ import annotations

from typing import Any, Final

import attrs

#: A keyword's default when ``None`` means something else ("no limit"): ``timeout=DEFAULT``
#: takes the configured value, ``timeout=None`` none at all. One object everywhere, so a
#: caller may pass it on to a lower layer unchanged.
DEFAULT: Final[Any] = object()


def positive(instance: object, attribute: attrs.Attribute[Any], value: float) -> None:
    """An attrs validator: ``value`` is a number above zero (``True`` is not a number)."""
    if isinstance(value, bool) or not value > 0:
        raise ValueError(f"{attribute.name} must be > 0, got {value!r}")


def optional_positive(
    instance: object, attribute: attrs.Attribute[Any], value: float | None
) -> None:
    """An attrs validator: ``value`` is None (no limit) or a number above zero."""
    if value is not None and (isinstance(value, bool) or not value > 0):
        raise ValueError(f"{attribute.name} must be > 0 or None, got {value!r}")
