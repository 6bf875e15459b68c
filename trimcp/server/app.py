"""``trimcp.Server``: tools, resources, prompts and completions from decorated functions.

    app = Server("weather", version="1.0.0")

    @app.tool()
    async def forecast(city: str, days: int = 3, *, ctx: Context) -> Forecast: ...

    app.run()                                   # stdio

Built on the server shell (:mod:`trimcp.server.shell`): one ``Server`` answers any number
of sessions and 2026-07-28 requests, over any transport; its request handlers live in the
``handlers_*`` modules. ``initialize`` declares the capabilities of what is served at that
moment (:mod:`trimcp.server.capabilities`), fixed for the session: register at least one
item of a kind before clients connect if you mean to add more of that kind later.
"""

from __future__ import annotations

import contextlib
import logging
import secrets
from collections.abc import AsyncIterator, Callable, Iterable, Mapping, Sequence
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, ParamSpec, TypeVar, overload

import trio

from trimcp.protocol import modern
from trimcp.protocol.apps_ext import Csp, Permission, ToolUi
from trimcp.protocol.versions import SUPPORTED_VERSIONS
from trimcp.server.capabilities import declare
from trimcp.server.completion import Completions
from trimcp.server.components import Components
from trimcp.server.context import Context
from trimcp.server.extensions import Extension, ExtensionTable
from trimcp.server.handlers_prompts import PromptHandlers
from trimcp.server.handlers_resources import ResourceHandlers
from trimcp.server.handlers_session import SessionHandlers
from trimcp.server.handlers_tools import ToolHandlers
from trimcp.server.lifespan import Lifespan, LifespanRunner
from trimcp.server.listen import ListenHub
from trimcp.server.listing import Pages
from trimcp.server.logging import DEFAULT_LOG_BUFFER, LogBuffer, StdlibBridge, check_level
from trimcp.server.middleware import Middleware, MiddlewareChain
from trimcp.server.mount import Composition, Mount
from trimcp.server.prompts import RegisteredPrompt
from trimcp.server.providers import KINDS, Catalog, Kind, LocalProvider, Provider
from trimcp.server.registry import Registry, check_name, label
from trimcp.server.replicas import ReplicaLink
from trimcp.server.resolve import Resolved, canonical
from trimcp.server.resources import RegisteredResource, RegisteredTemplate
from trimcp.server.sessions import SessionTable
from trimcp.server.shell import Offer, Purpose, ServerShell, session_of
from trimcp.server.state import StateKeeper, StateOptions
from trimcp.server.stateless import CacheHint, StatelessOptions, StatelessServing
from trimcp.server.tasks import methods as task_methods
from trimcp.server.tools import AUTO, RegisteredTool, TaskStart, TaskSupport, icon_list
from trimcp.session import RequestContext, Session
from trimcp.stores.bus import Bus
from trimcp.stores.request_state import RequestStateKeyring
from trimcp.stores.user_state import StateBudget, UserStateStore
from trimcp.tasks.manager import TaskManager, TaskOptions
from trimcp.tasks.store import TaskStore
from trimcp.types import (
    Annotations,
    Icon,
    Implementation,
    InitializeResult,
    LoggingLevel,
    ResourceContents,
    ServerCapabilities,
    Tool,
    ToolAnnotations,
)

if TYPE_CHECKING:
    # completion types are imported where used (a server that never completes, a stdio
    # server starting, never loads them)
    from trimcp.auth.resource import ProtectedResource
    from trimcp.server.transforms import Transform
    from trimcp.types import PromptReference, ResourceTemplateReference

P = ParamSpec("P")
R = TypeVar("R")
T = TypeVar("T")
P_ = TypeVar("P_", bound=Provider)
T_ = TypeVar("T_", bound="Transform")
F = TypeVar("F", bound=Callable[..., Any])


class Server(ServerShell):
    """An MCP server built from decorated functions.

    ``page_size``: items per page of every list result (None: one page). ``notify_timeout``:
    how long a server-initiated notification may wait for one slow session before that
    session is skipped. ``max_subscriptions``: resource subscriptions per session.
    ``log_buffer``: bridged log records kept for slow sessions. ``cursor_secret``: keys
    pagination cursors (random per instance by default; set it when several processes
    serve the same clients). ``mask_error_details``: when a tool raises an unexpected
    exception, tell the client only that it failed (default: its type and message, so the
    model can react; the traceback goes to the ``trimcp.server`` log either way).
    ``lifespan``: ``lifespan(server)`` returns an async context manager entered once while
    the server serves, whatever the transport or the number of sessions; what it yields
    is ``ctx.lifespan`` (see :mod:`trimcp.server.lifespan`). ``stateless``: how
    2026-07-28 requests are served (``requestState`` keys, input rounds, cache hints,
    listen streams; see :class:`~trimcp.server.stateless.StatelessOptions`). The same
    server answers both eras, each request in its own. ``task_options``, ``task_store``,
    ``task_owner``: limits of tools called as tasks, where their records live (in memory
    by default) and who owns them (see :mod:`trimcp.server.tasks` and ``docs/tasks.md``).
    ``auth``: the server's OAuth protection (a :class:`~trimcp.auth.ProtectedResource`),
    applied wherever it is served over HTTP (``run``, ``trimcp run`` with any flags,
    ``serve_http``, ``create_asgi_app``); the WebSocket transport refuses such a server,
    and stdio serves the local client that started it (see docs/authorization.md).
    ``state``: where and within which bounds ``ctx.user_state`` and ``ctx.handles`` keep
    state across calls (see :class:`~trimcp.server.state.StateOptions` and docs/state.md).
    """

    def __init__(
        self,
        name: str,
        version: str = "0.1.0",
        *,
        title: str | None = None,
        description: str | None = None,
        icons: Sequence[Icon | Mapping[str, Any]] | None = None,
        website_url: str | None = None,
        instructions: str | None = None,
        page_size: int | None = None,
        supported_versions: tuple[str, ...] = SUPPORTED_VERSIONS,
        notify_timeout: float = 5.0,
        max_subscriptions: int = 1000,
        log_buffer: int = DEFAULT_LOG_BUFFER,
        cursor_secret: str | None = None,
        mask_error_details: bool = False,
        lifespan: Lifespan | None = None,
        stateless: StatelessOptions | None = None,
        task_options: TaskOptions | None = None,
        task_store: TaskStore | None = None,
        task_owner: task_methods.OwnerFunction | None = None,
        middleware: Sequence[Middleware] = (),
        auth: ProtectedResource | None = None,
        state: StateOptions | None = None,
    ) -> None:
        if page_size is not None and page_size < 1:
            raise ValueError("page_size must be at least 1 (or None for one page)")
        if auth is not None:
            from trimcp.auth.resource import ProtectedResource  # only protected servers pay

            if not isinstance(auth, ProtectedResource):
                raise TypeError(
                    f"auth= takes a trimcp.ProtectedResource, got {type(auth).__name__}"
                )
        info = Implementation(
            name=name,
            version=version,
            title=title,
            description=description,
            icons=icon_list(icons),
            website_url=website_url,
        )
        super().__init__(info, instructions=instructions, supported_versions=supported_versions)
        #: The server's OAuth protection (see the class docstring); None: open.
        self.auth = auth
        self.mask_error_details = mask_error_details
        self._lifespan = LifespanRunner(f"server {name!r}", lifespan, self)
        self._composition = Composition()  # the servers mounted here, and where it is
        self._middleware = MiddlewareChain(self, super().handle_request, self._notified)
        for layer in middleware:
            self.add_middleware(layer)
        self._pages = Pages(page_size, cursor_secret or secrets.token_hex(16))
        self.tools: Registry[RegisteredTool[Any, Any]] = Registry("tools", self._changed)
        self.resources: Registry[RegisteredResource] = Registry("resources", self._changed)
        self.templates: Registry[RegisteredTemplate] = Registry("templates", self._changed)
        self.prompts: Registry[RegisteredPrompt] = Registry("prompts", self._changed)
        # The providers (these decorated components first) and the transforms, as
        # requests see them.
        registries: dict[Kind, Registry[Any]] = {
            "tools": self.tools,
            "prompts": self.prompts,
            "resources": self.resources,
            "templates": self.templates,
        }
        self._catalog = Catalog(LocalProvider(registries), self._changed)
        self._components = Components(self._catalog, registries)
        self.completions = Completions()
        # A completer added or adopted changes what is declared (``completions``).
        self.completions.listeners.append(lambda: self._stateless.count_change())
        self._log_buffer = LogBuffer(log_buffer)
        self._sessions = SessionTable(self._log_buffer, notify_timeout=notify_timeout)
        self._stateless = StatelessServing(self, stateless or StatelessOptions())
        #: A 2026 request's offer, kept while its parts stay the same (none yet).
        self._request_offer = Offer(ServerCapabilities(), instructions)
        #: The handlers' Context of a request to this server.
        self._context = partial(Context, self)
        #: Runs the tools called as tasks (see :mod:`trimcp.server.tasks`).
        self.tasks = TaskManager(task_store, task_options)
        #: Keeps ``ctx.user_state`` and ``ctx.handles`` (see :mod:`trimcp.server.state`).
        self.state = StateKeeper(state or StateOptions(), lambda: self.request_state_keyring)
        self._replicas = ReplicaLink(
            self._sessions,
            self._stateless.hub,
            lambda kind: self._stateless.count_change(),
            max_subscriptions=max_subscriptions,
            on_task_cancelled=self.tasks.stop_if_cancelled,
            on_task_answered=self.tasks.answer_here,
        )
        # A tasks/cancel taken here for a task another replica runs: tell that replica.
        self.tasks.cancelled_elsewhere = self._replicas.task_cancelled
        # Likewise the answers of a tasks/update.
        self.tasks.answered_elsewhere = self._replicas.task_answered
        self.task_owner: task_methods.OwnerFunction = task_owner or task_methods.default_owner
        # The request handlers by method (the shell's registry): the built-ins, typed by
        # the method table, each kind's in its own module.
        components, pages, context = self._components, self._pages, self._context
        self._resource_handlers = ResourceHandlers(components, pages, context)
        self._session_handlers = SessionHandlers(
            components, self._sessions, self._replicas, max_subscriptions
        )
        methods = self.methods
        ToolHandlers(components, pages, context, self._call_as_task).install(methods)
        self._resource_handlers.install(methods)
        PromptHandlers(components, pages, self.completions, context).install(methods)
        self._session_handlers.install(methods)
        for name, handler in task_methods.request_handlers(self).items():
            methods.add_named(name, handler)  # 2025 tasks/* and the 2026 extension's
        self._extensions = ExtensionTable(self, methods, self._stateless.count_change)

    def __repr__(self) -> str:
        return f"<Server {self.info.name!r} {self.info.version}>"

    @property
    def page_size(self) -> int | None:
        """Items per page of every list result (None: one page)."""
        return self._pages.page_size

    @page_size.setter
    def page_size(self, value: int | None) -> None:
        self._pages.page_size = value

    @property
    def max_subscriptions(self) -> int:
        """Resource subscriptions per session."""
        return self._session_handlers.max_subscriptions

    # --- composition --------------------------------------------------------------------

    def mount(self, server: Server, prefix: str) -> None:
        """Serve ``server``'s tools, resources, templates, prompts and completions here,
        under ``prefix`` (tool ``add`` -> ``{prefix}_add``, ``memo://today`` ->
        ``memo://{prefix}/today``), as a provider after this server's own components
        (see :mod:`trimcp.server.mount`).

        Its lifespan is entered with this server's (mount before serving); later changes
        to it reach this server's clients as list_changed notifications. Raises
        ``ValueError`` for a bad prefix, a name already served here, or a cycle.
        """
        if server is self or self in server.mounted_servers(deep=True):
            raise ValueError(f"Mounting {server!r} into {self!r} would make a cycle")
        mount = Mount(self, server, prefix)
        for kind in KINDS:
            taken = [key for key in mount.keys(kind) if self._components.get(kind, key, None)]
            if taken:
                raise ValueError(f"{self!r} already serves {kind} named {', '.join(taken)}")
        self._catalog.add_provider(mount, ())
        mount.copy_completers()
        for extension in server._extensions.values():  # answered by the mounted server
            if extension.id not in self._extensions:
                self._extensions.add(extension, server._context)
        server.completions.listeners.append(mount.copy_completers)
        server._composition.mounted_into.append(mount)
        self._lifespan.children.append(server._lifespan)
        server.state.follow(self.state)  # its tools keep state where this server does
        self._composition.mounts.append(mount)

    def own_components(self, kind: Kind) -> list[Any]:
        """What this server carries into a server it is mounted into: its own enabled
        components of ``kind`` (decorated), then those of the servers mounted into it."""
        return [*getattr(self, kind).enabled(), *self._composition.components(kind)]

    def mounted_servers(self, *, deep: bool = False) -> list[Server]:
        """The servers mounted into this one (``deep``: and into those), in mount order."""
        composition = self._composition
        return composition.below() if deep else composition.servers()

    def add_provider(self, provider: P_, *, transforms: Sequence[Transform] = ()) -> P_:
        """Serve ``provider``'s tools, prompts, resources and templates too, shaped by
        ``transforms`` (that provider's only, first to last); see
        :mod:`trimcp.server.providers`. Returns ``provider``.

        Where two providers serve the same name or URI, the one added first wins (this
        server's own decorated components come first). Its :meth:`Provider.lifespan
        <trimcp.server.providers.Provider.lifespan>` is entered with this server's
        lifespan (add providers before serving). Clients are told the lists changed.
        Raises ``TypeError`` for what is not a Provider or Transform, ``ValueError`` for a
        provider added twice. Only this server's own components are carried into a
        server this one is mounted into. Synchronous: nothing to cancel.
        """
        self._catalog.add_provider(provider, transforms)
        self._lifespan.children.append(
            LifespanRunner(f"provider {provider!r}", type(provider).lifespan, provider)
        )
        return provider

    def add_transform(self, transform: T_) -> T_:
        """Shape everything this server serves with ``transform``, after the transforms
        added before (see :mod:`trimcp.server.transforms`). Returns ``transform``.

        Takes effect for requests that arrive after the call; clients are told the lists
        changed. Raises ``TypeError`` for what is not a Transform. Synchronous: nothing to
        cancel.
        """
        self._catalog.add_transform(transform)
        return transform

    @property
    def providers(self) -> tuple[Provider, ...]:
        """Where components come from, in order: the decorated ones first."""
        return self._catalog.providers

    @property
    def transforms(self) -> tuple[Transform, ...]:
        """The server-wide transforms, nearest the providers first."""
        return self._catalog.transforms

    # --- extensions ---------------------------------------------------------------------

    def add_extension(self, extension: Extension) -> Extension:
        """Declare ``extension`` (``capabilities.extensions[extension.id]`` is its settings)
        and answer its methods, in both eras (see :mod:`trimcp.server.extensions`).

        Raises ``ValueError`` when an extension of that id is already declared, or one of
        its methods or URI schemes is already served here. Servers this one is mounted
        into declare it too. Add extensions before clients connect: a 2025 session keeps
        the capabilities of its ``initialize``.
        """
        if not isinstance(extension, Extension):
            raise TypeError(f"add_extension takes an Extension, got {type(extension).__name__}")
        self._extensions.add(extension, self._context)
        for mount in self._composition.mounted_into:
            if extension.id not in mount.parent._extensions:
                mount.parent._extensions.add(extension, self._context)
        return extension

    @property
    def extensions(self) -> Mapping[str, Extension]:
        """The extensions this server declares, by identifier."""
        return self._extensions.as_mapping()

    # --- middleware ---------------------------------------------------------------------

    def add_middleware(self, middleware: Middleware, *, outermost: bool = False) -> None:
        """Add ``middleware`` inside those added before (the first added is outermost), or
        around all of them with ``outermost=True`` (an access log sees every refusal).

        ``async def (call, call_next) -> result``; see :mod:`trimcp.server.middleware`.
        Takes effect for requests that arrive after the call.
        """
        self._middleware.add(middleware, outermost=outermost)

    @property
    def middleware(self) -> tuple[Middleware, ...]:
        """The middleware, outermost first."""
        return self._middleware.layers

    # --- tools --------------------------------------------------------------------------

    @overload
    def tool(self, name: Callable[P, R], /) -> RegisteredTool[P, R]: ...
    @overload
    def tool(
        self,
        name: str | None = None,
        *,
        title: str | None = None,
        description: str | None = None,
        annotations: ToolAnnotations | Mapping[str, Any] | None = None,
        icons: Sequence[Icon | Mapping[str, Any]] | None = None,
        meta: Mapping[str, Any] | None = None,
        task_support: TaskSupport | None = None,
        task_start: TaskStart = "auto",
        output_schema: Mapping[str, Any] | None = AUTO,
        input_schema: Mapping[str, Any] | None = None,
        run_sync_in_thread: bool = False,
        cache: CacheHint | None = None,
        ui: ToolUi | str | None = None,
        tags: Iterable[str] | None = None,
    ) -> Callable[[Callable[P, R]], RegisteredTool[P, R]]: ...
    def tool(self, name: Any = None, **options: Any) -> Any:
        """Register the decorated function as a tool (``@app.tool`` or ``@app.tool(...)``).

        Returns a :class:`RegisteredTool`, which calls the function when called and can
        be disabled, enabled or removed. See :mod:`trimcp.server.tools` for schemas,
        validation, results and errors; raises ``TypeError``/``ValueError`` at
        registration for what cannot be a tool (bad name, unsupported types, duplicate).
        ``ui``: the app page (``ui://...``) a host renders the tool's results with, or a
        :class:`~trimcp.server.apps.ToolUi` (see :mod:`trimcp.server.apps`). ``tags``:
        labels that transforms select by (:mod:`trimcp.server.transforms`).
        """
        if callable(name):
            return self.add_tool(name)
        check_name("tool", name)

        def register(fn: Callable[P, R]) -> RegisteredTool[P, R]:
            return self.add_tool(fn, name=name, **options)

        return register

    def add_tool(
        self, fn: Callable[P, R], name: str | None = None, **options: Any
    ) -> RegisteredTool[P, R]:
        """Register ``fn`` as a tool now; the options are those of :meth:`tool`.

        ``cache``: the cache hint of ``tools/list`` pages listing it (2026-07-28).
        ``tags``: labels transforms select by (see :mod:`trimcp.server.transforms`).
        """
        cache, tags = options.pop("cache", None), options.pop("tags", None)
        tool = label(RegisteredTool(fn, name=name, **options), cache, tags)
        try:
            headers = modern.header_parameters(tool.definition().input_schema)
        except ValueError as exc:
            raise ValueError(f"tool {tool.name!r}: {exc}") from None
        added = self.tools.add(tool.name, tool)
        if headers:
            self._components.header_params[tool.name] = headers
        return added

    def remove_tool(self, name: str) -> RegisteredTool[Any, Any]:
        """Unregister the tool ``name`` (``KeyError`` if there is none)."""
        removed = self.tools.remove(name)
        self._components.header_params.pop(name, None)
        return removed

    def get_tool(self, name: str) -> RegisteredTool[Any, Any] | None:
        """The tool ``name`` (enabled or not), or None."""
        return self.tools.entry(name)

    # --- resources ----------------------------------------------------------------------

    def resource(
        self,
        uri: str,
        *,
        name: str | None = None,
        title: str | None = None,
        description: str | None = None,
        mime_type: str | None = None,
        size: int | None = None,
        annotations: Annotations | Mapping[str, Any] | None = None,
        icons: Sequence[Icon | Mapping[str, Any]] | None = None,
        meta: Mapping[str, Any] | None = None,
        cache: CacheHint | None = None,
        tags: Iterable[str] | None = None,
    ) -> Callable[[Callable[..., Any]], RegisteredResource | RegisteredTemplate]:
        """Register the decorated function as the resource ``uri``, or as a template when
        ``uri`` holds ``{variables}`` (see :mod:`trimcp.server.resources`). ``cache``: the
        cache hint of its ``resources/read`` results and of list pages naming it
        (2026-07-28). ``tags``: labels that transforms select by.

        The URI is required: a bare ``@app.resource`` (no parentheses) raises ``TypeError``
        at once, naming the function.
        """
        if not isinstance(uri, str):
            what = getattr(uri, "__name__", None)
            shown = f"above {what!r}" if callable(uri) and what else f"got {uri!r}"
            raise TypeError(
                f"@app.resource needs the resource's URI ({shown}): write "
                '@app.resource("scheme://path") or @app.resource("scheme://{variable}")'
            )

        def register(fn: Callable[..., Any]) -> RegisteredResource | RegisteredTemplate:
            return self.add_resource(
                fn,
                uri,
                name=name,
                title=title,
                description=description,
                mime_type=mime_type,
                size=size,
                annotations=annotations,
                icons=icons,
                meta=meta,
                cache=cache,
                tags=tags,
            )

        return register

    def add_resource(
        self,
        fn: Callable[..., Any],
        uri: str,
        *,
        size: int | None = None,
        cache: CacheHint | None = None,
        tags: Iterable[str] | None = None,
        **options: Any,
    ) -> RegisteredResource | RegisteredTemplate:
        """Register ``fn`` for ``uri`` now; the options are those of :meth:`resource`."""
        if not isinstance(uri, str):
            raise TypeError(f"add_resource: the URI must be a str, got {uri!r}")
        if "{" in uri:
            if size is not None:
                raise TypeError("A resource template has no size")
            template = label(RegisteredTemplate(uri, fn, **options), cache, tags)
            return self.templates.add(template.uri_template, template)
        resource = label(RegisteredResource(uri, fn, size=size, **options), cache, tags)
        return self.resources.add(resource.uri, resource)

    def remove_resource(self, uri: str) -> RegisteredResource | RegisteredTemplate:
        """Unregister the resource or template registered for ``uri`` (``KeyError`` if none)."""
        if uri in self.templates:
            return self.templates.remove(uri)
        return self.resources.remove(uri)

    def ui_resource(
        self,
        uri: str,
        *,
        name: str | None = None,
        title: str | None = None,
        description: str | None = None,
        csp: Csp | Mapping[str, Iterable[str]] | None = None,
        permissions: Iterable[Permission] = (),
        domain: str | None = None,
        prefers_border: bool | None = None,
        meta: Mapping[str, Any] | None = None,
        cache: CacheHint | None = None,
    ) -> Callable[[Callable[..., Any]], RegisteredResource]:
        """Register the decorated function (returning the page's HTML) as the app page
        ``uri`` (``ui://...``), served as ``text/html;profile=mcp-app`` with ``csp``,
        ``permissions``, ``domain`` and ``prefers_border`` in its ``_meta.ui``. The server
        then declares the MCP Apps extension; see :mod:`trimcp.server.apps`.
        """

        def register(fn: Callable[..., Any]) -> RegisteredResource:
            return self.add_ui_resource(
                uri,
                fn,
                name=name,
                title=title,
                description=description,
                csp=csp,
                permissions=permissions,
                domain=domain,
                prefers_border=prefers_border,
                meta=meta,
                cache=cache,
            )

        return register

    def add_ui_resource(
        self,
        uri: str,
        page: str | Path | Callable[..., Any],
        *,
        csp: Csp | Mapping[str, Iterable[str]] | None = None,
        permissions: Iterable[Permission] = (),
        domain: str | None = None,
        prefers_border: bool | None = None,
        cache: CacheHint | None = None,
        **options: Any,
    ) -> RegisteredResource:
        """Register the app page ``uri`` now: ``page`` is the HTML, a file holding it (read
        on each read) or a function returning it; the rest as in :meth:`ui_resource`."""
        from trimcp.server import apps  # only servers with app pages load it

        ui = apps.resource_meta(csp, permissions, domain, prefers_border)
        resource = apps.RegisteredUiResource(uri, apps.page_function(page), ui=ui, **options)
        return self.resources.add(resource.uri, label(resource, cache, None))

    # --- prompts ------------------------------------------------------------------------

    @overload
    def prompt(self, name: Callable[..., Any], /) -> RegisteredPrompt: ...
    @overload
    def prompt(
        self,
        name: str | None = None,
        *,
        title: str | None = None,
        description: str | None = None,
        icons: Sequence[Icon | Mapping[str, Any]] | None = None,
        meta: Mapping[str, Any] | None = None,
        cache: CacheHint | None = None,
        tags: Iterable[str] | None = None,
    ) -> Callable[[Callable[..., Any]], RegisteredPrompt]: ...
    def prompt(self, name: Any = None, **options: Any) -> Any:
        """Register the decorated function as a prompt (see :mod:`trimcp.server.prompts`)."""
        if callable(name):
            return self.add_prompt(name)
        check_name("prompt", name)

        def register(fn: Callable[..., Any]) -> RegisteredPrompt:
            return self.add_prompt(fn, name=name, **options)

        return register

    def add_prompt(
        self, fn: Callable[..., Any], name: str | None = None, **options: Any
    ) -> RegisteredPrompt:
        """Register ``fn`` as a prompt now; the options are those of :meth:`prompt`
        (``cache``: the cache hint of ``prompts/list`` pages listing it, 2026-07-28)."""
        cache, tags = options.pop("cache", None), options.pop("tags", None)
        prompt = label(RegisteredPrompt(fn, name=name, **options), cache, tags)
        return self.prompts.add(prompt.name, prompt)

    def remove_prompt(self, name: str) -> RegisteredPrompt:
        return self.prompts.remove(name)

    # --- completion ---------------------------------------------------------------------

    def completion(self, ref: PromptReference | ResourceTemplateReference) -> Callable[[F], F]:
        """Register ``fn(argument, value[, arguments])`` to complete every argument of
        ``ref`` (a prompt or a resource template); see :mod:`trimcp.server.completion`."""

        from trimcp.types import PromptReference

        def register(fn: F) -> F:
            if isinstance(ref, PromptReference):
                self.completions.add_ref("prompt", ref.name, fn)
            else:
                self.completions.add_ref("template", ref.uri, fn)
            return fn

        return register

    def complete_argument(
        self, *, argument: str, prompt: str | None = None, template: str | None = None
    ) -> Callable[[F], F]:
        """Register ``fn(value[, arguments])`` to complete one argument of the prompt
        ``prompt`` or one variable of the resource template ``template``."""
        if (prompt is None) == (template is None):
            raise TypeError("Pass exactly one of prompt= or template=")

        def register(fn: F) -> F:
            if prompt is not None:
                self.completions.add_argument("prompt", prompt, argument, fn)
            else:
                assert template is not None
                self.completions.add_argument("template", template, argument, fn)
            return fn

        return register

    # --- logging and notifications ------------------------------------------------------

    def bridge_stdlib_logging(
        self, logger_name: str = "", *, level: int = logging.NOTSET
    ) -> logging.Handler:
        """Forward records of the ``logging`` logger ``logger_name`` to the clients.

        Returns the installed handler (remove it with ``logger.removeHandler``). Records
        are sent to each session whose level lets them through; ``emit`` never blocks
        (see :mod:`trimcp.server.logging`).
        """
        handler = StdlibBridge(self._log_buffer, level)
        logging.getLogger(logger_name or None).addHandler(handler)
        return handler

    async def notify_resource_updated(self, uri: str) -> None:
        """Send ``notifications/resources/updated`` to the sessions subscribed to ``uri``.

        Sessions are sent to concurrently, each within ``notify_timeout``; closed or slow
        ones are skipped. A server this one is mounted into tells its own subscribers of
        the prefixed URI. ``uri`` is compared in canonical form, as subscriptions are kept
        (a URI with no canonical form raises :class:`McpError` ``-32602``). Cancellation:
        stops sending; some sessions may have been told.
        """
        uri = canonical(uri)
        await self._replicas.resource_updated(uri)
        await self._composition.resource_updated(uri)

    def session_values(self, session: Session) -> dict[str, Any]:
        """The per-session dict behind ``ctx.session_state`` (made on first use)."""
        return self._sessions.values(session)

    async def send_log(
        self,
        session: Session,
        level: LoggingLevel,
        data: Any,
        logger: str | None = None,
        related_request_id: int | str | None = None,
    ) -> None:
        """Send ``notifications/message`` to ``session`` if its level lets ``level`` through.

        Cancellation: atomic (queued whole or not at all); may wait while the outbox is full.
        """
        await self._sessions.send_log(session, check_level(level), data, logger, related_request_id)

    def _changed(self, kind: str) -> None:
        self._composition.changed(kind)  # servers this one is mounted into follow
        kind = "resources" if kind == "templates" else kind
        self._replicas.list_changed(kind)

    def attach_bus(self, bus: Bus | None) -> None:
        """Hear and tell the other replicas through ``bus`` (see
        :mod:`trimcp.server.replicas`); ``serve_http(store=...)`` attaches its store's
        while it serves. None: this process only (the default)."""
        self._replicas.attach(bus)

    def attach_task_store(self, store: TaskStore | None) -> None:
        """Keep task records in ``store``, the one the replicas share (``serve_http(store=...)``
        attaches its store's while it serves), so ``tasks/get`` on any replica finds them;
        None: in this process again. A ``task_store`` given to the constructor wins."""
        self.tasks.share(store)

    def attach_state_store(self, store: UserStateStore | None) -> None:
        """Keep ``ctx.user_state`` and handle states in ``store``, the one the replicas
        share (``serve_http(store=...)`` attaches its store's while it serves), unless
        ``StateOptions.store`` names one; None: in this process again."""
        self.state.attach(store)

    @property
    def state_budget(self) -> StateBudget:
        """The bounds of ``ctx.user_state`` and handle states (``StateOptions.budget``):
        what a shared store attached to this server keeps to."""
        return self.state.options.budget

    @property
    def request_state_keyring(self) -> RequestStateKeyring:
        """The keyring sealing this server's 2026-07-28 ``requestState``."""
        return self._stateless.options.inputs.keyring

    # --- the handshake ------------------------------------------------------------------

    def capabilities(self, *, stateless: bool = False) -> ServerCapabilities:
        """What ``initialize`` declares, from what is served now (``stateless``: what
        ``server/discover`` declares, tasks as the ``io.modelcontextprotocol/tasks``
        extension instead of the 2025-11-25 ``tasks`` slot); see
        :mod:`trimcp.server.capabilities`."""
        extensions = self._extensions.values()
        return declare(self._components, self.completions, extensions, stateless=stateless)

    def offer(self, purpose: Purpose) -> Offer:
        """What ``initialize`` declares (:meth:`capabilities` now), or a 2026-07-28 request's
        agreement and ``server/discover`` (the same, kept until something registered
        changes)."""
        if purpose == "initialize":
            return Offer(self.capabilities(), self.instructions)
        stateless = self._stateless
        if purpose == "request":
            # The same Offer while nothing changes: the agreement is kept by its identity.
            offer = self._request_offer
            offer = self._request_offer = offer.kept(stateless.capabilities(), self.instructions)
            return offer
        return Offer(stateless.discovered_capabilities(), self.instructions)

    def may_ask(self, ctx: RequestContext) -> bool:
        """Whether the 2026 request ``ctx`` (``tools/call``, ``prompts/get`` or
        ``resources/read``) runs as an input round (see :mod:`trimcp.server.input_required`):
        always, but for a ``tools/call`` without ``requestState`` or ``inputResponses`` of a
        tool whose function takes no Context (it has no way to ask)."""
        params = ctx.params
        if (
            ctx.method != "tools/call"
            or getattr(params, "request_state", None) is not None
            or getattr(params, "input_responses", None)
        ):
            return True
        tool = self._components.get("tools", params.name, ctx)
        return not isinstance(tool, RegisteredTool) or tool.takes_context

    def discover_cache(self) -> CacheHint:
        return self._stateless.options.discover_cache

    # --- 2026-07-28 (stateless) ---------------------------------------------------------

    def header_parameters(self, tool: str) -> dict[str, tuple[str, ...]]:
        """The ``x-mcp-header`` parameters of ``tool``: header name (lower case) -> property
        path (empty for most tools). The HTTP transport checks ``Mcp-Param-*`` with it."""
        return self._components.header_parameters(tool)

    @property
    def listen_hub(self) -> ListenHub:
        """The open ``subscriptions/listen`` streams (a transport closes them at shutdown)."""
        return self._stateless.hub

    def cache_hint(self, kind: Kind, key: str, ctx: RequestContext | None) -> CacheHint | None:
        """See :meth:`Components.cache_hint <trimcp.server.components.Components.cache_hint>`."""
        return self._components.cache_hint(kind, key, ctx)

    def read_hint(self, uri: str, ctx: RequestContext | None) -> CacheHint | None:
        """See :meth:`Components.read_hint <trimcp.server.components.Components.read_hint>`."""
        return self._components.read_hint(uri, ctx)

    def lists_vary(self, ctx: RequestContext) -> bool:
        """See :meth:`Components.lists_vary <trimcp.server.components.Components.lists_vary>`."""
        return self._components.lists_vary(ctx)

    def resource_exists(self, uri: str) -> bool:
        """Whether ``uri`` is a resource of this server (static, or matching a template);
        False for a URI with no canonical form."""
        return self._components.resource_exists(uri)

    def resource_key(self, uri: str) -> str | None:
        """The registration serving ``uri``: its URI, or its template; None if none."""
        return self._components.resource_key(uri)

    def resolve_resource(self, uri: str, ctx: RequestContext | None = None) -> Resolved | None:
        """What serves ``uri`` and under which canonical name (None: nothing), for the
        request ``ctx`` when given (transforms may show a caller less); raises
        :class:`McpError` ``-32602`` for a URI with no single reading. See
        :mod:`trimcp.server.resolve`."""
        return self._components.resolve_resource(uri, ctx)

    def admit_resource(self, ctx: RequestContext, method: str, uri: str) -> Resolved:
        """Resolve ``uri`` for ``ctx``, its caller's scopes checked (see
        :meth:`Components.admit_resource <trimcp.server.components.Components.admit_resource>`)."""
        return self._components.admit_resource(ctx, method, uri)

    async def read_resource_contents(self, uri: str, ctx: Context) -> list[ResourceContents]:
        """Read ``uri`` from this server (looked up in canonical form): a static resource,
        else the first matching template. Raises ``McpError(-32002)`` when nothing matches,
        ``-32602`` for a URI with no single reading."""
        return await self._resource_handlers.read_contents(uri, ctx)

    # --- SessionHandler -----------------------------------------------------------------

    async def handle_request(self, ctx: RequestContext) -> Any:
        """Answer one request (the engine calls this in the request's task and scope;
        a 2026-07-28 request comes without a session, see :mod:`trimcp.server.stateless`),
        through the middleware when there is any, then the shell's
        (:meth:`ServerShell.handle_request <trimcp.server.shell.ServerShell.handle_request>`)."""
        if self._middleware.empty:
            return await super().handle_request(ctx)
        return await self._middleware.request(ctx)

    async def answer_initialize(self, ctx: RequestContext) -> InitializeResult:
        self._sessions.state(session_of(ctx))
        return self.initialize_result(ctx.params)

    async def answer_stateless(self, ctx: RequestContext) -> Any:
        if ctx.method == "subscriptions/listen":
            return await self._stateless.listen(ctx)
        return await self._stateless.handle(ctx, self.handler_for(ctx.method))

    async def answer_in_session(self, ctx: RequestContext) -> Any:
        session = ctx.session
        assert session is not None  # the shell answers only a session's requests here
        if self._replicas.bus.shared:
            await self._replicas.learn(session)
        return await self._sessions.answer(session, self.handler_for(ctx.method), ctx)

    async def handle_notification(self, session: Session, method: str, params: Any) -> None:
        if self._middleware.empty:
            await self._notified(session, method, params)
        else:
            await self._middleware.notification(session, method, params)

    async def _notified(self, session: Session, method: str, params: Any) -> None:
        if method == "notifications/initialized":
            self._sessions.wake(session)  # deliver what changed during the handshake
        await super().handle_notification(session, method, params)

    async def _call_as_task(self, tool: Any, ctx: RequestContext) -> Any:
        return await task_methods.call_tool_as_task(self, tool, ctx)

    def sampling_tools(self, tools: Sequence[Tool | str]) -> list[Tool]:
        """Tool definitions for sampling; names refer to this server's enabled tools."""
        return [tool if isinstance(tool, Tool) else _definition(self, tool) for tool in tools]

    # --- serving ------------------------------------------------------------------------

    def open_lifespan(self) -> contextlib.AbstractAsyncContextManager[Any]:
        """Enter the server's lifespan for the body (``async with app.open_lifespan():``).

        Every serving function does this itself; call it when you serve sessions your own
        way. Shared: while it runs, further entries reuse its value and the first entry
        closes it. Yields the lifespan's value. Raises
        :class:`~trimcp.server.lifespan.LifespanFailed` when it fails to start.
        Cancellation: a lifespan being started is cancelled with the caller.

        The task runner (:attr:`tasks`) runs inside it: tools called as tasks end (after
        ``TaskOptions.shutdown_grace``) before the lifespan's own resources close.
        """
        return self._open_lifespan_and_tasks()

    @contextlib.asynccontextmanager
    async def _open_lifespan_and_tasks(self) -> AsyncIterator[Any]:
        async with self._lifespan.open() as value, self.tasks.open():
            yield value

    @property
    def lifespan_value(self) -> Any:
        """What the lifespan yielded (``ctx.lifespan`` in handlers).

        Raises :class:`~trimcp.server.lifespan.LifespanNotRunning` when it is not running.
        """
        return self._lifespan.value

    async def attend_session(
        self, session: Session, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
    ) -> None:
        """The engine starts this next to every session (see ``SessionHandler``)."""
        await self.serve_notifications(session, task_status=task_status)

    def can_rest(self, session: Session) -> bool:
        """Whether ``session`` may rest now as far as this server is concerned (see
        :func:`~trimcp.session.engine.resting_session`): its notification delivery is idle."""
        return self._sessions.can_rest(session)

    async def serve_notifications(
        self, session: Session, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
    ) -> None:
        """Deliver list-changed and bridged log notifications to ``session`` until it closes.

        For transports that create sessions themselves: start it next to each session.
        Cancellation: stops delivering (pending notifications are then sent before the
        session's next request instead).
        """
        await self._sessions.deliver(session, task_status=task_status)


def _definition(server: Server, name: str) -> Tool:
    tool = server.tools.get(name)
    if tool is None:
        raise ValueError(f"No tool named {name!r} to offer for sampling")
    return tool.definition()
