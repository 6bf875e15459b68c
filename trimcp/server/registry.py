"""An ordered, mutable table of registered things (tools, prompts, resources, templates).

Adding, removing, enabling or disabling an entry calls ``on_change`` with the table's kind,
which the server turns into a ``notifications/<kind>/list_changed`` for every initialized
session. Mutations are plain synchronous calls: they work at import time (no sessions yet)
and from inside handlers alike.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any, Generic, ParamSpec, TypeVar

from trimcp.server.hints import CacheHint

H = TypeVar("H", bound="Handle")
P = ParamSpec("P")
R = TypeVar("R")


class Handle:
    """A registered entry: enable, disable or remove it at runtime.

    A disabled entry is left out of list results and is unknown to calls/reads/gets, as if
    it had been removed, but keeps its place and can come back with :meth:`enable`.

    ``tags``: labels that transforms select by (``Hide(tags=...)``; never sent to clients).
    ``cache_hint``: how long 2026-07-28 clients may cache list pages naming it (and its
    reads, for a resource); None: the server's defaults.
    """

    _registry: Registry[Any] | None = None
    key: str = ""
    enabled: bool = True
    tags: frozenset[str] = frozenset()
    cache_hint: CacheHint | None = None

    def _attach(self, registry: Registry[Any], key: str) -> None:
        self._registry = registry
        self.key = key
        self.enabled = True

    def enable(self) -> None:
        """Make the entry visible again (notifies sessions when it was disabled)."""
        if not self.enabled:
            self.enabled = True
            self._changed()

    def disable(self) -> None:
        """Hide the entry from clients (notifies sessions when it was enabled)."""
        if self.enabled:
            self.enabled = False
            self._changed()

    def remove(self) -> None:
        """Unregister the entry for good (notifies sessions)."""
        if self._registry is not None:
            self._registry.remove(self.key)

    def _changed(self) -> None:
        if self._registry is not None:
            self._registry.changed()


class FunctionHandle(Handle, Generic[P, R]):
    """A registered function; calling the handle calls the function (handy in tests)."""

    fn: Callable[P, R]

    def __call__(self, *args: P.args, **kwargs: P.kwargs) -> R:
        return self.fn(*args, **kwargs)


class Registry(Generic[H]):
    """Entries by key, in registration order."""

    def __init__(self, kind: str, on_change: Callable[[str], None]) -> None:
        self.kind = kind
        self._on_change = on_change
        self._items: dict[str, H] = {}

    def add(self, key: str, handle: H) -> H:
        """Register ``handle`` under ``key``; ``ValueError`` if the key is taken."""
        if key in self._items:
            raise ValueError(f"A {self.kind[:-1]} named {key!r} is already registered")
        handle._attach(self, key)
        self._items[key] = handle
        self.changed()
        return handle

    def remove(self, key: str) -> H:
        """Unregister and return the entry; ``KeyError`` if there is none."""
        try:
            handle = self._items.pop(key)
        except KeyError:
            raise KeyError(f"No {self.kind[:-1]} named {key!r}") from None
        handle._registry = None
        self.changed()
        return handle

    def get(self, key: str) -> H | None:
        """The enabled entry under ``key``, or None."""
        handle = self._items.get(key)
        return handle if handle is not None and handle.enabled else None

    def entry(self, key: str) -> H | None:
        """The entry under ``key``, enabled or not."""
        return self._items.get(key)

    def enabled(self) -> list[H]:
        return [handle for handle in self._items.values() if handle.enabled]

    def __iter__(self) -> Iterator[H]:
        return iter(list(self._items.values()))

    def __len__(self) -> int:
        return len(self._items)

    def __contains__(self, key: object) -> bool:
        return key in self._items

    def changed(self) -> None:
        self._on_change(self.kind)


def label(handle: H, cache: CacheHint | None, tags: Iterable[str] | None) -> H:
    """``handle`` with its cache hint and tags (checked: a wrong type raises here, before
    the handle is registered)."""
    if cache is not None:
        if not isinstance(cache, CacheHint):
            raise TypeError(f"cache must be a CacheHint, not {cache!r}")
        handle.cache_hint = cache
    if tags is not None:
        if isinstance(tags, str) or not all(isinstance(tag, str) for tag in tags):
            raise TypeError(f"tags must be a collection of str (e.g. {{'admin'}}), not {tags!r}")
        handle.tags = frozenset(tags)
    return handle


def check_name(what: str, name: object) -> None:
    """``@app.tool(...)``/``@app.prompt(...)`` take a name (str) or nothing before keywords."""
    if name is not None and not isinstance(name, str):
        raise TypeError(
            f"@app.{what}() takes the {what}'s name as a str (or no argument), got {name!r}; "
            f'decorate with @app.{what} or @app.{what}("name")'
        )
