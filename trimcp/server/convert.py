"""JSON values <-> the Python types a tool declares.

:func:`converter_for` compiles a type annotation into a function that checks a JSON value
against exactly the schema :mod:`trimcp.server.schema` generates for that type and turns
it into the declared Python value (attrs class, dataclass, TypedDict, enum member, tuple,
set...). Checking is strict, as the schema is: ``"5"`` is not an integer, ``true`` is not
a number, a missing required field is an error; unknown object keys are ignored.

:func:`to_json` goes the other way for tool results: attrs classes, dataclasses, enums,
tuples and sets become plain JSON data.
"""

from __future__ import annotations

import dataclasses
import enum
import functools
import re
import types
import typing
from collections.abc import Callable, Iterable, Mapping, Sequence, Set
from typing import Any, Final, Literal, get_args, get_origin

import attrs

from trimcp.server.typeforms import Meta, is_enum, is_object_class, object_fields, unwrap

Convert = Callable[[Any], Any]

#: Nesting deeper than this in :func:`to_json` is refused (a cycle, or a hostile value).
MAX_DEPTH: Final = 200

_KINDS: Final = {
    dict: "object",
    list: "array",
    str: "string",
    bool: "boolean",
    int: "integer",
    float: "number",
    type(None): "null",
}


class ValidationError(ValueError):
    """A value does not fit the declared type. ``path`` locates it (``"items[2].name"``)."""

    def __init__(self, reason: str, path: tuple[str | int, ...] = ()) -> None:
        self.reason = reason
        self.parts = path
        super().__init__(f"{self.path}: {reason}" if path else reason)

    @property
    def path(self) -> str:
        return format_path(self.parts)

    def at(self, part: str | int) -> ValidationError:
        """This error, one level further down (callers add their own path part)."""
        return ValidationError(self.reason, (part, *self.parts))


def format_path(parts: Iterable[str | int]) -> str:
    out = ""
    for part in parts:
        if isinstance(part, int):
            out += f"[{part}]"
        elif re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", part):
            out += f".{part}" if out else part
        else:
            out += f"[{part[:40]!r}]"
    return out


def kind(value: Any) -> str:
    """The JSON kind of a value, for messages (never its repr: it may be huge)."""
    return _KINDS.get(type(value), type(value).__name__)


def converter_for(tp: Any) -> Convert:
    """Compile ``tp`` into ``convert(json_value) -> python_value``.

    ``convert`` raises :class:`ValidationError` (and nothing else) for a bad value.
    Raises ``TypeError`` here for an annotation the framework cannot handle.
    """
    return _Compiler().compile(tp)


class _Compiler:
    def __init__(self) -> None:
        # Object classes under construction, so recursive types compile to a loop.
        self._objects: dict[type, Convert] = {}

    def compile(self, tp: Any) -> Convert:
        base, meta = unwrap(tp)
        convert = self._compile_base(base)
        checks = _constraint_checks(meta)
        if not checks:
            return convert

        def constrained(value: Any) -> Any:
            result = convert(value)
            for check in checks:
                check(result)
            return result

        return constrained

    def _compile_base(self, tp: Any) -> Convert:
        if tp is Any or tp is object:
            return _identity
        if tp is None or tp is type(None):
            return _none
        if tp in _SCALARS:
            return _SCALARS[tp]
        origin = get_origin(tp)
        if origin is Literal:
            return _literal(get_args(tp))
        if origin is typing.Union or origin is types.UnionType:
            return self._union(get_args(tp))
        if is_enum(tp):
            return _enum(tp)
        if is_object_class(tp):
            return self._object(tp)
        if tp in (list, tuple, set, frozenset, dict) or origin in _CONTAINERS:
            return self._container(tp, origin or tp)
        raise TypeError(f"Unsupported type for a tool argument or result: {tp!r}")

    def _union(self, members: tuple[Any, ...]) -> Convert:
        converts = [self.compile(member) for member in members]
        names = " or ".join(sorted({_describe(unwrap(m)[0]) for m in members}))

        def convert_union(value: Any) -> Any:
            first: ValidationError | None = None
            for convert in converts:
                try:
                    return convert(value)
                except ValidationError as exc:
                    first = first or exc
            # One member failing deep inside an object says more than "expected A or B".
            if first is not None and first.parts and type(value) is dict:
                raise first
            raise ValidationError(f"expected {names}, got {kind(value)}")

        return convert_union

    def _container(self, tp: Any, origin: Any) -> Convert:
        args = get_args(tp)
        if origin in (dict, Mapping, typing.Mapping) or origin is dict:
            key, value = args if args else (str, Any)
            if unwrap(key)[0] is not str:
                raise TypeError(f"Object keys must be strings: {tp!r}")
            return _mapping(self.compile(value))
        if origin is tuple and args and not (len(args) == 2 and args[1] is Ellipsis):
            if args == ((),):  # tuple[()]
                return _fixed_tuple([])
            return _fixed_tuple([self.compile(arg) for arg in args])
        item = self.compile(args[0]) if args else _identity
        if origin in (set, frozenset, Set, typing.AbstractSet):
            return _set(item, frozenset if origin is frozenset else set)
        return _sequence(item, tuple if origin is tuple else list)

    def _object(self, cls: type) -> Convert:
        known = self._objects.get(cls)
        if known is not None:
            return known
        slot: list[Convert] = []

        def deferred(value: Any) -> Any:
            return slot[0](value)

        self._objects[cls] = deferred
        fields = [
            (field.name, field.init_name, field.required, self.compile(field.type))
            for field in object_fields(cls)
        ]
        build: Callable[..., Any] = dict if typing.is_typeddict(cls) else cls

        def convert_object(value: Any) -> Any:
            if type(value) is not dict:
                raise ValidationError(f"expected an object, got {kind(value)}")
            kwargs: dict[str, Any] = {}
            for name, init_name, required, convert in fields:
                if name in value:
                    try:
                        kwargs[init_name] = convert(value[name])
                    except ValidationError as exc:
                        raise exc.at(name) from None
                elif required:
                    raise ValidationError("required property missing", (name,))
            try:
                return build(**kwargs)
            except (TypeError, ValueError) as exc:
                # A validator or __post_init__ of the user's class refused the value.
                raise ValidationError(f"invalid {cls.__name__}: {exc}") from None

        slot.append(convert_object)
        return convert_object


def _identity(value: Any) -> Any:
    return value


def _none(value: Any) -> None:
    if value is not None:
        raise ValidationError(f"expected null, got {kind(value)}")


def _str(value: Any) -> str:
    if type(value) is str:
        return value
    raise ValidationError(f"expected a string, got {kind(value)}")


def _int(value: Any) -> int:
    if type(value) is int:
        return value
    # JSON has one number type; 3.0 is an integer to JSON Schema.
    if type(value) is float and value.is_integer():
        return int(value)
    raise ValidationError(f"expected an integer, got {kind(value)}")


def _float(value: Any) -> float:
    if type(value) is float:
        return value
    if type(value) is int:
        return float(value)
    raise ValidationError(f"expected a number, got {kind(value)}")


def _bool(value: Any) -> bool:
    if value is True or value is False:
        return value
    raise ValidationError(f"expected a boolean, got {kind(value)}")


_SCALARS: Final[dict[Any, Convert]] = {str: _str, int: _int, float: _float, bool: _bool}

_CONTAINERS: Final = frozenset(
    {
        list,
        tuple,
        set,
        frozenset,
        dict,
        Sequence,
        typing.Sequence,
        Mapping,
        typing.Mapping,
        Set,
        typing.AbstractSet,
        typing.List,  # noqa: UP006
        typing.Dict,  # noqa: UP006
    }
)


def _is_number(value: Any) -> bool:
    return type(value) is int or type(value) is float


def _same_json(a: Any, b: Any) -> bool:
    # JSON equality: 2 and 2.0 are the same number, but true is not 1.
    if _is_number(a) and _is_number(b):
        return bool(a == b)
    return type(a) is type(b) and a == b


def _literal(allowed: tuple[Any, ...]) -> Convert:
    shown = ", ".join(repr(a) for a in allowed)

    def convert_literal(value: Any) -> Any:
        for option in allowed:
            if _same_json(option, value):
                return option
        raise ValidationError(f"expected one of {shown}, got {_show(value)}")

    return convert_literal


def _enum(cls: type[enum.Enum]) -> Convert:
    members = list(cls)
    shown = ", ".join(repr(m.value) for m in members)

    def convert_enum(value: Any) -> Any:
        for member in members:
            if _same_json(member.value, value):
                return member
        raise ValidationError(f"expected one of {shown}, got {_show(value)}")

    return convert_enum


def _show(value: Any) -> str:
    if type(value) in (str, int, float, bool) and len(str(value)) <= 40:
        return repr(value)
    return kind(value)


def _mapping(item: Convert) -> Convert:
    def convert_mapping(value: Any) -> dict[str, Any]:
        if type(value) is not dict:
            raise ValidationError(f"expected an object, got {kind(value)}")
        out = {}
        for key, entry in value.items():
            try:
                out[key] = item(entry)
            except ValidationError as exc:
                raise exc.at(key) from None
        return out

    return convert_mapping


def _items(value: Any, item: Convert) -> list[Any]:
    if type(value) is not list:
        raise ValidationError(f"expected an array, got {kind(value)}")
    out = []
    for index, entry in enumerate(value):
        try:
            out.append(item(entry))
        except ValidationError as exc:
            raise exc.at(index) from None
    return out


def _sequence(item: Convert, build: type) -> Convert:
    if build is list:
        return lambda value: _items(value, item)
    return lambda value: build(_items(value, item))


def _set(item: Convert, build: type) -> Convert:
    def convert_set(value: Any) -> Any:
        items = _items(value, item)
        try:
            result = build(items)
        except TypeError:
            raise ValidationError("array items must be hashable here") from None
        if len(result) != len(items):
            raise ValidationError("array items must be unique")
        return result

    return convert_set


def _fixed_tuple(items: list[Convert]) -> Convert:
    def convert_tuple(value: Any) -> tuple[Any, ...]:
        if type(value) is not list:
            raise ValidationError(f"expected an array, got {kind(value)}")
        if len(value) != len(items):
            raise ValidationError(f"expected an array of {len(items)} items, got {len(value)}")
        out = []
        for index, (entry, convert) in enumerate(zip(value, items, strict=True)):
            try:
                out.append(convert(entry))
            except ValidationError as exc:
                raise exc.at(index) from None
        return tuple(out)

    return convert_tuple


def _describe(tp: Any) -> str:
    if tp is type(None) or tp is None:
        return "null"
    if tp is str:
        return "a string"
    if tp is int:
        return "an integer"
    if tp is float:
        return "a number"
    if tp is bool:
        return "a boolean"
    origin = get_origin(tp)
    if origin is Literal:
        return "one of " + ", ".join(repr(a) for a in get_args(tp))
    if is_object_class(tp) or origin in (dict, Mapping) or tp is dict:
        return "an object"
    if origin in _CONTAINERS or tp in (list, tuple, set, frozenset):
        return "an array"
    return getattr(tp, "__name__", repr(tp))


def _constraint_checks(meta: Meta) -> list[Callable[[Any], None]]:
    checks: list[Callable[[Any], None]] = []
    for name, limit in meta.constraints:
        checks.append(_CHECKS[name](limit))
    return checks


def _number_check(test: Callable[[float, float], bool], words: str) -> Callable[[Any], Any]:
    def factory(limit: Any) -> Callable[[Any], None]:
        def check(value: Any) -> None:
            is_number = isinstance(value, int | float) and not isinstance(value, bool)
            if is_number and not test(value, limit):
                raise ValidationError(f"must be {words} {limit}")

        return check

    return factory


def _length_check(minimum: bool) -> Callable[[Any], Any]:
    def factory(limit: Any) -> Callable[[Any], None]:
        def check(value: Any) -> None:
            if isinstance(value, str | list | tuple | set | frozenset | dict):
                size = len(value)
                unit = "characters" if isinstance(value, str) else "items"
                if minimum and size < limit:
                    raise ValidationError(f"must have at least {limit} {unit}")
                if not minimum and size > limit:
                    raise ValidationError(f"must have at most {limit} {unit}")

        return check

    return factory


def _pattern_check(pattern: Any) -> Callable[[Any], None]:
    compiled = re.compile(pattern)

    def check(value: Any) -> None:
        if isinstance(value, str) and compiled.search(value) is None:
            raise ValidationError(f"must match the pattern {pattern!r}")

    return check


_CHECKS: Final[dict[str, Callable[[Any], Callable[[Any], None]]]] = {
    "ge": _number_check(lambda v, lim: v >= lim, "at least"),
    "gt": _number_check(lambda v, lim: v > lim, "greater than"),
    "le": _number_check(lambda v, lim: v <= lim, "at most"),
    "lt": _number_check(lambda v, lim: v < lim, "less than"),
    "min_length": _length_check(minimum=True),
    "max_length": _length_check(minimum=False),
    "pattern": _pattern_check,
}


# --- Python -> JSON ------------------------------------------------------------------------


def to_json(value: Any) -> Any:
    """Plain JSON data for a tool's return value or a schema default.

    attrs classes and dataclasses become objects (field names as keys), enums their value,
    tuples and sets arrays. Raises ``TypeError`` for anything else that is not JSON (and
    for nesting deeper than :data:`MAX_DEPTH`, which also catches cycles).
    """
    return _to_json(value, 0)


@functools.lru_cache(maxsize=1024)
def _field_names(cls: type) -> tuple[str, ...] | None:
    """The fields of an attrs class or dataclass (None for anything else), cached."""
    if attrs.has(cls):
        return tuple(field.name for field in attrs.fields(cls))
    if dataclasses.is_dataclass(cls):
        return tuple(field.name for field in dataclasses.fields(cls))
    return None


def _to_json(value: Any, depth: int) -> Any:
    if depth > MAX_DEPTH:
        raise TypeError("value nested too deeply (or cyclic) to turn into JSON")
    kind_: type = type(value)
    # Exact types first: the common case, and cheaper than isinstance against ABCs.
    if value is None or kind_ is str or kind_ is int or kind_ is bool:
        return value
    if kind_ is float:
        if value != value or value in (float("inf"), float("-inf")):
            raise TypeError("NaN and infinity are not JSON numbers")
        return value
    if kind_ is dict:
        return _mapping_to_json(value, depth)
    if kind_ is list or kind_ is tuple:
        return [_to_json(entry, depth + 1) for entry in value]
    names = _field_names(kind_)
    if names is not None:
        return {name: _to_json(getattr(value, name), depth + 1) for name in names}
    if isinstance(value, enum.Enum):
        return _to_json(value.value, depth + 1)
    if isinstance(value, Mapping):
        return _mapping_to_json(value, depth)
    if isinstance(value, list | tuple | set | frozenset):
        return [_to_json(entry, depth + 1) for entry in value]
    # Subclasses of the JSON scalars (IntFlag members, str subclasses...).
    if isinstance(value, bool):
        return bool(value)
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return _to_json(float(value), depth + 1)
    if isinstance(value, str):
        return str(value)
    raise TypeError(f"{kind_.__name__} cannot be turned into JSON")


def _mapping_to_json(value: Mapping[Any, Any], depth: int) -> dict[str, Any]:
    out = {}
    for key, entry in value.items():
        if not isinstance(key, str):
            raise TypeError(f"JSON object keys must be strings, not {type(key).__name__}")
        out[str(key)] = _to_json(entry, depth + 1)
    return out
