"""Extensions on a :class:`~trimcp.Server`: what one declares and the methods it answers.

    NOTES: Final[Method[NoteQuery, NoteList]] = extension_method(
        "notes/search", params=NoteQuery, result=NoteList
    )
    notes = Extension("com.example/notes", {"maxResults": 20})

    @notes.method(NOTES)
    async def search(ctx: Context, params: NoteQuery) -> NoteList: ...

    app.add_extension(notes)

The server then declares ``capabilities.extensions["com.example/notes"]`` (in
``initialize`` and ``server/discover``) and answers ``notes/search`` in both eras, its
params structured as the method's row says. A handler asks whether the calling client
declared an extension with :meth:`Context.extension <trimcp.server.context.Context.extension>`
(per session in 2025, per request in 2026-07-28). ``schemes`` names the URI schemes
whose resources the extension serves (through the server's resource path, so resource
scopes apply); two extensions cannot claim one scheme.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, TypeVar

from trimcp import serde
from trimcp.errors import INVALID_PARAMS, McpError
from trimcp.protocol.extensions import check_identifier
from trimcp.protocol.methods import METHODS, Method

if TYPE_CHECKING:
    from trimcp.server.context import Context
    from trimcp.server.dispatch import MethodRegistry
    from trimcp.session.context import RequestContext

P = TypeVar("P")
R = TypeVar("R")

#: A typed extension handler: ``async def (ctx, params) -> result``.
ExtensionHandler = Callable[["Context", P], Awaitable[R]]
#: A handler by name: ``async def (ctx) -> result`` (raw params on ``ctx.request_context``).
NamedHandler = Callable[["Context"], Awaitable[Any]]


class Extension:
    """One extension a server declares: its identifier, its settings (what goes under
    the identifier in ``capabilities.extensions``), its methods and URI schemes.

    Register methods before :meth:`Server.add_extension <trimcp.server.app.Server.add_extension>`
    (later ones are not served). Cancellation: handlers run in their request's cancel
    scope, like any handler; registering does not await.
    """

    __slots__ = ("_handlers", "id", "schemes", "settings")

    def __init__(
        self,
        id: str,
        settings: Mapping[str, Any] | None = None,
        *,
        schemes: Sequence[str] = (),
    ) -> None:
        self.id = check_identifier(id)
        #: What the server declares under the identifier (``{}``: no optional features).
        self.settings: dict[str, Any] = dict(settings or {})
        self.schemes = tuple(schemes)
        self._handlers: dict[str, NamedHandler] = {}

    def __repr__(self) -> str:
        return f"<Extension {self.id!r} methods={sorted(self._handlers)}>"

    def add_method(self, method: Method[P, R], handler: ExtensionHandler[P, R]) -> None:
        """Answer ``method`` (a row made by
        :func:`~trimcp.protocol.extensions.extension_method`) with ``handler(ctx, params)``;
        params that do not fit its type are refused with ``-32602``."""
        if method.name in METHODS:
            raise ValueError(f"{method.name!r} is a core method; an extension adds its own")
        params_type = method.params_type

        async def typed(ctx: Context) -> Any:
            raw = ctx.request_context.params
            params: Any = raw
            if params_type is not None:
                params = _structure(method.name, raw, params_type)
            return await handler(ctx, params)

        self._add(method.name, typed)

    def method(
        self, method: Method[P, R]
    ) -> Callable[[ExtensionHandler[P, R]], ExtensionHandler[P, R]]:
        """Decorator form of :meth:`add_method`."""

        def register(handler: ExtensionHandler[P, R]) -> ExtensionHandler[P, R]:
            self.add_method(method, handler)
            return handler

        return register

    def add_named(self, name: str, handler: NamedHandler) -> None:
        """Answer the method ``name`` with ``handler(ctx)`` (its params as they came)."""
        if name in METHODS:
            raise ValueError(f"{name!r} is a core method; an extension adds its own")
        self._add(name, handler)

    def _add(self, name: str, handler: NamedHandler) -> None:
        if name in self._handlers:
            raise ValueError(f"Extension {self.id!r} already answers {name!r}")
        self._handlers[name] = handler

    @property
    def handlers(self) -> Mapping[str, NamedHandler]:
        """The extension's methods by name."""
        return self._handlers


def _structure(method: str, raw: Any, params_type: Any) -> Any:
    if raw is not None and not isinstance(raw, dict):
        return raw  # already typed (an in-process caller)
    try:
        return serde.structure(raw if raw is not None else {}, params_type)
    except serde.ShapeError as exc:
        raise McpError(
            INVALID_PARAMS,
            f"Invalid params for {method}: {exc}",
            {"path": exc.path, "reason": exc.reason},
        ) from None


class ExtensionTable:
    """The extensions one server declares, by identifier, and their methods answered on
    its method registry (``methods``). ``on_change`` is called when one is added (the
    capabilities a 2026 request carries change)."""

    __slots__ = ("_by_id", "methods", "on_change", "server")

    def __init__(self, server: object, methods: MethodRegistry, on_change: Callable[[], None]):
        #: The server declaring them (its repr names it in errors).
        self.server = server
        self.methods = methods
        self.on_change = on_change
        self._by_id: dict[str, Extension] = {}

    def __contains__(self, extension_id: str) -> bool:
        return extension_id in self._by_id

    def values(self) -> list[Extension]:
        return list(self._by_id.values())

    def as_mapping(self) -> Mapping[str, Extension]:
        return MappingProxyType(self._by_id)

    def add(self, extension: Extension, context: Callable[[RequestContext], Context]) -> None:
        """Declare ``extension`` and answer its methods, each with the
        :class:`~trimcp.server.context.Context` ``context`` makes (the server it belongs
        to: a mounted server's extension runs with the mounted server's). Raises
        ``ValueError`` when its id is declared already, or one of its methods or URI
        schemes is served already."""
        server = self.server
        if extension.id in self._by_id:
            raise ValueError(f"{server!r} already declares the extension {extension.id!r}")
        taken = [name for name in extension.handlers if name in self.methods]
        if taken:
            raise ValueError(f"{server!r} already answers {', '.join(sorted(taken))}")
        claimed = {s for other in self._by_id.values() for s in other.schemes}
        if claimed.intersection(extension.schemes):
            raise ValueError(
                f"The URI scheme(s) {sorted(claimed.intersection(extension.schemes))} of "
                f"{extension.id!r} are served by another extension of {server!r}"
            )
        for name, handler in extension.handlers.items():
            self.methods.add_named(name, _bind(context, handler))
        self._by_id[extension.id] = extension
        self.on_change()


def _bind(
    context: Callable[[RequestContext], Context], handler: NamedHandler
) -> Callable[[RequestContext], Awaitable[Any]]:
    """An extension's handler as the method registry calls it."""

    async def answer(ctx: RequestContext) -> Any:
        return await handler(context(ctx))

    return answer
