"""Argument completion (``completion/complete``) for prompts and resource templates.

Two ways to register a completer (sync or async; a parameter annotated ``Context`` or
named ``ctx`` receives the context):

- for one argument: ``fn(value)`` or ``fn(value, arguments)``, where ``value`` is what the
  user typed so far and ``arguments`` the other arguments already resolved (a
  ``Mapping[str, str]``, empty when the client sent none);
- for every argument of one prompt or template: ``fn(argument, value)`` or
  ``fn(argument, value, arguments)``.

A completer returns strings (any iterable; at most 101 are read), a ``Completion``, or
None. The answer holds at most 100 values; ``total`` is the full count when known (a
sized collection, or the ``Completion``'s own), and ``hasMore`` says whether values were
left out. An argument typed ``Literal[...]``/``Enum`` with no completer completes from its
choices, by prefix. Errors: a reference to no prompt or template is ``-32602``; a failing
completer is logged and answered ``-32603``.
"""

from __future__ import annotations

import itertools
import logging
from collections.abc import Callable, Iterable, Mapping, Sized
from typing import TYPE_CHECKING, Any, Final, Literal, Protocol

from trimcp.errors import INTERNAL_ERROR, INVALID_PARAMS, McpError
from trimcp.server.context import Context
from trimcp.server.signature import FunctionInfo, call, inspect_function

if TYPE_CHECKING:
    from trimcp.types import CompleteRequestParams, Completion

logger = logging.getLogger("trimcp.server")

#: The spec's limit on values in one completion answer.
MAX_VALUES: Final = 100

RefKind = Literal["prompt", "template"]


class Choices(Protocol):
    """A prompt or template: knows the choices of its ``Literal``/``Enum`` arguments."""

    def choices(self, argument: str) -> list[str] | None: ...


class Completer:
    """One registered completion function."""

    def __init__(self, fn: Callable[..., Any], *, per_argument: bool) -> None:
        self.fn = fn
        self.info: FunctionInfo = inspect_function(fn, what="completer")
        self.per_argument = per_argument
        counts = (1, 2) if per_argument else (2, 3)
        if len(self.info.params) not in counts:
            shape = "(value[, arguments])" if per_argument else "(argument, value[, arguments])"
            raise TypeError(f"A completer takes {shape}, plus an optional Context")

    async def complete(
        self, argument: str, value: str, arguments: Mapping[str, str], ctx: Context
    ) -> Completion:
        positional: list[Any] = [value, arguments]
        if not self.per_argument:
            positional.insert(0, argument)
        kwargs = {p.name: v for p, v in zip(self.info.params, positional, strict=False)}
        if self.info.context_param is not None:
            kwargs[self.info.context_param] = ctx
        try:
            return completion_of(await call(self.info, kwargs))
        except McpError:
            raise
        except Exception:
            logger.exception("completer for %r failed", argument)
            raise McpError(INTERNAL_ERROR, f"Completion of {argument!r} failed") from None


def completion_of(result: Any) -> Completion:
    # the completion types are imported where used: a server that never completes never
    # loads them (a stdio server's cold start)
    from trimcp.types import CompleteResult, Completion

    """Cap what a completer returned at :data:`MAX_VALUES` values."""
    if result is None:
        return Completion(values=[])
    if isinstance(result, CompleteResult):
        result = result.completion
    if isinstance(result, Completion):
        values = result.values
        more = len(values) > MAX_VALUES
        return Completion(
            values=values[:MAX_VALUES],
            total=result.total,
            has_more=True if more else result.has_more,
        )
    if isinstance(result, str) or not isinstance(result, Iterable):
        raise TypeError(f"A completer returns strings, not {type(result).__name__}")
    total = len(result) if isinstance(result, Sized) else None
    values = list(itertools.islice(result, MAX_VALUES + 1))
    if not all(isinstance(v, str) for v in values):
        raise TypeError("A completer returns strings")
    more = len(values) > MAX_VALUES or (total is not None and total > MAX_VALUES)
    return Completion(values=values[:MAX_VALUES], total=total, has_more=more)


def prefix_matches(choices: Iterable[str], value: str) -> Completion:

    folded = value.casefold()
    return completion_of([c for c in choices if c.casefold().startswith(folded)])


class Completions:
    """Completers by (kind, prompt name or URI template, argument)."""

    def __init__(self) -> None:
        self._arguments: dict[tuple[RefKind, str, str], Completer] = {}
        self._refs: dict[tuple[RefKind, str], Completer] = {}
        #: Called after every addition (a server this one is mounted into mirrors them).
        self.listeners: list[Callable[[], None]] = []

    def __bool__(self) -> bool:
        return bool(self._arguments or self._refs)

    def add_argument(self, kind: RefKind, key: str, argument: str, fn: Callable[..., Any]) -> None:
        slot = (kind, key, argument)
        if slot in self._arguments:
            raise ValueError(f"A completer for {kind} {key!r} argument {argument!r} exists")
        self._arguments[slot] = Completer(fn, per_argument=True)
        self._changed()

    def add_ref(self, kind: RefKind, key: str, fn: Callable[..., Any]) -> None:
        if (kind, key) in self._refs:
            raise ValueError(f"A completer for {kind} {key!r} exists")
        self._refs[(kind, key)] = Completer(fn, per_argument=False)
        self._changed()

    def adopt(
        self,
        arguments: dict[tuple[RefKind, str, str], Completer],
        refs: dict[tuple[RefKind, str], Completer],
    ) -> None:
        """Take a mounted server's completers (already under this server's names)."""
        self._arguments.update(arguments)
        self._refs.update(refs)
        self._changed()

    def _changed(self) -> None:
        for listener in list(self.listeners):
            listener()

    def has_ref(self, kind: RefKind, key: str) -> bool:
        return (kind, key) in self._refs or any(
            k == kind and name == key for k, name, _ in self._arguments
        )

    def find(self, kind: RefKind, key: str, argument: str) -> Completer | None:
        return self._arguments.get((kind, key, argument)) or self._refs.get((kind, key))

    async def complete(
        self, params: CompleteRequestParams, target: Choices | None, ctx: Context
    ) -> Completion:
        """Answer ``completion/complete``; ``target`` is the prompt or template referred to
        (None when there is no such enabled one). Raises ``McpError(-32602)`` when neither
        it nor a completer for the reference exists.
        """
        from trimcp.types import Completion, PromptReference

        ref, argument = params.ref, params.argument
        kind: RefKind
        if isinstance(ref, PromptReference):
            kind, key = "prompt", ref.name
        else:
            kind, key = "template", ref.uri
        if target is None and not self.has_ref(kind, key):
            raise McpError(INVALID_PARAMS, f"Unknown {kind}: {key[:200]}", {kind: key})
        completer = self.find(kind, key, argument.name)
        if completer is not None:
            arguments = (params.context.arguments if params.context else None) or {}
            return await completer.complete(argument.name, argument.value, arguments, ctx)
        choices = target.choices(argument.name) if target is not None else None
        return prefix_matches(choices, argument.value) if choices else Completion(values=[])
