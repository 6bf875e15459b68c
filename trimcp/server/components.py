"""What a server serves, as one request sees it: every lookup the request handlers make.

A :class:`Components` is a server's catalog (:class:`~trimcp.server.providers.Catalog`:
its providers behind their transforms) seen through one request: what a kind lists
(:meth:`Components.listed`), the component under a name or URI (:meth:`Components.get`),
what serves a resource URI and under which canonical name
(:meth:`Components.resolve_resource`, with the caller's scopes checked by
:meth:`Components.admit_resource`), cache hints, and the ``x-mcp-header`` parameters of a
tool. While the catalog is plain (only the decorated components, no transform) every
lookup reads the registries directly: the hot path pays nothing for providers.

Synchronous and pure, like the providers: nothing here awaits.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from trimcp.auth.principal import AuthInfo
from trimcp.errors import McpError
from trimcp.protocol import modern
from trimcp.server.resolve import Resolved, check_scopes, resolve
from trimcp.server.resources import not_found

if TYPE_CHECKING:
    from trimcp.server.hints import CacheHint
    from trimcp.server.providers import Catalog, Kind
    from trimcp.server.registry import Registry
    from trimcp.session.context import RequestContext


class Components:
    """One server's components as requests see them (see the module docstring).

    ``catalog``: the server's providers and transforms; ``registries``: its own decorated
    components by kind (what the catalog's first provider serves).
    """

    __slots__ = ("_catalog", "_registries", "header_params")

    def __init__(self, catalog: Catalog, registries: Mapping[Kind, Registry[Any]]) -> None:
        self._catalog = catalog
        self._registries = registries
        #: The server's own tools whose input schema marks parameters with
        #: ``x-mcp-header`` (2026-07-28), kept as they are registered.
        self.header_params: dict[str, dict[str, tuple[str, ...]]] = {}

    def listed(self, kind: Kind, ctx: RequestContext | None) -> Sequence[Any]:
        """What ``kind`` lists for the request ``ctx``, in order."""
        catalog = self._catalog
        if catalog.plain:
            enabled: Sequence[Any] = self._registries[kind].enabled()
            return enabled
        return catalog.components(kind, ctx)

    def get(self, kind: Kind, key: str, ctx: RequestContext | None) -> Any | None:
        """The ``kind`` component the request ``ctx`` reaches under ``key``, or None."""
        catalog = self._catalog
        if catalog.plain:
            return self._registries[kind].get(key)
        return catalog.component(kind, key, ctx)

    def registered(self, kind: Kind) -> list[Any]:
        """The server's own (decorated) components of ``kind``, disabled ones too."""
        return list(self._registries[kind])

    def decorated_tools(self) -> list[Any]:
        """The server's own enabled tools."""
        enabled: list[Any] = self._registries["tools"].enabled()
        return enabled

    def serves(self, kind: Kind) -> bool:
        """Whether anything of ``kind`` is registered (disabled or not) or provided."""
        catalog = self._catalog
        return bool(len(self._registries[kind])) or (not catalog.plain and catalog.serves(kind))

    def provided(self, kind: Kind) -> list[Any]:
        """The ``kind`` components the providers other than the server's registry serve."""
        return [item for p in self._catalog.providers[1:] for item in p.components(kind)]

    def cache_hint(self, kind: Kind, key: str, ctx: RequestContext | None) -> CacheHint | None:
        """The cache hint of the ``kind`` component the request ``ctx`` reaches under
        ``key`` (None: none given, or no such component)."""
        found = self.get(kind, key, ctx)
        return None if found is None else found.cache_hint

    def lists_vary(self, ctx: RequestContext) -> bool:
        """Whether what lists hold depends on who asks (a per-principal transform, or a
        token whose ``ProtectedResource`` hides what it does not reach)."""
        auth = ctx.principal
        return self._catalog.per_principal or (
            isinstance(auth, AuthInfo) and auth.hide_unauthorized
        )

    def header_parameters(self, tool: str) -> dict[str, tuple[str, ...]]:
        """The ``x-mcp-header`` parameters of ``tool``: header name (lower case) -> property
        path (empty for most tools)."""
        if self._catalog.plain:
            return self.header_params.get(tool, {})
        found = self._catalog.component("tools", tool, None)
        if found is None:
            return {}
        try:
            return modern.header_parameters(found.definition().input_schema)
        except ValueError:
            return {}

    # --- resources by URI -------------------------------------------------------------------

    def resolve_resource(self, uri: str, ctx: RequestContext | None = None) -> Resolved | None:
        """What serves ``uri`` and under which canonical name (None: nothing), for the
        request ``ctx`` when given; raises :class:`McpError` ``-32602`` for a URI with no
        single reading (see :mod:`trimcp.server.resolve`)."""
        catalog = self._catalog
        if catalog.plain:
            registries = self._registries
            return resolve(uri, registries["resources"], registries["templates"].enabled())
        return resolve(
            uri, _Lookup(catalog, "resources", ctx), catalog.components("templates", ctx)
        )

    def admit_resource(self, ctx: RequestContext, method: str, uri: str) -> Resolved:
        """Resolve ``uri`` for the request ``ctx`` and check its caller's resource scopes
        on the canonical names (``-32602`` when refused, ``-32002`` when unknown)."""
        resolved = self.resolve_resource(uri, ctx)
        if resolved is None:
            raise not_found(uri)
        auth = ctx.principal
        check_scopes(resolved, method, auth if isinstance(auth, AuthInfo) else None)
        return resolved

    def read_hint(self, uri: str, ctx: RequestContext | None) -> CacheHint | None:
        """The cache hint of what serves ``uri`` (None: none given, or nothing)."""
        try:
            resolved = self.resolve_resource(uri, ctx)
        except McpError:
            return None
        if resolved is None:
            return None
        served = resolved.resource if resolved.resource is not None else resolved.template
        return served.cache_hint if served is not None else None

    def resource_exists(self, uri: str) -> bool:
        """Whether ``uri`` is served (static, or matching a template); False for a URI
        with no canonical form."""
        try:
            return self.resolve_resource(uri) is not None
        except McpError:
            return False

    def resource_key(self, uri: str) -> str | None:
        """The registration serving ``uri``: its URI, or its template; None if none."""
        try:
            resolved = self.resolve_resource(uri)
        except McpError:
            return None
        if resolved is None:
            return None
        if resolved.template is not None:
            return resolved.template.uri_template
        return resolved.uri


class _Lookup:
    """The catalog's ``kind`` for one request, as :func:`resolve` looks keys up."""

    __slots__ = ("_catalog", "_ctx", "_kind")

    def __init__(self, catalog: Catalog, kind: Kind, ctx: RequestContext | None) -> None:
        self._catalog, self._kind, self._ctx = catalog, kind, ctx

    def get(self, key: str) -> Any | None:
        return self._catalog.component(self._kind, key, self._ctx)
