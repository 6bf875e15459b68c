"""The :class:`Context` a tool, resource, prompt or completer receives.

Declare a parameter annotated ``Context`` (or named ``ctx``) and the framework passes the
context of the request being answered. Through it a handler reports progress, logs to the
client, asks the client's LLM (sampling), asks the user (elicitation), reads the client's
roots, and reads this server's own resources. Everything it sends is tied to the request,
so on Streamable HTTP it travels on that request's stream.

Cancellation: the handler runs inside the request's cancel scope. When the client cancels
the request (or the session closes), every ``await`` here raises ``trio.Cancelled``; a
request to the client that was in flight is cancelled at the client too.

Both eras, one body. In a session (2025-11-25 and earlier) ``ctx.elicit``, ``ctx.sample``
and ``ctx.list_roots`` send requests to the client and wait. A 2026-07-28 request has no
session: there the first question whose answer the client's retry does not carry yet ends
the attempt with ``input_required`` (``trio.Cancelled`` inside the handler), and the retry
runs the handler again, this time with the answer (see
:mod:`trimcp.server.input_required`). Log messages of a 2026 request go to that request's
stream only, at the level its ``_meta`` asks for (none when it asks for none).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal, Protocol, TypeVar, cast, overload

from trimcp import serde
from trimcp._validators import DEFAULT
from trimcp.auth.principal import AuthInfo
from trimcp.errors import INVALID_PARAMS, LocalProtocolError, RemoteProtocolError
from trimcp.protocol import modern
from trimcp.protocol.admission import has_capability
from trimcp.protocol.extensions import settings_of
from trimcp.protocol.negotiated import IMPLICIT_CLIENT_NAME, Negotiated
from trimcp.protocol.versions import V2025_06_18, V2025_11_25
from trimcp.server.convert import ValidationError
from trimcp.server.input_required import ask
from trimcp.server.logging import check_level, json_data, level_enabled
from trimcp.session.context import RequestContext
from trimcp.types import (
    ClientCapabilities,
    Implementation,
    LoggingLevel,
    LoggingMessageNotificationParams,
    ResourceContents,
    TextContent,
    Tool,
)

if TYPE_CHECKING:
    # Sampling, elicitation and roots are imported where they are used: a server that
    # never asks its client for them never loads those wire types (a cold start).
    from trimcp.server.elicitation import ElicitationOutcome
    from trimcp.server.state import Handles, StateKeeper, UserState
    from trimcp.server.tools import RegisteredTool
    from trimcp.session.engine import Session
    from trimcp.types import (
        CreateMessageResult,
        ModelPreferences,
        Root,
        SamplingMessage,
        ToolChoice,
    )

T = TypeVar("T")


class ServerApi(Protocol):
    """The server answering a request, as its :class:`Context` sees it
    (:attr:`Context.server`): a :class:`trimcp.Server`. What a handler and the context
    itself ask of it; the context needs nothing else of the framework, so it does not
    import the server's module."""

    @property
    def info(self) -> Implementation: ...
    @property
    def mask_error_details(self) -> bool: ...
    @property
    def state(self) -> StateKeeper: ...
    @property
    def lifespan_value(self) -> Any: ...
    def session_values(self, session: Session) -> dict[str, Any]: ...
    async def send_log(
        self,
        session: Session,
        level: LoggingLevel,
        data: Any,
        logger: str | None = None,
        related_request_id: int | str | None = None,
    ) -> None: ...
    def sampling_tools(self, tools: Sequence[Tool | str]) -> list[Tool]: ...
    async def read_resource_contents(self, uri: str, ctx: Context) -> list[ResourceContents]: ...
    def get_tool(self, name: str) -> RegisteredTool[Any, Any] | None: ...
    async def notify_resource_updated(self, uri: str) -> None: ...


IncludeContext = Literal["none", "thisServer", "allServers"]


class Context:
    """The request being answered, and what a handler may do while answering it."""

    __slots__ = ("_request", "_server", "_values")

    def __init__(self, server: ServerApi, request: RequestContext) -> None:
        self._server = server
        self._request = request
        self._values: dict[str, Any] | None = None

    # --- what this request is --------------------------------------------------------

    @property
    def server(self) -> ServerApi:
        """The :class:`~trimcp.server.app.Server` answering (typed by what a handler asks
        of it: :class:`ServerApi`)."""
        return self._server

    @property
    def request_context(self) -> RequestContext:
        """The engine's view of the request (cancel scope, raw params)."""
        return self._request

    @property
    def request_id(self) -> int | str:
        return self._request.request_id

    @property
    def session(self) -> Session | None:
        """The session of a session-era request; None for a 2026-07-28 request."""
        return self._request.session

    @property
    def stateless(self) -> bool:
        """Whether this is a 2026-07-28 request (no session; see the module docstring)."""
        return self._request.session is None

    @property
    def trace(self) -> modern.TraceContext | None:
        """W3C trace context (``traceparent``, ``tracestate``, ``baggage``) from the
        request's ``_meta``, when the client sent it."""
        return self._request.trace

    @property
    def negotiated(self) -> Negotiated | None:
        """Version, client identity and capabilities in force for this request."""
        return self._request.negotiated

    @property
    def client_info(self) -> Implementation | None:
        negotiated = self.negotiated
        return negotiated.client_info if negotiated else None

    @property
    def client_capabilities(self) -> ClientCapabilities | None:
        negotiated = self.negotiated
        return negotiated.client_capabilities if negotiated else None

    def extension(self, identifier: str) -> dict[str, Any] | None:
        """The settings the client declared for the extension ``identifier`` (``{}``: no
        optional features), or None when it did not declare it: per session in 2025
        (its ``initialize``), per request in 2026-07-28 (the request's ``_meta``)."""
        negotiated = self._request.negotiated
        if negotiated is None:
            return None
        return settings_of(negotiated.client_capabilities, identifier)

    @property
    def protocol_version(self) -> str | None:
        negotiated = self.negotiated
        return negotiated.protocol_version if negotiated else None

    @property
    def lifespan(self) -> Any:
        """What the server's lifespan yielded (see :mod:`trimcp.server.lifespan`).

        Raises :class:`~trimcp.server.lifespan.LifespanNotRunning` when it is not running.
        """
        return self._server.lifespan_value

    @property
    def session_state(self) -> dict[str, Any]:
        """A dict that lives as long as this session (session era): per-client state.

        Empty at first; what a handler stores is seen by later requests of the same
        session only. A 2026-07-28 stateless request has no session: its dict lives for
        the request alone. For state that outlives a call in both eras and on every
        replica, use :attr:`user_state` or :attr:`handles`.
        """
        session = self._request.session
        if session is None:
            if self._values is None:
                self._values = {}
            return self._values
        return self._server.session_values(session)

    @property
    def user_state(self) -> UserState:
        """The caller's own values, kept across calls, sessions, both eras and every
        replica sharing the server's store (see :class:`~trimcp.server.state.UserState`
        and docs/state.md): ``await ctx.user_state.get(key)``, ``.set(key, value)``,
        ``.update(key, fn)``, ``.delete(key)``. Keyed by the caller's principal: an
        anonymous caller gets :class:`~trimcp.server.state.NoPrincipal` saying so."""
        return self._server.state.user_state(self._request.principal)

    @property
    def handles(self) -> Handles:
        """Mint handles for state (``await ctx.handles.mint("cart", [])``) and open the
        ones callers pass back (``ctx.handles.open(handle, "cart")``): sealed, bound to
        the caller and to an expiry (see :class:`~trimcp.server.state.Handles`)."""
        return self._server.state.handles(self._request.principal)

    @property
    def cancel_requested(self) -> bool:
        """Whether the request was cancelled (by the client, a timeout or shutdown)."""
        return self._request.cancel_requested

    @property
    def auth(self) -> AuthInfo | None:
        """Who is calling: the verified access token's :class:`~trimcp.auth.AuthInfo`
        (subject, client id, scopes, claims, expiry) when the HTTP server protects this
        server (``HttpServerConfig(auth=...)``); what an ``authenticate`` hook returned;
        None for an unprotected transport (stdio, memory, plain HTTP).

        It is the principal recorded on this request's own context when the request
        arrived (never state shared with other requests of the connection or session)."""
        principal: Any = self._request.principal
        return cast("AuthInfo | None", principal)

    # --- progress and logging --------------------------------------------------------

    async def report_progress(
        self, progress: float, total: float | None = None, message: str | None = None
    ) -> None:
        """Tell the client how far along the request is; a no-op if it asked for no progress.

        ``progress`` must grow from call to call (else :class:`LocalProtocolError`).
        Cancellation: atomic (sent whole or not at all); may wait while the outbox is full.
        """
        await self._request.report_progress(progress, total, message)

    async def log(self, level: LoggingLevel, data: Any, *, logger: str | None = None) -> None:
        """Send a log message to the client, if the client's level lets it through.

        ``data`` is any JSON value (a string, or an object with details). Levels are
        RFC 5424's (``debug`` < ``info`` < ``notice`` < ``warning`` < ``error`` <
        ``critical`` < ``alert`` < ``emergency``); the client picks its threshold with
        ``logging/setLevel`` (2026-07-28: with the request's ``_meta`` log level; a
        request without one gets no log messages). Cancellation: atomic, as for
        :meth:`report_progress`.
        """
        session = self._request.session
        if session is not None:
            await self._server.send_log(session, level, data, logger, self.request_id)
            return
        negotiated = self.negotiated
        wanted = negotiated.log_level if negotiated is not None else None
        level = check_level(level)
        if wanted is None or not level_enabled(wanted, level):
            return
        params = LoggingMessageNotificationParams(level=level, data=json_data(data), logger=logger)
        await self._request.send_notification("notifications/message", params)

    async def debug(self, data: Any, *, logger: str | None = None) -> None:
        await self.log("debug", data, logger=logger)

    async def info(self, data: Any, *, logger: str | None = None) -> None:
        await self.log("info", data, logger=logger)

    async def notice(self, data: Any, *, logger: str | None = None) -> None:
        await self.log("notice", data, logger=logger)

    async def warning(self, data: Any, *, logger: str | None = None) -> None:
        await self.log("warning", data, logger=logger)

    async def error(self, data: Any, *, logger: str | None = None) -> None:
        await self.log("error", data, logger=logger)

    # --- asking the client -----------------------------------------------------------

    def _require(self, feature: str, *path: str) -> None:
        # From the negotiated value, not the connection: a stateless (2026-07-28) request
        # carries its client's capabilities itself.
        caps = self.client_capabilities
        if caps is None or not has_capability(serde.unstructure(caps), path):
            if self.stateless:
                required: dict[str, Any] = {}
                node = required
                for name in path:
                    node[name] = {}
                    node = node[name]
                raise modern.missing_capabilities(required)
            client = self.client_info.name if self.client_info else "The client"
            if client == IMPLICIT_CLIENT_NAME:
                raise LocalProtocolError(
                    f"{feature} is not available: this server runs in stateless HTTP mode "
                    f"(--stateless), where it cannot send requests to the client; serve it "
                    f"without --stateless, or connect with protocol 2026-07-28, where the "
                    f"server asks through input_required"
                )
            raise LocalProtocolError(
                f"{client} does not support {feature}: it did not declare the "
                f"'{'.'.join(path)}' capability when it connected"
            )

    def _require_version(self, feature: str, first: str) -> None:
        version = self.protocol_version
        if version is not None and version < first:
            raise LocalProtocolError(
                f"{feature} needs protocol version {first} or later; this session uses {version}"
            )

    async def sample(
        self,
        messages: str | SamplingMessage | Sequence[str | SamplingMessage],
        *,
        max_tokens: int,
        system_prompt: str | None = None,
        temperature: float | None = None,
        stop_sequences: Sequence[str] | None = None,
        model_preferences: ModelPreferences | str | Sequence[str] | None = None,
        include_context: IncludeContext | None = None,
        tools: Sequence[Tool | str] | None = None,
        tool_choice: ToolChoice | Literal["auto", "required", "none"] | None = None,
        metadata: Mapping[str, Any] | None = None,
        timeout: float | None = DEFAULT,
        key: str | None = None,
    ) -> CreateMessageResult:
        """Ask the client's LLM for a message (``sampling/createMessage``).

        ``messages``: a string (one user message) or a list of strings / messages.
        ``model_preferences``: a :class:`ModelPreferences`, or model name hints.
        ``tools``: tool definitions the model may call, or names of this server's tools.
        ``timeout``: seconds to wait (default: the session's request timeout).
        ``key``: 2026-07-28 only, the key of this question in ``inputRequests`` (default:
        ``sampling-1``, ``sampling-2``... in the order asked).

        Raises :class:`LocalProtocolError` when the client did not declare sampling (or
        ``sampling.tools`` for ``tools``, ``sampling.context`` for ``include_context``;
        2026-07-28: ``McpError`` ``-32021`` naming the missing capability),
        :class:`RequestTimeout`, or the client's error as :class:`McpError`.
        Cancellation: the request is cancelled at the client too, then ``Cancelled``
        propagates.
        """
        self._require("sampling", "sampling")
        if tools is not None or tool_choice is not None:
            self._require("sampling with tools", "sampling", "tools")
        if include_context not in (None, "none"):
            self._require("sampling with included context", "sampling", "context")
        from trimcp.types import CreateMessageRequestParams, CreateMessageResult, ToolChoice

        params = CreateMessageRequestParams(
            messages=_sampling_messages(messages),
            max_tokens=max_tokens,
            system_prompt=system_prompt,
            temperature=temperature,
            stop_sequences=list(stop_sequences) if stop_sequences is not None else None,
            model_preferences=_model_preferences(model_preferences),
            include_context=include_context,
            tools=self._server.sampling_tools(tools) if tools is not None else None,
            tool_choice=ToolChoice(mode=tool_choice)
            if isinstance(tool_choice, str)
            else tool_choice,
            metadata=dict(metadata) if metadata is not None else None,
        )
        result: CreateMessageResult = await self._send(
            "sampling/createMessage", params, timeout, key, CreateMessageResult
        )
        return result

    @overload
    async def elicit(
        self,
        message: str,
        schema: type[T],
        *,
        timeout: float | None = ...,
        key: str | None = ...,
    ) -> ElicitationOutcome[T]: ...
    @overload
    async def elicit(
        self,
        message: str,
        schema: Mapping[str, Any],
        *,
        timeout: float | None = ...,
        key: str | None = ...,
    ) -> ElicitationOutcome[dict[str, Any]]: ...
    async def elicit(
        self,
        message: str,
        schema: Any,
        *,
        timeout: float | None = DEFAULT,
        key: str | None = None,
    ) -> ElicitationOutcome[Any]:
        """Ask the user to fill in a form (``elicitation/create``, form mode).

        ``schema`` is an attrs class, dataclass or TypedDict of primitive fields (see
        :mod:`trimcp.server.elicitation`), or a restricted JSON Schema as a dict. On
        accept, ``outcome.data`` is an instance of that type (the dict of answers for a
        dict schema). Raises :class:`LocalProtocolError` when the client does not support
        form elicitation (or the protocol version predates it), ``TypeError`` /
        ``ValueError`` for a type that cannot be a form, and :class:`RemoteProtocolError`
        when the client accepts with answers that do not fit the form. Waits as long as
        the user takes, up to ``timeout`` (default: the session's request timeout).
        ``key``: as for :meth:`sample` (default ``elicitation-1``...). Cancellation: as
        for :meth:`sample`.
        """
        self._require_version("Elicitation", V2025_06_18)
        self._require("elicitation", "elicitation")
        caps = self.client_capabilities
        elicitation = caps.elicitation if caps else None
        if elicitation is not None and elicitation.form is None and elicitation.url is not None:
            raise LocalProtocolError(
                "The client supports only URL-mode elicitation, not forms; use elicit_url()"
            )
        from trimcp.server.elicitation import ElicitationOutcome, build_form
        from trimcp.types import ElicitRequestFormParams, ElicitResult

        form = build_form(schema, self.protocol_version)
        mode: Literal["form"] | None = (
            "form" if (self.protocol_version or "") >= V2025_11_25 else None
        )
        params = ElicitRequestFormParams(message=message, requested_schema=form.schema, mode=mode)
        result: ElicitResult = await self._send(
            "elicitation/create", params, timeout, key, ElicitResult
        )
        if result.action != "accept":
            return ElicitationOutcome(result.action)
        content = dict(result.content or {})
        try:
            data = form.read(content)
        except ValidationError as exc:
            raise RemoteProtocolError(
                INVALID_PARAMS,
                f"The client's answer does not fit the form: {exc}",
                {"path": exc.path, "reason": exc.reason},
            ) from None
        return ElicitationOutcome("accept", data, content)

    async def elicit_url(
        self,
        message: str,
        url: str,
        elicitation_id: str,
        *,
        timeout: float | None = DEFAULT,
        key: str | None = None,
    ) -> ElicitationOutcome[None]:
        """Ask the user to visit ``url`` (``elicitation/create``, URL mode; 2025-11-25).

        ``accept`` means the user agreed to open the URL, not that the interaction there
        is done: call :meth:`notify_elicitation_complete` when it is. Raises
        :class:`LocalProtocolError` when the client did not declare ``elicitation.url``.
        2026-07-28 has no completion notification (the client retries once the user is
        done) and no elicitation id on the wire. Cancellation: as for :meth:`sample`.
        """
        self._require_version("URL-mode elicitation", V2025_11_25)
        self._require("URL-mode elicitation", "elicitation", "url")
        from trimcp.server.elicitation import ElicitationOutcome
        from trimcp.types import ElicitRequestURLParams, ElicitResult

        params = ElicitRequestURLParams(
            message=message, url=url, elicitation_id=None if self.stateless else elicitation_id
        )
        result: ElicitResult = await self._send(
            "elicitation/create", params, timeout, key, ElicitResult
        )
        return ElicitationOutcome(result.action)

    async def notify_elicitation_complete(self, elicitation_id: str) -> None:
        """Tell the client the out-of-band interaction of a URL elicitation has finished.

        Cancellation: atomic (sent whole or not at all).
        """
        self._require_version("URL-mode elicitation", V2025_11_25)
        if self.stateless:
            raise LocalProtocolError(
                "2026-07-28 has no notifications/elicitation/complete: the client retries "
                "the request once the user is done"
            )
        await self._request.send_notification(
            "notifications/elicitation/complete", {"elicitationId": elicitation_id}
        )

    async def list_roots(
        self, *, timeout: float | None = DEFAULT, key: str | None = None
    ) -> list[Root]:
        """The client's roots (``roots/list``).

        Raises :class:`LocalProtocolError` when the client did not declare ``roots``
        (2026-07-28: ``McpError`` ``-32021``). ``key``: as for :meth:`sample` (default
        ``roots-1``...). Cancellation: as for :meth:`sample`.
        """
        self._require("roots", "roots")
        from trimcp.types import ListRootsResult

        result: ListRootsResult = await self._send(
            "roots/list", None, timeout, key, ListRootsResult
        )
        return result.roots

    async def read_resource(self, uri: str) -> list[ResourceContents]:
        """Read one of this server's own resources, as a client would.

        Raises :class:`McpError` ``-32002`` for an unknown URI. Cancellation: whatever the
        resource function does.
        """
        return await self._server.read_resource_contents(uri, self)

    async def _send(
        self,
        method: str,
        params: Any,
        timeout: float | None,
        key: str | None,
        result_type: type[Any],
    ) -> Any:
        if self.stateless:
            # 2026-07-28: the answer comes with the client's retry (input_required).
            wire = serde.unstructure(params) if params is not None else None
            return await ask(method, wire, result_type, key)
        if timeout is DEFAULT:
            return await self._request.send_request(method, params)
        return await self._request.send_request(method, params, timeout=timeout)


def _sampling_messages(
    messages: str | SamplingMessage | Sequence[str | SamplingMessage],
) -> list[SamplingMessage]:
    from trimcp.types import SamplingMessage

    if isinstance(messages, str | SamplingMessage):
        messages = [messages]
    return [
        SamplingMessage(role="user", content=TextContent(text=m)) if isinstance(m, str) else m
        for m in messages
    ]


def _model_preferences(
    value: ModelPreferences | str | Sequence[str] | None,
) -> ModelPreferences | None:
    from trimcp.types import ModelHint, ModelPreferences

    if value is None or isinstance(value, ModelPreferences):
        return value
    names = [value] if isinstance(value, str) else list(value)
    return ModelPreferences(hints=[ModelHint(name=name) for name in names])
