"""The typed MCP client: one object over one engine :class:`~trimcp.session.Session`.

A :class:`Client` is the session's handler (it answers the server's requests through its
:class:`~trimcp.client.handlers.ClientHandlers`) and the application's API (typed methods
for every client request). The openers in :mod:`trimcp.client.connect` create the session,
run the handshake and hand out a ready client; :meth:`Client.attach` does the handshake on
a session opened by hand.

Every request method waits in the calling task. Cancellation, for all of them: cancelling
the caller (a ``move_on_after``, a nursery being cancelled) sends
``notifications/cancelled`` to the server, shielded and bounded by
``SessionOptions.cancel_notify_timeout``; a late answer is dropped, and ``trio.Cancelled``
propagates as usual. They raise :class:`~trimcp.errors.McpError` with the server's error,
:class:`~trimcp.errors.RequestTimeout` when the timeout passes (the server has then been
told to cancel), :class:`~trimcp.errors.SessionClosed` when the session ends first, and
:class:`~trimcp.errors.LocalProtocolError` when the request is not allowed (for instance,
the server did not declare the capability it needs). A call a 2026 server runs as a task
(``call_tool`` of a task-capable tool) is still the caller's: cancelling it or its timeout
passing sends ``tasks/cancel`` for the task instead (see :meth:`Client.call_tool`).
"""

from __future__ import annotations

import functools
import logging
import weakref
from collections.abc import Awaitable, Callable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from typing import TYPE_CHECKING, Any, TypeVar, Unpack, cast, overload

import attrs
import trio

from trimcp import serde
from trimcp._validators import DEFAULT
from trimcp._version import __version__
from trimcp.client.agreement import Agreement
from trimcp.client.cache import DEFAULT_CACHE_ENTRIES, ResponseCache, cache_key
from trimcp.client.checks import check_str, json_object, string_map, timed_out
from trimcp.client.deadline import CallDeadline
from trimcp.client.errors import ToolOutputError
from trimcp.client.handlers import (
    ClientHandlers,
    HandlerKwargs,
    Progress,
    RootsProvider,
    call_maybe_async,
)
from trimcp.client.listen import (
    ACKNOWLEDGED,
    DEFAULT_MAX_BUFFERED,
    ListenRouter,
    Subscription,
    open_subscription,
)
from trimcp.client.middleware import (
    ClientMiddleware,
    ClientNext,
    OutgoingCall,
    build_client_chain,
)
from trimcp.client.mrtr import DEFAULT_MAX_INPUT_ROUNDS, with_input_rounds
from trimcp.client.negotiate import connect
from trimcp.client.pagination import PageIterator
from trimcp.client.schema import SchemaUnsupported, SchemaViolation, validate
from trimcp.client.stateless import Era, Mode, plan_for, with_meta
from trimcp.client.task_receiver import TaskReceiver
from trimcp.client.tasks import (
    TASKS_EXTENSION,
    TaskHandle,
    as_task,
    cancel_unreached_task,
    is_task_answer,
)
from trimcp.errors import (
    HEADER_MISMATCH,
    LocalProtocolError,
    McpError,
    RequestTimeout,
    UnexpectedResult,
)
from trimcp.protocol.extensions import check_identifier, settings_of
from trimcp.protocol.jsonrpc import RequestId
from trimcp.protocol.lifecycle import Role
from trimcp.protocol.methods import (
    CALL_TOOL,
    COMPLETE,
    DISCOVER,
    GET_PROMPT,
    LIST_PROMPTS,
    LIST_RESOURCE_TEMPLATES,
    LIST_RESOURCES,
    LIST_TASKS,
    LIST_TOOLS,
    METHODS,
    PING,
    READ_RESOURCE,
    SET_LOG_LEVEL,
    SUBSCRIBE,
    UNSUBSCRIBE,
    Method,
    expect_result,
)
from trimcp.protocol.negotiated import Negotiated
from trimcp.protocol.versions import LATEST_VERSION, SUPPORTED_VERSIONS
from trimcp.session import ProgressCallback, RequestContext, Session
from trimcp.session.late import LateAnswer
from trimcp.tasks.manager import TaskOptions
from trimcp.types import (
    CallToolRequestParams,
    CallToolResult,
    ClientCapabilities,
    CompleteRequestParams,
    CompleteResult,
    CompletionArgument,
    CompletionContext,
    CompletionReference,
    DiscoverResult,
    GetPromptRequestParams,
    GetPromptResult,
    Implementation,
    InitializeResult,
    ListPromptsResult,
    ListResourcesResult,
    ListResourceTemplatesResult,
    ListTasksResult,
    ListToolsResult,
    LoggingLevel,
    PaginatedRequestParams,
    Prompt,
    ReadResourceRequestParams,
    ReadResourceResult,
    RequestParams,
    Resource,
    ResourceTemplate,
    Root,
    SetLevelRequestParams,
    SubscribeRequestParams,
    SubscriptionFilter,
    SubscriptionsListenRequestParams,
    Task,
    TaskMetadata,
    Tool,
    UnsubscribeRequestParams,
)

if TYPE_CHECKING:
    from trimcp.client.apps import UiPage

logger = logging.getLogger("trimcp.client")

T = TypeVar("T")
P = TypeVar("P")
R = TypeVar("R")

#: Pages a listing iterator fetches before it gives up (a server may loop its cursors).
DEFAULT_MAX_PAGES = 100
#: Tool definitions remembered for output validation; the oldest are forgotten past this.
MAX_CACHED_TOOLS = 10_000
#: How long ``mode="auto"`` waits for an answer to ``server/discover`` before it decides
#: the server is a 2025 one that ignores unknown requests.
DEFAULT_DISCOVER_TIMEOUT = 10.0


class ClientKwargs(HandlerKwargs, total=False):
    """The keyword arguments of :class:`Client`, which every opener accepts too."""

    client_info: Implementation
    protocol_version: str
    mode: Mode
    log_level: LoggingLevel | None
    max_input_rounds: int
    discover_timeout: float
    cache_size: int
    max_pages: int
    validate_output: bool
    middleware: Sequence[ClientMiddleware]
    task_options: TaskOptions
    extensions: Mapping[str, Mapping[str, Any]]


class _Outgoing(OutgoingCall):
    __slots__ = ("send_options",)

    send_options: dict[str, Any]


class Client(Agreement):
    """A typed MCP client over one session (role client), on any transport.

    Use an opener (:func:`~trimcp.client.connect_stdio`, :func:`~trimcp.client.connect_memory`,
    :func:`~trimcp.client.connect_transport`); they take the keyword arguments below.

    ``client_info`` names this client (default ``trimcp`` and the package version).
    ``mode`` picks the protocol era (see :mod:`trimcp.client.stateless` and
    ``docs/eras.md``): ``"auto"`` (default) asks ``server/discover`` and speaks 2026-07-28
    with a server that answers it, else falls back to ``initialize``; ``"legacy"`` always
    sends ``initialize``; a version string pins that version. ``protocol_version`` is the
    revision offered in ``initialize`` (default the latest session revision).
    ``log_level`` asks for the server's log messages at that level and above (2026: in
    every request's ``_meta``; 2025: one ``logging/setLevel`` after connecting).
    ``max_input_rounds`` bounds the retries of one request that the server keeps
    answering with ``InputRequiredResult``; ``discover_timeout`` bounds the probe.
    ``cache_size`` bounds the response cache (:attr:`cache`, 0 turns it off): 2026 list
    and read results the server marks fresh (``ttlMs``) are answered from memory until
    they go stale or a change notification says otherwise (see :mod:`trimcp.client.cache`).
    ``max_pages`` bounds the ``iter_*`` listings; with ``validate_output`` (default on), a
    tool's ``structuredContent`` is checked against the ``outputSchema`` of its last listing
    (see :mod:`trimcp.client.schema` for the JSON Schema subset). ``middleware`` runs
    around every request after the handshake (see :mod:`trimcp.client.middleware`).
    ``task_options`` bounds the tasks the client runs for a 2025-11-25 server (sampling
    and elicitation as tasks; default
    :data:`~trimcp.client.task_receiver.CLIENT_TASK_OPTIONS`; see
    :mod:`trimcp.client.task_receiver`). The
    remaining keywords register handlers and callbacks: see
    :class:`~trimcp.client.handlers.ClientHandlers`.
    """

    def __init__(
        self,
        *,
        client_info: Implementation | None = None,
        protocol_version: str = LATEST_VERSION,
        mode: Mode = "auto",
        log_level: LoggingLevel | None = None,
        max_input_rounds: int = DEFAULT_MAX_INPUT_ROUNDS,
        discover_timeout: float = DEFAULT_DISCOVER_TIMEOUT,
        cache_size: int = DEFAULT_CACHE_ENTRIES,
        max_pages: int = DEFAULT_MAX_PAGES,
        validate_output: bool = True,
        middleware: Sequence[ClientMiddleware] = (),
        task_options: TaskOptions | None = None,
        extensions: Mapping[str, Mapping[str, Any]] | None = None,
        **handlers: Unpack[HandlerKwargs],
    ) -> None:
        if protocol_version not in SUPPORTED_VERSIONS:
            raise ValueError(
                f"protocol_version {protocol_version!r} is not one of {SUPPORTED_VERSIONS}"
            )
        if max_pages < 1:
            raise ValueError(f"max_pages must be >= 1, got {max_pages!r}")
        if max_input_rounds < 1:
            raise ValueError(f"max_input_rounds must be >= 1, got {max_input_rounds!r}")
        if not discover_timeout > 0:
            raise ValueError(f"discover_timeout must be > 0, got {discover_timeout!r}")
        self.client_info = client_info or Implementation(name="trimcp", version=__version__)
        self.requested_version = protocol_version
        self.mode = mode
        self._plan = plan_for(mode, protocol_version)
        self.log_level: LoggingLevel | None = log_level
        self.max_input_rounds = max_input_rounds
        self.discover_timeout = discover_timeout
        self.max_pages = max_pages
        self.validate_output = validate_output
        self.handlers = ClientHandlers(**handlers)
        #: The extensions this client declares: identifier -> settings.
        self.extensions: dict[str, dict[str, Any]] = {
            check_identifier(key): dict(value) for key, value in (extensions or {}).items()
        }
        #: Runs the server's task-augmented sampling/elicitation (2025-11-25).
        self.task_receiver = TaskReceiver(task_options)
        self._session: Session | None = None
        self._era: Era | None = None
        self._negotiated: Negotiated | None = None
        self._answer: InitializeResult | DiscoverResult | None = None
        self._tools: dict[str, Tool] = {}
        #: Fresh 2026 results (``ttlMs``), answered from memory; see :mod:`.cache`.
        self.cache = ResponseCache(cache_size)
        self._listeners = ListenRouter()
        self._listen_lock = trio.Lock()
        self._task_handles: weakref.WeakValueDictionary[str, TaskHandle] = (
            weakref.WeakValueDictionary()
        )
        self.middleware = tuple(middleware)
        self._chain: ClientNext | None = (
            build_client_chain(self.middleware, self._send) if self.middleware else None
        )

    # --- the handshake and the session ----------------------------------------------------

    async def attach(self, session: Session) -> Negotiated:
        """Connect over ``session``, which must have been opened with this client as its
        handler (role client): decide the era as ``mode`` says (``server/discover``, then
        ``initialize`` if the server is a 2025 one), declaring the capabilities the
        registered handlers imply. Returns what was agreed (also :attr:`negotiated`).

        Raises what connecting raised: the server's :class:`McpError`,
        :class:`RequestTimeout`, :class:`SessionClosed` (the server went away), or
        :class:`McpError` with code ``-32022`` when the server speaks no version we do.
        ``initialize`` cannot be cancelled on the wire; cancelling the caller leaves the
        session unusable, so close it.
        """
        if self._session is not None:
            raise LocalProtocolError("This client is already attached to a session")
        if session.role is not Role.CLIENT:
            raise LocalProtocolError("A Client needs a session opened with role=Role.CLIENT")
        self._session = session
        try:
            connected = await connect(
                session,
                self._plan,
                self.client_info,
                self.task_receiver.declare(self._capabilities(), self._plan.legacy_version),
                self.discover_timeout,
            )
        except RequestTimeout as exc:
            raise RequestTimeout(
                f"{exc.message}: the server did not answer the handshake (is it an MCP server, "
                "and does it speak this transport?); to wait longer, connect with "
                "options=SessionOptions(request_timeout=...)",
                exc.data,
            ) from None
        self._era, self._negotiated, self._answer = (
            connected.era,
            connected.negotiated,
            connected.answer,
        )
        if (
            connected.era is Era.LEGACY
            and self.log_level is not None
            and connected.negotiated.server_capabilities.logging is not None
        ):
            await self._request(SET_LOG_LEVEL, SetLevelRequestParams(level=self.log_level))
        return connected.negotiated

    def _capabilities(self) -> ClientCapabilities:
        capabilities = self.handlers.capabilities()
        if not self.extensions:
            return capabilities
        declared = {key: dict(value) for key, value in self.extensions.items()}
        return attrs.evolve(capabilities, extensions=declared)

    def extension(self, identifier: str) -> dict[str, Any] | None:
        """The settings the server declared for the extension ``identifier`` (``{}``: no
        optional features), or None when it did not declare it. Raises
        :class:`LocalProtocolError` before the client is connected."""
        return settings_of(self.server_capabilities, identifier)

    async def request(
        self,
        method: Method[P, R],
        params: P | Mapping[str, Any],
        *,
        timeout: float | None = DEFAULT,
    ) -> R:
        """Send ``method`` (an extension's row, see
        :func:`~trimcp.protocol.extensions.extension_method`, or a core one) and return
        its result as the row's result type (a free-form row: the decoded JSON).

        ``params``: the row's params type (an attrs instance), or a dict in wire form.
        Raises the server's :class:`McpError`, :class:`RequestTimeout`, or
        :class:`~trimcp.errors.UnexpectedResult` when the result does not fit.
        Cancellation: as every request (the server is told, and the call raises).
        """
        if method.name in METHODS:
            core: Method[Any, R] = method
            return await self._request(core, params, timeout=timeout)
        raw = await self._request(method.name, serde.unstructure(params), timeout=timeout)
        result_type = method.result_type
        if result_type is None:
            return cast("R", raw)
        try:
            return cast("R", serde.structure(raw, result_type))
        except serde.ShapeError as exc:
            raise UnexpectedResult(
                f"{method.name} was answered with a result that is not a "
                f"{result_type.__name__}: {exc}"
            ) from None

    def open_task_runner(self, session: Session | None = None) -> AbstractAsyncContextManager[None]:
        """Run the server's tasks for the body (the openers do this around :meth:`attach`);
        see :meth:`TaskReceiver.open <trimcp.client.task_receiver.TaskReceiver.open>`."""
        return self.task_receiver.open(session)

    async def aclose(self) -> None:
        """Close the session with the engine's bounded close sequence.

        Cancellation: the close runs in the session's own task; cancelling the caller only
        stops the waiting. The opener's ``async with`` block also closes on exit.
        """
        await self.session.aclose()

    # --- the SessionHandler contract (the server's requests and notifications) --------------

    async def handle_request(self, ctx: RequestContext) -> Any:
        """Answer a server request with the registered handler (``-32601`` if none), as a
        task when the server asks for one (:mod:`trimcp.client.task_receiver`)."""
        return await self.task_receiver.handle_request(ctx, self.handlers.handle_request)

    async def handle_notification(self, session: Session, method: str, params: Any) -> None:
        """Keep the tool cache honest, then run the registered callback."""
        if method == "notifications/tools/list_changed":
            # Output schemas may have changed; validate again only after a fresh listing.
            self._tools.clear()
        elif method == "notifications/tasks/status":
            handle = self._task_handles.get(getattr(params, "task_id", None) or "")
            if handle is not None:
                handle._notified(params)
        self.cache.invalidate(method, params)
        self._listeners.route(method, params)
        if method == ACKNOWLEDGED:
            return
        await self.handlers.handle_notification(session, method, params)

    # --- requests -------------------------------------------------------------------------

    @overload
    async def _request(
        self,
        method: Method[P, R],
        params: P,
        *,
        timeout: float | None = ...,
        target: str | None = ...,
        on_progress: ProgressCallback | None = ...,
        reset_timeout_on_progress: bool = ...,
        late_answer: LateAnswer | None = ...,
    ) -> R: ...

    @overload
    async def _request(
        self,
        method: str,
        params: Any,
        *,
        timeout: float | None = ...,
        target: str | None = ...,
        on_progress: ProgressCallback | None = ...,
        reset_timeout_on_progress: bool = ...,
        late_answer: LateAnswer | None = ...,
    ) -> Any: ...

    async def _request(
        self,
        method: Method[Any, Any] | str,
        params: Any,
        *,
        timeout: float | None = DEFAULT,
        target: str | None = None,
        on_progress: ProgressCallback | None = None,
        reset_timeout_on_progress: bool = False,
        late_answer: LateAnswer | None = None,
    ) -> Any:
        """Send one request through the cache and the middleware; a method of the table
        (a :class:`~trimcp.protocol.methods.Method`) comes back as its result type.
        ``late_answer``: what the session does with an answer that comes after the
        caller left (``on_late_answer`` of :meth:`Session.send_request`)."""
        if isinstance(method, Method):
            typed: Method[Any, Any] | None = method
            method = method.name
        else:
            typed = None
        kwargs: dict[str, Any] = {}
        if timeout is not DEFAULT:
            kwargs["timeout"] = timeout
        if late_answer is not None:
            kwargs["on_late_answer"] = late_answer
        key = None
        if self._era is Era.MODERN:
            key = cache_key(method, params)
            if key is not None:
                cached = self.cache.get(key, trio.current_time())
                if cached is not None:
                    return cached if typed is None else expect_result(typed, cached)
            params = with_meta(params, self._envelope())
        progress = self._progress_callback(method, target, on_progress)
        try:
            if self._chain is None:
                result = await self.session.send_request(
                    method,
                    params,
                    on_progress=progress,
                    reset_timeout_on_progress=reset_timeout_on_progress,
                    **kwargs,
                )
            else:
                call = _Outgoing(self, method, params, target)
                call.send_options = {
                    "on_progress": progress,
                    "reset_timeout_on_progress": reset_timeout_on_progress,
                    **kwargs,
                }
                result = await self._chain(call)
        except RequestTimeout as exc:
            raise timed_out(exc, method, target, default=timeout is DEFAULT) from None
        if key is not None:
            self.cache.put(key, result, trio.current_time())
        return result if typed is None else expect_result(typed, result)

    async def _send(self, call: OutgoingCall) -> Any:
        """The end of the middleware chain: send the request as the middleware left it."""
        options = call.send_options if isinstance(call, _Outgoing) else {}

        def sent(request_id: RequestId) -> None:
            call.request_id = request_id

        return await self.session.send_request(call.method, call.params, on_sent=sent, **options)

    async def _request_with_input(
        self,
        method: Method[Any, Any],
        params: Any,
        *,
        target: str | None,
        timeout: float | None = DEFAULT,
        on_progress: ProgressCallback | None = None,
        reset_timeout_on_progress: bool = False,
        deadline: CallDeadline | None = None,
        late_answer: LateAnswer | None = None,
    ) -> Any:
        """A request a 2026 server may answer with ``InputRequiredResult`` (see
        :func:`~trimcp.client.mrtr.with_input_rounds`); each attempt has its own
        ``timeout`` (``deadline`` restarts with each)."""

        async def attempt(attempt_params: Any) -> Any:
            if deadline is not None:
                deadline.restart()
            return await self._request(
                method.name,
                attempt_params,
                timeout=timeout,
                target=target,
                on_progress=on_progress,
                reset_timeout_on_progress=reset_timeout_on_progress,
                late_answer=late_answer,
            )

        return await with_input_rounds(
            attempt,
            params,
            self.handlers,
            self.session,
            self.max_input_rounds,
            method.name,
            target,
        )

    def _progress_callback(
        self, method: str, target: str | None, per_call: ProgressCallback | None
    ) -> ProgressCallback | None:
        global_callback = self.handlers.on_progress
        if global_callback is None:
            return per_call

        async def both(progress: float, total: float | None, message: str | None) -> None:
            if per_call is not None:
                await call_maybe_async(per_call, progress, total, message)
            update = Progress(
                method=method, target=target, progress=progress, total=total, message=message
            )
            await call_maybe_async(global_callback, update)

        return both

    async def ping(self, *, timeout: float | None = DEFAULT) -> None:
        """Check the server answers: ``ping`` (2025), or ``server/discover`` in 2026-07-28,
        which has no ``ping``. Raises :class:`RequestTimeout` when no answer comes within
        ``timeout`` (default ``SessionOptions.request_timeout``). Cancellation: see the
        module docstring."""
        if self._era is Era.MODERN:
            await self._request(DISCOVER, RequestParams(), timeout=timeout)
            return
        await self._request(PING, None, timeout=timeout)

    # Tools.

    async def list_tools(self, cursor: str | None = None) -> ListToolsResult:
        """One page of ``tools/list``; remembers each tool's output schema for validation.
        Cancellation: see the module docstring."""
        params = PaginatedRequestParams(cursor=cursor)
        result = await self._request(LIST_TOOLS, params)
        for tool in result.tools:
            self._remember(tool)
        return result

    def iter_tools(self, *, max_pages: int | None = None) -> PageIterator[Tool]:
        """Every tool, page after page (at most ``max_pages``, default the client's)."""

        async def fetch(cursor: str | None) -> tuple[list[Tool], str | None]:
            page = await self.list_tools(cursor)
            return page.tools, page.next_cursor

        return self._paginate("tools/list", fetch, max_pages)

    def _paginate(
        self,
        method: str,
        fetch: Callable[[str | None], Awaitable[tuple[list[T], str | None]]],
        max_pages: int | None,
    ) -> PageIterator[T]:
        return PageIterator(method, fetch, self.max_pages if max_pages is None else max_pages)

    def _remember(self, tool: Tool) -> None:
        self._tools.pop(tool.name, None)
        self._tools[tool.name] = tool
        if len(self._tools) > MAX_CACHED_TOOLS:
            del self._tools[next(iter(self._tools))]

    def known_tool(self, name: str) -> Tool | None:
        """The definition of ``name`` from the latest listing, if the client has seen it."""
        return self._tools.get(name)

    async def call_tool(
        self,
        name: str,
        arguments: Mapping[str, Any] | None = None,
        *,
        timeout: float | None = DEFAULT,
        on_progress: ProgressCallback | None = None,
        reset_timeout_on_progress: bool = False,
        meta: Mapping[str, Any] | None = None,
    ) -> CallToolResult:
        """Call a tool and return its result.

        A tool's own failure is a result with ``is_error=True``, not an exception.
        ``timeout``: seconds (default ``SessionOptions.request_timeout``; None: no limit);
        with ``reset_timeout_on_progress`` each progress notification restarts it, never
        past ``SessionOptions.max_request_timeout``. ``on_progress(progress, total,
        message)`` (plain or async) runs in this task for each progress notification.
        ``meta`` goes into the request's ``_meta``.

        When the client has listed this tool and its listing has an ``outputSchema``, a
        successful result must carry ``structuredContent`` matching it, else
        :class:`ToolOutputError` (which holds the result). In 2026-07-28, a call a
        server refuses with ``HeaderMismatch`` (-32020) is retried once after listing the
        tools again (their ``x-mcp-header`` annotations may have changed).

        A 2026-07-28 server may run the call as a task (a tool with ``task_support``
        optional or required; this client declares the tasks extension): the call then
        follows the task and returns its result, and stays the caller's call
        (:meth:`TaskHandle.follow`): ``timeout`` bounds the whole call, the request that
        created the task included (with ``reset_timeout_on_progress``, a change of the
        task's status or status message restarts it), and :class:`RequestTimeout` is
        raised as for a plain request.

        Cancellation: cancelling the caller sends ``notifications/cancelled`` (see the
        module docstring); while following a task, it sends ``tasks/cancel`` for it
        instead (shielded, bounded by ``SessionOptions.cancel_notify_timeout``), and on
        timeout too: the server cancels the task's scope. A caller cancelled (or timed
        out) before the answer naming the task arrived leaves no task running either: an
        answer that crosses the cancel is still looked at, and a task it names is
        cancelled in the session's nursery (bounded, see docs/concurrency.md), and a
        trimcp server cancels a task whose answer it could not hand over. To let work
        outlive the caller, use :meth:`call_tool_as_task`.
        """
        check_str("call_tool", "name", name)
        params = CallToolRequestParams(
            name=name,
            arguments=json_object(f"call_tool({name!r})", "arguments", arguments),
            meta=json_object(f"call_tool({name!r})", "meta", meta),
        )
        deadline = CallDeadline(self.session.options, timeout, reset_timeout_on_progress)
        for attempt in (1, 2):
            try:
                answer = await self._request_with_input(
                    CALL_TOOL,
                    params,
                    timeout=timeout,
                    target=name,
                    on_progress=on_progress,
                    reset_timeout_on_progress=reset_timeout_on_progress,
                    deadline=deadline,
                    late_answer=self._late_task_answer(),
                )
                break
            except McpError as exc:
                if exc.code != HEADER_MISMATCH or self._era is not Era.MODERN or attempt == 2:
                    raise
                # The tool's x-mcp-header annotations may have changed since our listing
                # (the spec: list the tools again, then retry once).
                self.cache.invalidate("notifications/tools/list_changed")
                async for _tool in self.iter_tools():
                    pass
        if is_task_answer(answer):
            # 2026-07-28: the server chose to run the call as a task (the client declares
            # the tasks extension). The caller asked for a call, not a task: follow it
            # within the call's deadline, and cancel it if the caller goes.
            handle = self._remember_task(TaskHandle(self, as_task(answer), modern=True))
            answer = await handle.follow(deadline, name)
        result = expect_result(CALL_TOOL, answer)
        if self.validate_output:
            self._check_output(name, result)
        return result

    async def call_tool_as_task(
        self,
        name: str,
        arguments: Mapping[str, Any] | None = None,
        *,
        ttl: float | None = None,
        timeout: float | None = DEFAULT,
        on_progress: ProgressCallback | None = None,
        meta: Mapping[str, Any] | None = None,
    ) -> TaskHandle:
        """Start a tool call as a task and return its :class:`TaskHandle` at once.

        ``ttl``: seconds the server should keep the task (its deadline too; the server
        may grant another value, see ``handle.status.ttl``). ``timeout`` bounds only the
        creating request. Then ``await handle.result()``, ``handle.status``,
        ``await handle.cancel()``, ``async for task in handle``; questions the task asks
        (elicitation, sampling) are answered by this client's registered handlers.
        ``on_progress`` gets the task's progress until it ends (2025-11-25), in order, in
        the session's notification task (its exceptions are logged, not raised).

        Raises :class:`LocalProtocolError` when the server did not declare task-augmented
        ``tools/call`` (capability ``tasks.requests.tools.call``), the server's
        :class:`McpError` otherwise (``-32601`` for a tool that cannot run as a task).
        Cancellation: cancelling the caller during the creating request sends
        ``notifications/cancelled`` (see the module docstring); at 2026-07-28 a task made
        meanwhile is cancelled too (nobody has its id: as for :meth:`call_tool`). Once
        the handle is returned, the task is the caller's to stop: it goes on until
        ``handle.cancel()``, its TTL or the server's shutdown, whatever happens to the code
        waiting on it (this is the one way to let work outlive its caller;
        :meth:`call_tool` cancels a task it follows).
        """
        if self.era is Era.MODERN:
            return await self._call_tool_as_task_modern(name, arguments, timeout, meta)
        caps = self.server_capabilities.tasks
        requests = caps.requests if caps is not None else None
        tools = requests.tools if requests is not None else None
        if tools is None or tools.call is None:
            raise LocalProtocolError(
                f"{self.server_info.name} cannot run tools as tasks: it did not declare "
                "the tasks.requests.tools.call capability; use call_tool() instead"
            )
        params = CallToolRequestParams(
            name=name,
            arguments=dict(arguments) if arguments is not None else None,
            meta=dict(meta) if meta is not None else None,
            task=TaskMetadata(ttl=round(ttl * 1000) if ttl is not None else None),
        )
        created = await self._request(
            CALL_TOOL.as_task(), params, timeout=timeout, target=name, on_progress=on_progress
        )
        return self._remember_task(TaskHandle(self, created.task))

    async def _call_tool_as_task_modern(
        self,
        name: str,
        arguments: Mapping[str, Any] | None,
        timeout: float | None,
        meta: Mapping[str, Any] | None,
    ) -> TaskHandle:
        extensions = self.server_capabilities.extensions or {}
        if TASKS_EXTENSION not in extensions:
            raise LocalProtocolError(
                f"{self.server_info.name} cannot run tools as tasks: it did not declare "
                f"the {TASKS_EXTENSION} extension; use call_tool() instead"
            )
        params = CallToolRequestParams(
            name=name,
            arguments=dict(arguments) if arguments is not None else None,
            meta=dict(meta) if meta is not None else None,
        )
        # The server decides (it may ask for input first, or answer at once).
        answer = await self._request_with_input(
            CALL_TOOL, params, timeout=timeout, target=name, late_answer=self._late_task_answer()
        )
        if is_task_answer(answer):
            return self._remember_task(TaskHandle(self, as_task(answer), modern=True))
        return TaskHandle.finished(self, expect_result(CALL_TOOL, answer))

    def _late_task_answer(self) -> LateAnswer | None:
        """For a ``tools/call`` the server may run as a task (2026-07-28): the answer that
        comes after its caller left may name a task nobody else can reach; cancel it."""
        if self._era is not Era.MODERN:
            return None
        return functools.partial(cancel_unreached_task, self)

    def _remember_task(self, handle: TaskHandle) -> TaskHandle:
        self._task_handles[handle.task_id] = handle
        return handle

    async def get_task(self, task_id: str) -> TaskHandle:
        """A :class:`TaskHandle` for a task created earlier (perhaps by another session or
        before a restart: keep task ids to resume). Fetches its state (``tasks/get``);
        raises :class:`McpError` ``-32602`` when the server does not know it (any more).
        """
        handle = self._task_handles.get(task_id)
        if handle is None:
            modern = self.era is Era.MODERN
            handle = TaskHandle(
                self,
                Task(
                    task_id=task_id, status="working", created_at="", last_updated_at="", ttl=None
                ),
                modern=modern,
            )
            await handle.refresh()
            self._remember_task(handle)
        return handle

    async def list_tasks(self, cursor: str | None = None) -> ListTasksResult:
        """One page of ``tasks/list`` (the tasks this client may see; 2025-11-25 only:
        the 2026 tasks extension has no listing)."""
        if self.era is Era.MODERN:
            raise LocalProtocolError("tasks/list does not exist in 2026-07-28 (tasks extension)")
        params = PaginatedRequestParams(cursor=cursor)
        return await self._request(LIST_TASKS, params)

    def _check_output(self, name: str, result: CallToolResult) -> None:
        tool = self._tools.get(name)
        if tool is None or tool.output_schema is None or result.is_error:
            return
        if result.structured_content is None:
            raise ToolOutputError(name, result, "", "structuredContent is missing")
        try:
            validate(result.structured_content, tool.output_schema)
        except SchemaViolation as exc:
            raise ToolOutputError(name, result, exc.path, exc.reason) from None
        except SchemaUnsupported as exc:
            logger.warning("not validating the output of tool %r: %s", name, exc)

    # Resources.

    async def list_resources(self, cursor: str | None = None) -> ListResourcesResult:
        """One page of ``resources/list``. Cancellation: see the module docstring."""
        params = PaginatedRequestParams(cursor=cursor)
        return await self._request(LIST_RESOURCES, params)

    def iter_resources(self, *, max_pages: int | None = None) -> PageIterator[Resource]:
        """Every resource, page after page (at most ``max_pages``)."""

        async def fetch(cursor: str | None) -> tuple[list[Resource], str | None]:
            page = await self.list_resources(cursor)
            return page.resources, page.next_cursor

        return self._paginate("resources/list", fetch, max_pages)

    async def list_resource_templates(
        self, cursor: str | None = None
    ) -> ListResourceTemplatesResult:
        """One page of ``resources/templates/list``. Cancellation: see the module docstring."""
        params = PaginatedRequestParams(cursor=cursor)
        return await self._request(LIST_RESOURCE_TEMPLATES, params)

    def iter_resource_templates(
        self, *, max_pages: int | None = None
    ) -> PageIterator[ResourceTemplate]:
        """Every resource template, page after page (at most ``max_pages``)."""

        async def fetch(cursor: str | None) -> tuple[list[ResourceTemplate], str | None]:
            page = await self.list_resource_templates(cursor)
            return page.resource_templates, page.next_cursor

        return self._paginate("resources/templates/list", fetch, max_pages)

    async def read_resource(
        self, uri: str, *, timeout: float | None = DEFAULT
    ) -> ReadResourceResult:
        """Read one resource. Cancellation: see the module docstring."""
        check_str("read_resource", "uri", uri)
        params = ReadResourceRequestParams(uri=uri)
        answer = await self._request_with_input(READ_RESOURCE, params, timeout=timeout, target=uri)
        return expect_result(READ_RESOURCE, answer)

    async def ui_resource(self, tool: Tool | str) -> UiPage:
        """The MCP Apps page of ``tool`` (a :class:`Tool`, a tool name or a ``ui://`` URI):
        its HTML and security metadata, for a host to render (see
        :mod:`trimcp.client.apps`). Raises ``LookupError`` for a tool without a page and
        :class:`~trimcp.client.apps.UiResourceError` for a page served wrongly.
        Cancellation: as :meth:`read_resource`."""
        from trimcp.client.apps import read_page  # only hosts rendering apps load it

        return await read_page(self, tool)

    async def subscribe_resource(self, uri: str) -> None:
        """Ask for ``notifications/resources/updated`` about ``uri`` (``on_resource_updated``).
        Needs the server's ``resources.subscribe``. 2026-07-28 has no such request: use
        :meth:`listen` with ``resource_subscriptions`` (raises :class:`LocalProtocolError`).
        Cancellation: see the module docstring."""
        self._no_session_request("resources/subscribe")
        await self._request(SUBSCRIBE, SubscribeRequestParams(uri=uri), target=uri)

    async def unsubscribe_resource(self, uri: str) -> None:
        """Stop the updates about ``uri`` (2025 only, as :meth:`subscribe_resource`).
        Cancellation: see the module docstring."""
        self._no_session_request("resources/unsubscribe")
        await self._request(UNSUBSCRIBE, UnsubscribeRequestParams(uri=uri), target=uri)

    def _no_session_request(self, method: str) -> None:
        if self._era is Era.MODERN:
            raise LocalProtocolError(
                f"{method} does not exist in 2026-07-28: open a subscription with "
                "client.listen(resource_subscriptions=[...]) instead"
            )

    # Prompts.

    async def list_prompts(self, cursor: str | None = None) -> ListPromptsResult:
        """One page of ``prompts/list``. Cancellation: see the module docstring."""
        params = PaginatedRequestParams(cursor=cursor)
        return await self._request(LIST_PROMPTS, params)

    def iter_prompts(self, *, max_pages: int | None = None) -> PageIterator[Prompt]:
        """Every prompt, page after page (at most ``max_pages``)."""

        async def fetch(cursor: str | None) -> tuple[list[Prompt], str | None]:
            page = await self.list_prompts(cursor)
            return page.prompts, page.next_cursor

        return self._paginate("prompts/list", fetch, max_pages)

    async def get_prompt(
        self,
        name: str,
        arguments: Mapping[str, str] | None = None,
        *,
        timeout: float | None = DEFAULT,
    ) -> GetPromptResult:
        """Render a prompt with ``arguments``. Cancellation: see the module docstring."""
        check_str("get_prompt", "name", name)
        params = GetPromptRequestParams(
            name=name, arguments=string_map(f"get_prompt({name!r})", "arguments", arguments)
        )
        answer = await self._request_with_input(GET_PROMPT, params, timeout=timeout, target=name)
        return expect_result(GET_PROMPT, answer)

    # Subscriptions (2026-07-28).

    def listen(
        self,
        *,
        tools_list_changed: bool = False,
        prompts_list_changed: bool = False,
        resources_list_changed: bool = False,
        resource_subscriptions: Sequence[str] = (),
        max_buffered: int = DEFAULT_MAX_BUFFERED,
        ack_timeout: float = DEFAULT_DISCOVER_TIMEOUT,
    ) -> AbstractAsyncContextManager[Subscription]:
        """Open a ``subscriptions/listen`` stream for the kinds of change asked for (at
        least one), as ``async with client.listen(...) as sub: async for event in sub``.

        Each :class:`~trimcp.client.listen.ListenEvent` also runs the matching
        ``on_*_list_changed`` / ``on_resource_updated`` callback. 2026-07-28 only (raises
        :class:`LocalProtocolError` in a 2025 session: use those callbacks and
        :meth:`subscribe_resource` there). Raises the server's :class:`McpError` if it
        refuses, :class:`~trimcp.client.listen.ListenNotAcknowledged` (a
        ``trio.TooSlowError``) if it does not acknowledge within ``ack_timeout``.
        Cancellation: leaving the block ends the subscription on the wire (stdio:
        ``notifications/cancelled``; HTTP: the stream is closed).
        """
        if self.era is not Era.MODERN:
            raise LocalProtocolError(
                "subscriptions/listen needs 2026-07-28; this session speaks "
                f"{self.protocol_version}: use the on_*_list_changed callbacks and "
                "subscribe_resource() instead"
            )
        wanted = SubscriptionFilter(
            tools_list_changed=tools_list_changed or None,
            prompts_list_changed=prompts_list_changed or None,
            resources_list_changed=resources_list_changed or None,
            resource_subscriptions=list(resource_subscriptions) or None,
        )
        if wanted == SubscriptionFilter():
            raise LocalProtocolError("listen() needs at least one kind of change to listen for")

        async def send(params: SubscriptionsListenRequestParams) -> Any:
            return await self._request("subscriptions/listen", params, timeout=None)

        return open_subscription(
            send,
            self._listeners,
            self._listen_lock,
            wanted,
            max_buffered=max_buffered,
            ack_timeout=ack_timeout,
            server=repr(self.server_info.name),
        )

    # Completion, logging, roots.

    async def complete(
        self,
        ref: CompletionReference,
        argument_name: str,
        value: str,
        *,
        context_arguments: Mapping[str, str] | None = None,
        timeout: float | None = DEFAULT,
    ) -> CompleteResult:
        """Ask for completions of ``argument_name`` (partial ``value``) of a prompt or a
        resource template (``ref``); ``context_arguments`` are values already chosen.
        Needs the server's ``completions`` capability. Cancellation: see the module
        docstring."""
        params = CompleteRequestParams(
            ref=ref,
            argument=CompletionArgument(name=argument_name, value=value),
            context=CompletionContext(
                arguments=string_map("complete", "context_arguments", context_arguments)
            )
            if context_arguments is not None
            else None,
        )
        return await self._request(COMPLETE, params, timeout=timeout)

    async def set_logging_level(self, level: LoggingLevel) -> None:
        """Ask the server to send log messages at ``level`` and above (``on_log_message``).
        2025: sends ``logging/setLevel``. 2026-07-28: every later request carries
        ``level`` in its ``_meta`` (the server sends log messages only for requests that
        ask); nothing is sent now. Cancellation: see the module docstring."""
        if self._era is Era.MODERN:
            self.log_level = level
            return
        await self._request(SET_LOG_LEVEL, SetLevelRequestParams(level=level))
        self.log_level = level

    async def notify_roots_changed(self) -> None:
        """Send ``notifications/roots/list_changed`` (needs ``roots`` to be registered).
        2026-07-28 has no such notification (the server asks for the roots each time it
        needs them), so nothing is sent there. Cancellation: atomic; the notification is
        queued whole or not at all."""
        if self._era is Era.MODERN:
            return
        await self.session.send_notification("notifications/roots/list_changed")

    async def set_roots(self, roots: Sequence[Root] | RootsProvider) -> None:
        """Replace the roots and tell the server. Only when roots were registered at
        connect time (the capability is declared then); raises
        :class:`LocalProtocolError` otherwise. Cancellation: as :meth:`notify_roots_changed`.
        """
        if self.handlers.roots is None:
            raise LocalProtocolError(
                "roots were not registered when connecting, so the capability is not declared"
            )
        self.handlers.roots = roots
        await self.notify_roots_changed()
