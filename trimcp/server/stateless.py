"""How a :class:`~trimcp.Server` answers 2026-07-28 requests: the same handlers, per request.

A 2026 request reaches :meth:`Server.handle_request <trimcp.server.app.Server.handle_request>`
with no session (``ctx.session`` is None) and its own ``ctx.negotiated``. It goes through
the same method table as a session-era request; what differs is around it:

- ``server/discover`` is the server shell's (:mod:`trimcp.server.shell`);
  ``subscriptions/listen`` opens a change stream (:mod:`trimcp.server.listen`).
- ``tools/call``, ``prompts/get`` and ``resources/read`` run as one *attempt*: a
  question the handler asks (``ctx.elicit``, ``ctx.sample``, ``ctx.list_roots``) that the
  retry does not answer yet ends it with ``input_required``
  (:mod:`trimcp.server.input_required`); a call that cannot ask (a tool whose function
  takes no Context, no ``requestState`` or ``inputResponses`` sent) runs without one.
- Cacheable results get ``ttlMs``/``cacheScope`` (:class:`CacheHint`: per registration,
  else the server's defaults); a list page takes the shortest TTL of its items and is
  ``private`` when any item is, or when what a list holds depends on who asks (a
  per-principal transform, or a ``ProtectedResource`` with ``hide_unauthorized``).
- Resource-not-found is ``-32602`` (with the URI) instead of 2025's ``-32002``.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, Final, Protocol

import attrs

from trimcp import serde
from trimcp._record import Record
from trimcp._validators import positive
from trimcp.errors import INVALID_PARAMS, RESOURCE_NOT_FOUND, McpError
from trimcp.protocol import modern
from trimcp.protocol.methods import METHODS
from trimcp.server.dispatch import RequestHandlerFn
from trimcp.server.hints import CacheHint as CacheHint  # its home was here
from trimcp.server.input_required import InputOptions, run_attempt
from trimcp.server.listen import ListenHub
from trimcp.server.providers import key_of
from trimcp.session.context import RequestContext
from trimcp.types import ServerCapabilities

if TYPE_CHECKING:
    from trimcp.server.providers import Kind
    from trimcp.server.resolve import Resolved


class Served(Protocol):
    """What the 2026 side asks of its server (a :class:`trimcp.Server`): what it
    declares (kept until :meth:`StatelessServing.count_change`), and its lookups."""

    def capabilities(self, *, stateless: bool = False) -> ServerCapabilities: ...
    def may_ask(self, ctx: RequestContext) -> bool: ...
    def admit_resource(self, ctx: RequestContext, method: str, uri: str) -> Resolved: ...
    def cache_hint(self, kind: Kind, key: str, ctx: RequestContext | None) -> CacheHint | None: ...
    def read_hint(self, uri: str, ctx: RequestContext | None) -> CacheHint | None: ...
    def lists_vary(self, ctx: RequestContext) -> bool: ...


#: The change count, what ``initialize`` declares, what ``server/discover`` does.
_Declared = tuple[int, ServerCapabilities, ServerCapabilities]


#: The methods whose complete results carry a cache hint (the table's ``cacheable``).
_CACHEABLE: Final = frozenset(name for name, spec in METHODS.items() if spec.cacheable)

#: Fresh for no time (the defaults): shared by anyone, or by the same authorization only.
_PUBLIC: Final = CacheHint(0, "public")
_PRIVATE: Final = CacheHint(0, "private")


@attrs.frozen(kw_only=True, repr=False, eq=False)
class StatelessOptions(Record):
    """How a server serves 2026-07-28 requests.

    ``inputs``: ``requestState`` sealing and input round limits (:class:`InputOptions`).
    ``list_cache`` / ``read_cache`` / ``discover_cache``: default cache hints of list
    results, ``resources/read`` results and ``server/discover``. ``listen_max_streams``,
    ``listen_max_streams_per_principal`` (every anonymous caller together is one),
    ``listen_idle_timeout`` (a stream quiet this long ends gracefully) and
    ``listen_keepalive`` (a comment this often on a quiet HTTP stream; None: never):
    bounds of ``subscriptions/listen``.
    """

    inputs: InputOptions = attrs.field(factory=InputOptions)
    list_cache: CacheHint = _PUBLIC
    read_cache: CacheHint = _PRIVATE
    discover_cache: CacheHint = _PUBLIC
    listen_max_streams: int = attrs.field(default=1000, validator=positive)
    listen_max_streams_per_principal: int = attrs.field(default=100, validator=positive)
    listen_idle_timeout: float = attrs.field(default=3600.0, validator=positive)
    listen_keepalive: float | None = 15.0


class StatelessServing:
    """The 2026-07-28 side of one :class:`~trimcp.Server`."""

    def __init__(self, server: Served, options: StatelessOptions) -> None:
        self.server = server
        self.options = options
        self.hub = ListenHub(
            max_streams=options.listen_max_streams,
            max_per_principal=options.listen_max_streams_per_principal,
            idle_timeout=options.listen_idle_timeout,
            keepalive=options.listen_keepalive,
        )
        #: Bumped on every change of what is served or declared (the server's registries,
        #: providers, mounts, completers and extensions call :meth:`count_change`); keys
        #: the capabilities cache, which every 2026 request reads.
        self.changes = 0
        self._capabilities: _Declared | None = None

    def count_change(self) -> None:
        """What the server serves or declares changed: rebuild the capabilities."""
        self.changes += 1

    def capabilities(self) -> ServerCapabilities:
        """The server's capabilities, rebuilt only when what is registered changed (every
        2026 request carries them in its ``Negotiated``): the same object until then."""
        cached = self._capabilities
        if cached is None or cached[0] != self.changes:
            cached = self._cached()
        return cached[1]

    def discovered_capabilities(self) -> ServerCapabilities:
        """What ``server/discover`` declares (see :meth:`Server.capabilities`), rebuilt as
        :meth:`capabilities` is."""
        return self._cached()[2]

    def _cached(self) -> _Declared:
        cached = self._capabilities
        if cached is None or cached[0] != self.changes:
            server = self.server
            cached = self._capabilities = (
                self.changes,
                server.capabilities(),
                server.capabilities(stateless=True),
            )
        return cached

    async def listen(self, ctx: RequestContext) -> Any:
        """``subscriptions/listen``: a change stream (:mod:`trimcp.server.listen`)."""
        server, method = self.server, ctx.method

        def follow(uri: str) -> str | None:
            try:
                return server.admit_resource(ctx, method, uri).uri
            except McpError as exc:
                if exc.code == RESOURCE_NOT_FOUND:
                    return None  # unknown: left out of the acknowledgement
                raise

        return await self.hub.serve(ctx, serde.unstructure(self.capabilities()), follow)

    async def handle(self, ctx: RequestContext, handler: RequestHandlerFn) -> Any:
        """Answer a 2026 request with the server's ``handler`` for its method: one input
        attempt where the method and the server allow a question, 2026's errors, the
        result's cache hint."""
        method = ctx.method
        try:
            if method in modern.INPUT_METHODS and self.server.may_ask(ctx):
                result = await run_attempt(self.options.inputs, ctx, lambda: handler(ctx))
            else:
                result = await handler(ctx)
        except McpError as exc:
            if exc.code == RESOURCE_NOT_FOUND:  # 2026 forbids -32002
                raise McpError(INVALID_PARAMS, exc.message, exc.data) from None
            raise
        if method in _CACHEABLE:
            return self._with_cache(method, ctx, result)
        return result

    # --- cache hints ---------------------------------------------------------------------

    def _page_hint(self, kind: Kind, names: Iterable[str], ctx: RequestContext) -> CacheHint:
        default = self.options.list_cache
        server = self.server
        hints = [server.cache_hint(kind, name, ctx) or default for name in names] or [default]
        ttl = min(hint.ttl_ms for hint in hints)
        private = server.lists_vary(ctx) or any(hint.scope == "private" for hint in hints)
        return CacheHint(ttl, "private" if private else "public")

    def _with_cache(self, method: str, ctx: RequestContext, result: Any) -> Any:
        # What to look at comes from the method table: a list pages through a catalog
        # (``lists``, the page in ``page_field``), a read names its resource.
        spec = METHODS[method]
        if not _answers(spec.result_type, result):
            return result  # a dict, or input_required: no hint
        hint: CacheHint | None
        if spec.lists is not None and spec.page_field is not None:
            kind = spec.lists
            page = getattr(result, spec.page_field)
            hint = self._page_hint(kind, (key_of(kind, item) for item in page), ctx)
        elif spec.target == "resource" and spec.target_field is not None:
            uri = getattr(ctx.params, spec.target_field)
            hint = self.server.read_hint(uri, ctx) or self.options.read_cache
        else:
            return result
        return attrs.evolve(result, ttl_ms=hint.ttl_ms, cache_scope=hint.scope)


def _answers(result_type: type | None, result: Any) -> bool:
    """Whether ``result`` is the method's own result (checked, not narrowed: the result
    stays ``Any`` for ``attrs.evolve``)."""
    return result_type is not None and isinstance(result, result_type)
