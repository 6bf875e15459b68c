"""Another MCP server's components, served by this one: a provider (see
:mod:`trimcp.server.providers`).

    app = trimcp.Server("assistant")
    app.add_provider(
        ProxyProvider.for_command(["python", "weather.py"]), transforms=[Namespace("wx")]
    )

While the serving server's lifespan runs, the provider holds one client connection to the
backend (a stdio command, a URL, or any transport; in the era the backend speaks: the
client asks ``server/discover`` first and falls back to ``initialize``). It lists the
backend's tools, prompts, resources and templates (every page) when it opens, and again
when the backend says a list changed (``notifications/*/list_changed`` in a session,
a ``subscriptions/listen`` stream in 2026-07-28); this server's clients are then told
theirs changed. A call, get or read is sent to the backend as the caller's own request:
in the caller's task and cancel scope (cancelling it cancels the backend's), with its
progress passed on; the backend's answer comes back as it is (a tool's error result
stays one, a JSON-RPC error is raised to the caller).

Unlike :class:`~trimcp.proxy.ProxyServer`, which relays a whole session, this composes:
the backend's components sit next to this server's own, behind its transforms, scopes,
pagination and cache hints. The backend cannot ask this server's callers anything
(sampling, elicitation and roots are not declared to it); serve it through
:class:`~trimcp.proxy.ProxyServer` when it needs to. A backend that cannot be reached
when the lifespan opens stops the server from serving (``LifespanFailed`` naming it).
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any

import attrs
import trio

from trimcp.client import Client, Era
from trimcp.errors import INTERNAL_ERROR, McpError
from trimcp.server.providers import KINDS, Kind, Provider, key_of
from trimcp.server.registry import Handle
from trimcp.server.tools import SchemaTool
from trimcp.server.uri_template import UriTemplate
from trimcp.session.transport import Transport
from trimcp.types import (
    CallToolResult,
    GetPromptResult,
    Prompt,
    Resource,
    ResourceContents,
    ResourceTemplate,
    Tool,
)

logger = logging.getLogger("trimcp.proxy")

#: Opens a connected client to the backend for the body, with these client options (the
#: list-changed callbacks).
ClientFactory = Callable[..., AbstractAsyncContextManager[Client]]

_NOTIFICATIONS: Mapping[str, Kind] = {
    "on_tools_list_changed": "tools",
    "on_prompts_list_changed": "prompts",
    "on_resources_list_changed": "resources",
}


class ProxyProvider(Provider):
    """The components of the MCP server ``connect`` reaches (see the module docstring).

    ``connect(**client_options)`` opens a connected :class:`~trimcp.client.Client` for the
    body of an ``async with`` (see :meth:`for_command`, :meth:`for_url`,
    :meth:`for_transport`); ``label`` names the backend in errors.
    """

    def __init__(self, connect: ClientFactory, *, label: str = "the proxied server") -> None:
        self._connect = connect
        self.label = label
        self._client: Client | None = None
        self._listed: dict[Kind, list[Any]] = {kind: [] for kind in KINDS}
        self._by_key: dict[Kind, dict[str, Any]] = {kind: {} for kind in KINDS}
        self._stale: set[Kind] = set()
        self._wake = trio.Event()
        #: The serving servers whose lifespan holds the connection (it closes with the
        #: first to end, as a shared lifespan does).
        self._users = 0

    def __repr__(self) -> str:
        return f"<ProxyProvider {self.label!r}>"

    @classmethod
    def for_command(
        cls, argv: Sequence[str], *, env: Mapping[str, str] | None = None, **client: Any
    ) -> ProxyProvider:
        """The stdio server ``argv`` (spawned when the serving server's lifespan opens);
        ``client``: :class:`~trimcp.client.Client` options (``mode``, ``client_info``...)."""
        from trimcp.client import connect_stdio

        command = list(argv)

        def connect(**options: Any) -> AbstractAsyncContextManager[Client]:
            return connect_stdio(command, env=env, **client, **options)

        return cls(connect, label=" ".join(command)[:200])

    @classmethod
    def for_url(
        cls, url: str, *, headers: Mapping[str, str] | None = None, **client: Any
    ) -> ProxyProvider:
        """The Streamable HTTP (or legacy HTTP+SSE) server at ``url``."""
        from trimcp.client import connect_http

        def connect(**options: Any) -> AbstractAsyncContextManager[Client]:
            return connect_http(url, headers=headers, **client, **options)

        return cls(connect, label=url)

    @classmethod
    def for_transport(
        cls,
        open_transport: Callable[[], AbstractAsyncContextManager[Transport]],
        *,
        label: str = "the proxied server",
        **client: Any,
    ) -> ProxyProvider:
        """The server at the other end of the transports ``open_transport`` opens."""
        from trimcp.client import connect_transport

        @asynccontextmanager
        async def connect(**options: Any) -> AsyncIterator[Client]:
            async with (
                open_transport() as transport,
                connect_transport(transport, **client, **options) as connected,
            ):
                yield connected

        return cls(connect, label=label)

    # --- the provider ------------------------------------------------------------------

    def components(self, kind: Kind) -> Sequence[Any]:
        return self._listed[kind]

    def component(self, kind: Kind, key: str) -> Any | None:
        return self._by_key[kind].get(key)

    def lifespan(self) -> AbstractAsyncContextManager[None]:
        """Connect, list everything, and follow the backend's changes while the serving
        server runs. Raises (``LifespanFailed`` for the server) when the backend cannot be
        reached or listed. Cancellation: the connection closes with the lifespan."""
        return self._connected()

    @asynccontextmanager
    async def _connected(self) -> AsyncIterator[None]:
        if self._users:  # served by several servers at once: they share the connection
            self._users += 1
            try:
                yield
            finally:
                self._users -= 1
            return
        self._users = 1
        try:
            async with self._connection():
                yield
        finally:
            self._users = 0

    @asynccontextmanager
    async def _connection(self) -> AsyncIterator[None]:
        options: dict[str, Any] = {
            name: self._marker(kind) for name, kind in _NOTIFICATIONS.items()
        }
        # The backend's answers pass through as they are (its own checks are its own).
        options["validate_output"] = False
        async with self._connect(**options) as client, trio.open_nursery() as nursery:
            self._client = client
            try:
                for kind in KINDS:
                    await self._list(client, kind)
                nursery.start_soon(self._follow_changes, client)
                if client.era is Era.MODERN:
                    nursery.start_soon(self._listen, client)
                yield
            finally:
                self._client = None
                nursery.cancel_scope.cancel()
                for kind in KINDS:
                    self._serve(kind, [])

    def _marker(self, kind: Kind) -> Callable[[], None]:
        def stale() -> None:
            self._stale.add(kind)
            self._wake.set()

        return stale

    async def _follow_changes(self, client: Client) -> None:
        """List again what the backend said changed (one kind at a time, in this task)."""
        while True:
            await self._wake.wait()
            self._wake = trio.Event()
            stale, self._stale = self._stale, set()
            for kind in KINDS:
                if kind in stale or (kind == "templates" and "resources" in stale):
                    try:
                        await self._list(client, kind)
                    except Exception as exc:  # keep what was listed; the next change retries
                        logger.warning("cannot list the %s of %s again: %s", kind, self.label, exc)

    async def _listen(self, client: Client) -> None:
        """2026-07-28: changes come on a listen stream (its events run the callbacks)."""
        try:
            async with client.listen(
                tools_list_changed=True, prompts_list_changed=True, resources_list_changed=True
            ) as subscription:
                async for _event in subscription:
                    pass
        except Exception as exc:  # the backend went away or refused: no more updates
            logger.warning("no change stream from %s: %s", self.label, exc)

    async def _list(self, client: Client, kind: Kind) -> None:
        items: list[Any]
        if kind == "tools":
            items = [_tool(self, tool) async for tool in client.iter_tools()]
        elif kind == "prompts":
            items = [_ProxiedPrompt(self, prompt) async for prompt in client.iter_prompts()]
        elif kind == "resources":
            items = [_ProxiedResource(self, r) async for r in client.iter_resources()]
        else:
            templates = client.iter_resource_templates()
            items = [_ProxiedTemplate(self, template) async for template in templates]
        self._serve(kind, items)

    def _serve(self, kind: Kind, items: list[Any]) -> None:
        by_key: dict[str, Any] = {}
        for item in items:
            by_key.setdefault(key_of(kind, item), item)
        self._listed[kind] = list(by_key.values())
        self._by_key[kind] = by_key
        self.changed(kind)

    def client(self) -> Client:
        """The connected client (raises ``McpError`` ``-32603`` outside the lifespan)."""
        client = self._client
        if client is None:
            raise McpError(INTERNAL_ERROR, f"{self.label} is not connected")
        return client


def _tool(provider: ProxyProvider, definition: Tool) -> SchemaTool:
    name = definition.name

    async def call(arguments: dict[str, Any], ctx: Any) -> CallToolResult:
        report = ctx.report_progress if ctx.request_context.progress_token is not None else None
        return await provider.client().call_tool(name, arguments, timeout=None, on_progress=report)

    # The backend runs its own tasks: this server calls it as a plain call.
    return SchemaTool(_without_execution(definition), call)


def _without_execution(definition: Tool) -> Tool:
    return attrs.evolve(definition, execution=None) if definition.execution else definition


class _ProxiedPrompt(Handle):
    """A backend prompt: listed as the backend lists it, rendered by the backend."""

    def __init__(self, provider: ProxyProvider, prompt: Prompt) -> None:
        self._provider = provider
        self._prompt = prompt
        self.name = prompt.name

    def definition(self) -> Prompt:
        return self._prompt

    async def get(self, arguments: Mapping[str, str] | None, ctx: Any) -> GetPromptResult:
        return await self._provider.client().get_prompt(
            self.name, dict(arguments or {}), timeout=None
        )


class _ProxiedResource(Handle):
    """A backend resource: listed as the backend lists it, read from the backend."""

    def __init__(self, provider: ProxyProvider, resource: Resource) -> None:
        self._provider = provider
        self._resource = resource
        self.uri = resource.uri
        self.mime_type = resource.mime_type

    def definition(self) -> Resource:
        return self._resource

    async def read(self, uri: str, ctx: Any) -> list[ResourceContents]:
        result = await self._provider.client().read_resource(uri, timeout=None)
        return list(result.contents)


class _ProxiedTemplate(Handle):
    """A backend resource template: URIs it matches are read from the backend."""

    def __init__(self, provider: ProxyProvider, template: ResourceTemplate) -> None:
        self._provider = provider
        self._template = template
        self.uri_template = template.uri_template
        self.template = UriTemplate(template.uri_template)

    def definition(self) -> ResourceTemplate:
        return self._template

    def match(self, uri: str) -> dict[str, Any] | None:
        return self.template.match(uri)

    async def read(self, uri: str, arguments: dict[str, Any], ctx: Any) -> list[Any]:
        result = await self._provider.client().read_resource(uri, timeout=None)
        return list(result.contents)
