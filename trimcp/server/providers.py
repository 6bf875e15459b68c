"""Where a server's components come from: providers, and the catalog that merges them.

    app = Server("shop")
    app.add_provider(OpenApiProvider.from_file("shop.json"), transforms=[Namespace("shop")])
    app.add_transform(ToolSearch())

A :class:`Provider` hands the server its tools, prompts, resources and resource templates.
The server's own decorated functions are the first provider (:class:`LocalProvider`);
:meth:`Server.add_provider <trimcp.server.app.Server.add_provider>` adds more, each
optionally behind its own transforms (:mod:`trimcp.server.transforms`), and
:meth:`Server.add_transform <trimcp.server.app.Server.add_transform>` shapes what all of
them serve together. What clients see is the same whichever provider a component comes
from:

- **Listing and pagination**: a provider returns its whole current list
  (:meth:`Provider.components`); the server cuts pages out of the merged, transformed list
  with its keyed cursors (:mod:`trimcp.protocol.pagination`), so items added or removed
  between pages are never repeated or skipped.
- **Lookup** by name (tools, prompts), URI (resources) or URI template
  (:meth:`Provider.component`); when two providers serve the same key, the first added
  wins, in lists and lookups alike.
- **Changes**: a provider calls :meth:`Provider.changed` when its list changed; sessions
  of the 2025 era get ``notifications/<kind>/list_changed``, 2026-07-28 ``subscriptions/
  listen`` streams hear it, and the capabilities a 2026 request carries are rebuilt.
- **Scopes** (``ProtectedResource`` tool/prompt/resource scopes), ``hide_unauthorized``
  and **cache hints** (a component's ``cache_hint``) apply to the name the client sees.

Providers and transforms are synchronous and pure: listing and lookup run in the
request's task without awaiting, so they cannot be cancelled half-way. A provider that
needs I/O to learn its catalog does it in :meth:`Provider.lifespan`, entered with the
server's lifespan, and calls :meth:`Provider.changed` when the catalog moves.

An empty transform chain with only the decorated components costs nothing: the server
then reads its registries directly (:attr:`Catalog.plain`).
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from typing import TYPE_CHECKING, Any, Final, Literal, Protocol

if TYPE_CHECKING:
    from trimcp.server.context import Context
    from trimcp.server.hints import CacheHint
    from trimcp.server.registry import Registry
    from trimcp.server.tools import TaskStart
    from trimcp.server.transforms import Transform
    from trimcp.session.context import RequestContext
    from trimcp.types import GetPromptResult, Prompt, Tool

#: The four kinds of component, as the registries name them.
Kind = Literal["tools", "prompts", "resources", "templates"]
KINDS: Final[tuple[Kind, ...]] = ("tools", "prompts", "resources", "templates")

#: What a provider's change signal calls: the kind whose list changed.
ChangeListener = Callable[[Kind], None]


class ToolComponent(Protocol):
    """A tool as the server lists and calls it (``RegisteredTool``, ``SchemaTool``, a
    transform's view of one). ``run`` runs in the request's task and cancel scope."""

    @property
    def name(self) -> str: ...
    @property
    def task_start(self) -> TaskStart: ...
    @property
    def tags(self) -> frozenset[str]: ...
    @property
    def cache_hint(self) -> CacheHint | None: ...
    def definition(self, version: str | None = None) -> Tool: ...
    async def run(self, arguments: Mapping[str, Any] | None, ctx: Context) -> Any: ...


class PromptComponent(Protocol):
    """A prompt as the server lists and renders it (``RegisteredPrompt`` or a view)."""

    @property
    def name(self) -> str: ...
    @property
    def tags(self) -> frozenset[str]: ...
    @property
    def cache_hint(self) -> CacheHint | None: ...
    def definition(self) -> Prompt: ...
    async def get(self, arguments: Mapping[str, str] | None, ctx: Context) -> GetPromptResult: ...


def key_of(kind: Kind, item: Any) -> str:
    """The key ``item`` is looked up by: a tool's or prompt's name, a resource's URI, a
    template's URI template."""
    if kind == "resources":
        return str(item.uri)
    if kind == "templates":
        return str(item.uri_template)
    return str(item.name)


class Provider:
    """A source of components. Subclass it and override :meth:`components` (and
    :meth:`component` when a lookup can be faster than a scan).

    Tools are :class:`ToolComponent` objects (e.g. :class:`~trimcp.server.tools.SchemaTool`
    or ``RegisteredTool``), prompts :class:`PromptComponent` objects, resources and
    templates ``RegisteredResource``/``RegisteredTemplate`` objects. A provider may be
    served by several servers; it must not return disabled items.
    """

    _listeners: list[ChangeListener] | None = None

    def components(self, kind: Kind) -> Sequence[Any]:
        """Every component of ``kind`` this provider serves now, in listing order (none
        by default). Called on every list request: return a list kept ready, not one
        rebuilt each time."""
        return ()

    def component(self, kind: Kind, key: str) -> Any | None:
        """The component of ``kind`` under ``key`` (see :func:`key_of`), or None. The
        default scans :meth:`components`."""
        for item in self.components(kind):
            if key_of(kind, item) == key:
                return item
        return None

    def watch(self, listener: ChangeListener) -> None:
        """Call ``listener(kind)`` whenever this provider's ``kind`` list changes (the
        serving server does this in ``add_provider``)."""
        if self._listeners is None:
            self._listeners = []
        self._listeners.append(listener)

    def changed(self, kind: Kind) -> None:
        """Tell the servers serving this provider that its ``kind`` list changed
        (synchronous, from the Trio thread)."""
        for listener in self._listeners or ():
            listener(kind)

    def lifespan(self) -> AbstractAsyncContextManager[None]:
        """What to open while the serving server's lifespan runs (nothing by default):
        connections, a catalog fetched over the network. Entered once per serving
        loop, with the server's own lifespan; a failure stops the server from serving
        (``LifespanFailed``). Cancellation: entered and exited in the lifespan's task."""
        return _nothing()


@contextlib.asynccontextmanager
async def _nothing() -> AsyncIterator[None]:
    yield


class LocalProvider(Provider):
    """The server's own decorated components: its ``registries`` by kind, as they are now.

    The registries report their changes to the server themselves, so this provider never
    calls :meth:`Provider.changed`.
    """

    def __init__(self, registries: Mapping[Kind, Registry[Any]]) -> None:
        self._registries = registries

    def __repr__(self) -> str:
        return "<LocalProvider>"

    def components(self, kind: Kind) -> Sequence[Any]:
        enabled: Sequence[Any] = self._registries[kind].enabled()
        return enabled

    def component(self, kind: Kind, key: str) -> Any | None:
        return self._registries[kind].get(key)


class Layer(Protocol):
    """What a transform sees below it: the components as the providers and the transforms
    under it show them to the request ``ctx`` (None: no request, e.g. capabilities)."""

    def components(self, kind: Kind, ctx: RequestContext | None) -> Sequence[Any]: ...
    def component(self, kind: Kind, key: str, ctx: RequestContext | None) -> Any | None: ...


class _ProviderLayer:
    __slots__ = ("provider",)

    def __init__(self, provider: Provider) -> None:
        self.provider = provider

    def components(self, kind: Kind, ctx: RequestContext | None) -> Sequence[Any]:
        return self.provider.components(kind)

    def component(self, kind: Kind, key: str, ctx: RequestContext | None) -> Any | None:
        return self.provider.component(kind, key)


class _TransformLayer:
    __slots__ = ("below", "transform")

    def __init__(self, transform: Transform, below: Layer) -> None:
        self.transform = transform
        self.below = below

    def components(self, kind: Kind, ctx: RequestContext | None) -> Sequence[Any]:
        return self.transform.components(kind, self.below, ctx)

    def component(self, kind: Kind, key: str, ctx: RequestContext | None) -> Any | None:
        return self.transform.component(kind, key, self.below, ctx)


class _MergeLayer:
    """Several providers' layers as one: in order, the first to serve a key wins."""

    __slots__ = ("layers",)

    def __init__(self, layers: Sequence[Layer]) -> None:
        self.layers = tuple(layers)

    def components(self, kind: Kind, ctx: RequestContext | None) -> Sequence[Any]:
        seen: set[str] = set()
        merged: list[Any] = []
        for layer in self.layers:
            for item in layer.components(kind, ctx):
                key = key_of(kind, item)
                if key not in seen:
                    seen.add(key)
                    merged.append(item)
        return merged

    def component(self, kind: Kind, key: str, ctx: RequestContext | None) -> Any | None:
        for layer in self.layers:
            found = layer.component(kind, key, ctx)
            if found is not None:
                return found
        return None


class Catalog:
    """One server's providers, each behind its own transforms, merged in the order they
    were added, then behind the server's transforms: what its clients are served.

    ``on_change(kind)`` is called when a provider (other than the local one, whose
    registries tell the server themselves) signals a change, or when the chain changes.
    """

    def __init__(self, local: Provider, on_change: Callable[[str], None]) -> None:
        self._on_change = on_change
        self._sources: list[tuple[Provider, tuple[Transform, ...]]] = [(local, ())]
        self._transforms: list[Transform] = []
        self._top: Layer = _ProviderLayer(local)
        #: True while the catalog is only the local provider, untransformed: the server
        #: then reads its registries directly (the hot path pays nothing for providers).
        self.plain = True
        #: True when a transform's output depends on who asks (lists are then cached
        #: ``private`` by 2026 clients).
        self.per_principal = False

    @property
    def providers(self) -> tuple[Provider, ...]:
        return tuple(provider for provider, _ in self._sources)

    @property
    def transforms(self) -> tuple[Transform, ...]:
        return tuple(self._transforms)

    def add_provider(self, provider: Provider, transforms: Sequence[Transform]) -> None:
        if not isinstance(provider, Provider):
            raise TypeError(f"add_provider takes a Provider, got {type(provider).__name__}")
        if any(provider is known for known, _ in self._sources):
            raise ValueError(f"{provider!r} is already a provider of this server")
        chain = tuple(transforms)
        _check_transforms(chain)
        provider.watch(self._heard)
        self._sources.append((provider, chain))
        self._rebuild()

    def add_transform(self, transform: Transform) -> None:
        _check_transforms((transform,))
        self._transforms.append(transform)
        self._rebuild()

    def _heard(self, kind: Kind) -> None:
        self._on_change(kind)

    def _rebuild(self) -> None:
        layers: list[Layer] = []
        for provider, chain in self._sources:
            layer: Layer = _ProviderLayer(provider)
            for transform in chain:
                layer = _TransformLayer(transform, layer)
            layers.append(layer)
        top = layers[0] if len(layers) == 1 else _MergeLayer(layers)
        for transform in self._transforms:
            top = _TransformLayer(transform, top)
        self._top = top
        self.plain = len(self._sources) == 1 and not self._transforms
        every = [t for _, chain in self._sources for t in chain] + self._transforms
        self.per_principal = any(t.per_principal for t in every)
        for kind in KINDS:
            self._on_change(kind)

    def components(self, kind: Kind, ctx: RequestContext | None) -> Sequence[Any]:
        """What ``kind`` lists for the request ``ctx``."""
        return self._top.components(kind, ctx)

    def component(self, kind: Kind, key: str, ctx: RequestContext | None) -> Any | None:
        """The component the request ``ctx`` reaches under ``key``, or None."""
        return self._top.component(kind, key, ctx)

    def serves(self, kind: Kind) -> bool:
        """Whether any provider has a component of ``kind`` (what ``initialize``
        declares: a transform may hide some, the capability stays)."""
        return any(provider.components(kind) for provider, _ in self._sources)


def _check_transforms(chain: Sequence[Any]) -> None:
    from trimcp.server.transforms import Transform

    for transform in chain:
        if not isinstance(transform, Transform):
            raise TypeError(f"a transform must be a Transform, got {type(transform).__name__}")
