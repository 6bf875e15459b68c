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
from typing import TYPE_CHECKING, Any, TypeVar

from trimcp import serde
from trimcp.errors import INVALID_PARAMS, McpError
from trimcp.protocol.extensions import check_identifier
from trimcp.protocol.methods import METHODS, Method

if TYPE_CHECKING:
    from trimcp.server.context import Context

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
