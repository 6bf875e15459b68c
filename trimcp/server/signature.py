"""Reading a user function once, at registration: its parameters, docs and return type.

Tools, prompts, resource templates and completers are plain functions. This module finds,
once per function, which parameter receives the :class:`~trimcp.server.context.Context`
(annotated ``Context``, or named ``ctx``), what the other parameters are (type, default,
description from ``Annotated`` or the docstring), and builds the input schema and the
argument binder that validates and converts what a client sends.
"""

from __future__ import annotations

import inspect
import types
import typing
from collections.abc import Callable, Mapping
from typing import Any, get_args, get_origin

import attrs

from trimcp._record import Record
from trimcp.server.context import Context
from trimcp.server.convert import Convert, ValidationError, converter_for
from trimcp.server.docstrings import parse_docstring
from trimcp.server.schema import SchemaBuilder, add_default
from trimcp.server.typeforms import MISSING, type_hints, unwrap

CONTEXT_NAME = "ctx"


@attrs.frozen(repr=False, eq=False)
class Param(Record):
    """One parameter a client fills in (the context parameter is not one)."""

    name: str
    annotation: Any
    default: Any
    description: str | None

    @property
    def required(self) -> bool:
        return self.default is MISSING


@attrs.frozen(repr=False, eq=False)
class FunctionInfo(Record):
    """What registration learned about a function."""

    fn: Callable[..., Any]
    name: str
    summary: str | None
    params: tuple[Param, ...]
    context_param: str | None
    return_annotation: Any  # MISSING when the function has none
    is_async: bool


def is_context_type(annotation: Any) -> bool:
    """``Context``, a subclass, or an optional one."""
    base, _ = unwrap(annotation)
    if get_origin(base) in (typing.Union, types.UnionType):
        members = [m for m in get_args(base) if m is not type(None)]
        if len(members) != 1:
            return False
        base, _ = unwrap(members[0])
    return isinstance(base, type) and issubclass(base, Context)


def inspect_function(fn: Callable[..., Any], *, what: str = "function") -> FunctionInfo:
    """Read ``fn``'s signature. Raises ``TypeError`` for what a client cannot call:
    ``*args``/``**kwargs``, positional-only parameters, unresolvable annotations, a class
    or a generator function (each message names the function and, when one is at fault,
    the parameter).
    """
    if not callable(fn):
        raise TypeError(f"A {what} must be a function, not {fn!r}")
    _check_kind(fn, what)
    signature = inspect.signature(fn)
    target = fn if inspect.isfunction(fn) or inspect.ismethod(fn) else type(fn).__call__
    try:
        hints = type_hints(target)
    except TypeError as exc:
        raise TypeError(
            f"{what.capitalize()} {_name(fn)!r}{_unresolved(fn, exc)}: {exc}"
        ) from exc.__cause__
    docs = parse_docstring(inspect.getdoc(fn))
    params: list[Param] = []
    context_param: str | None = None
    for parameter in signature.parameters.values():
        name = parameter.name
        annotation = hints.get(name, Any)
        if parameter.kind in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD):
            raise TypeError(f"{_label(fn)}: a {what} cannot take *args or **kwargs ({name})")
        if parameter.kind is parameter.POSITIONAL_ONLY:
            raise TypeError(f"{_label(fn)}: positional-only parameter {name!r} is not supported")
        if is_context_type(annotation) or (name == CONTEXT_NAME and name not in hints):
            context_param = name
            continue
        default = MISSING if parameter.default is parameter.empty else parameter.default
        _, meta = unwrap(annotation)
        params.append(Param(name, annotation, default, meta.description or docs.params.get(name)))
    returns = hints.get("return", MISSING)
    is_async = inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(
        getattr(fn, "__call__", None)  # noqa: B004 - async callable objects
    )
    return FunctionInfo(
        fn=fn,
        name=getattr(fn, "__name__", type(fn).__name__),
        summary=docs.summary,
        params=tuple(params),
        context_param=context_param,
        return_annotation=returns,
        is_async=is_async,
    )


def _label(fn: Callable[..., Any]) -> str:
    return getattr(fn, "__qualname__", repr(fn))


def _name(fn: Callable[..., Any]) -> str:
    return str(getattr(fn, "__name__", type(fn).__name__))


def _check_kind(fn: Callable[..., Any], what: str) -> None:
    """Refuse at registration what would only fail when a client calls it."""
    label = _name(fn)
    if inspect.isclass(fn):
        raise TypeError(
            f"{what.capitalize()} {label!r} is a class; register a function (or an instance "
            "of a class with a __call__ method) instead"
        )
    call_method = getattr(fn, "__call__", None)  # noqa: B004 - callable objects
    for candidate in (fn, call_method):
        if inspect.isasyncgenfunction(candidate) or inspect.isgeneratorfunction(candidate):
            raise TypeError(
                f"{what.capitalize()} {label!r} is a generator function (it uses yield); a "
                f"{what} returns its result once: collect the items in a list and return it"
            )


def _unresolved(fn: Callable[..., Any], exc: TypeError) -> str:
    """``, parameter 'x'`` for the parameter whose annotation names what failed to resolve."""
    cause = exc.__cause__
    missing = getattr(cause, "name", None) if isinstance(cause, NameError) else None
    if not missing:
        return ""
    raw = getattr(fn, "__annotations__", None) or {}
    for name, annotation in raw.items():
        text = annotation if isinstance(annotation, str) else repr(annotation)
        if missing in text:
            return ", return type" if name == "return" else f", parameter {name!r}"
    return ""


def param_error(label: str, param: str, exc: TypeError) -> TypeError:
    """The registration error for a parameter whose type cannot be used."""
    return TypeError(f"{label}, parameter {param!r}: {exc}")


class ArgumentBinder:
    """Validates a client's arguments against the input schema and converts them.

    Built once per tool; :meth:`bind` is the per-call work.
    """

    def __init__(self, info: FunctionInfo, label: str | None = None) -> None:
        label = label or f"Function {info.name!r}"
        builder = SchemaBuilder()
        properties: dict[str, Any] = {}
        required: list[str] = []
        converters: list[tuple[str, bool, Convert]] = []
        for param in info.params:
            try:
                prop = builder.schema(param.annotation)
                convert = converter_for(param.annotation)
            except TypeError as exc:
                raise param_error(label, param.name, exc) from None
            if param.description and "description" not in prop:
                prop["description"] = param.description
            add_default(prop, param.default)
            properties[param.name] = prop
            if param.required:
                required.append(param.name)
            converters.append((param.name, param.required, convert))
        schema: dict[str, Any] = {"type": "object", "properties": properties}
        if required:
            schema["required"] = required
        self.schema = builder.root(schema)
        self._converters = converters
        self._context_param = info.context_param

    def bind(self, arguments: Mapping[str, Any] | None, context: Context | None) -> dict[str, Any]:
        """Keyword arguments for the function. Raises :class:`ValidationError` naming the
        first bad argument; arguments the function does not take are ignored.
        """
        arguments = arguments or {}
        kwargs: dict[str, Any] = {}
        for name, required, convert in self._converters:
            if name in arguments:
                try:
                    kwargs[name] = convert(arguments[name])
                except ValidationError as exc:
                    raise exc.at(name) from None
            elif required:
                raise ValidationError("required argument missing", (name,))
        if self._context_param is not None:
            kwargs[self._context_param] = context
        return kwargs


async def call(info: FunctionInfo, kwargs: dict[str, Any]) -> Any:
    """Call the function; await it if it is async (or returns an awaitable).

    A sync function runs inline in the Trio thread: it blocks the whole process while it
    runs and cannot be cancelled part-way (see ``run_sync_in_thread``).
    """
    result = info.fn(**kwargs)
    if inspect.isawaitable(result):
        result = await result
    return result
