"""Converting string arguments to declared types: prompt arguments and URI template values.

Prompt arguments and URI template variables arrive as strings (an exploded template
variable ``{/path*}`` as a list of strings). A parameter may declare ``str``, ``int``,
``float``, ``bool`` (``true``/``false``), a ``Literal`` or ``Enum`` of strings,
``list[str]`` (template variables only), or an optional one of these.
"""

from __future__ import annotations

import math
import re
import types
import typing
from collections.abc import Callable
from typing import Any, Final, Literal, get_args, get_origin

from trimcp.server.convert import ValidationError
from trimcp.server.typeforms import is_enum, unwrap

TextConvert = Callable[[Any], Any]

_INT: Final = re.compile(r"[+-]?\d{1,64}")
_FLOAT_MAX_CHARS: Final = 100


def text_converter(tp: Any, *, allow_list: bool = True) -> TextConvert:
    """Compile ``tp`` into ``convert(str_or_list) -> value``; raises ``TypeError`` when the
    type cannot come from a string (``list[str]`` only with ``allow_list``: an exploded
    template variable is a list, a prompt argument never is). ``convert`` raises
    :class:`ValidationError`.
    """
    base, _ = unwrap(tp)
    if base is Any or base is str:
        return _text
    if get_origin(base) in (typing.Union, types.UnionType):
        members = [m for m in get_args(base) if m is not type(None)]
        if len(members) == 1:
            return text_converter(members[0], allow_list=allow_list)
        raise TypeError(f"A string argument cannot be a union: {tp!r}")
    if base is int:
        return _int
    if base is float:
        return _float
    if base is bool:
        return _bool
    if get_origin(base) is Literal or is_enum(base):
        return _choice(base)
    is_list = get_origin(base) is list and unwrap(get_args(base)[0])[0] is str
    if is_list and allow_list:
        return _list
    if is_list:
        raise TypeError(
            f"{tp!r} cannot be a prompt argument: each one arrives as a single string; take "
            "a str (and split it yourself) or use a tool for a list"
        )
    kinds = "str, int, float, bool, a Literal or Enum of strings" + (
        ", or list[str]" if allow_list else ""
    )
    raise TypeError(f"Cannot take {tp!r} from a string; use {kinds}")


def _text(value: Any) -> Any:
    if isinstance(value, list):
        return ",".join(value)
    return value


def _list(value: Any) -> list[str]:
    return value if isinstance(value, list) else [value]


def _int(value: Any) -> int:
    text = _text(value).strip()
    if not _INT.fullmatch(text):
        raise ValidationError(f"expected an integer, got {_show(text)}")
    return int(text)


def _float(value: Any) -> float:
    text = _text(value).strip()
    try:
        if len(text) > _FLOAT_MAX_CHARS:
            raise ValueError
        number = float(text)
    except ValueError:
        raise ValidationError(f"expected a number, got {_show(text)}") from None
    if not math.isfinite(number):
        raise ValidationError(f"expected a finite number, got {_show(text)}")
    return number


def _bool(value: Any) -> bool:
    text = _text(value).strip().lower()
    if text == "true":
        return True
    if text == "false":
        return False
    raise ValidationError(f"expected true or false, got {_show(text)}")


def _choice(tp: Any) -> TextConvert:
    if is_enum(tp):
        table = {str(member.value): member for member in tp}
    else:
        table = {str(value): value for value in get_args(tp)}
    shown = ", ".join(repr(key) for key in table)

    def convert(value: Any) -> Any:
        text = _text(value)
        if text in table:
            return table[text]
        raise ValidationError(f"expected one of {shown}, got {_show(text)}")

    return convert


def _show(text: str) -> str:
    return repr(text) if len(text) <= 40 else f"a string of {len(text)} characters"


def choices_of(annotation: Any) -> list[str] | None:
    """The values a ``Literal``/``Enum`` annotation (optional or not) allows, else None."""
    base, _ = unwrap(annotation)
    if get_origin(base) in (typing.Union, types.UnionType):
        members = [m for m in get_args(base) if m is not type(None)]
        if len(members) != 1:
            return None
        base, _ = unwrap(members[0])
    if is_enum(base):
        return [str(member.value) for member in base]
    if get_origin(base) is Literal:
        return [str(value) for value in get_args(base)]
    return None
