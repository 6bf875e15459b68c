"""The session era's own requests, as a :class:`~trimcp.Server` answers them:
``resources/subscribe``, ``resources/unsubscribe`` and ``logging/setLevel``.

Each changes state of the session that asked (its subscriptions, its log level), kept in
the server's session table (:mod:`trimcp.server.sessions`) and shared with the other
replicas (:mod:`trimcp.server.replicas`) so a change made anywhere reaches the session
wherever it is served. 2026-07-28 removed these methods: a stateless request for one is a
dispatch miss (:func:`~trimcp.server.shell.session_of`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from trimcp.errors import INVALID_PARAMS, McpError
from trimcp.protocol.methods import SET_LOG_LEVEL, SUBSCRIBE, UNSUBSCRIBE
from trimcp.server.resolve import canonical
from trimcp.server.shell import session_of
from trimcp.types import EmptyResult

if TYPE_CHECKING:
    from trimcp.server.components import Components
    from trimcp.server.dispatch import MethodRegistry
    from trimcp.server.replicas import ReplicaLink
    from trimcp.server.sessions import SessionTable
    from trimcp.session.context import RequestContext
    from trimcp.types import (
        SetLevelRequestParams,
        SubscribeRequestParams,
        UnsubscribeRequestParams,
    )


class SessionHandlers:
    """The session requests of one server: the ``components`` it serves (a subscription
    names a resource it serves), its session table, its link to the other replicas, and
    how many subscriptions a session may hold."""

    __slots__ = ("components", "max_subscriptions", "replicas", "sessions")

    def __init__(
        self,
        components: Components,
        sessions: SessionTable,
        replicas: ReplicaLink,
        max_subscriptions: int,
    ) -> None:
        self.components = components
        self.sessions = sessions
        self.replicas = replicas
        self.max_subscriptions = max_subscriptions

    def install(self, methods: MethodRegistry) -> None:
        """Answer ``resources/subscribe``, ``resources/unsubscribe`` and
        ``logging/setLevel`` on ``methods``."""
        methods.add(SUBSCRIBE, self.subscribe)
        methods.add(UNSUBSCRIBE, self.unsubscribe)
        methods.add(SET_LOG_LEVEL, self.set_level)

    async def subscribe(self, ctx: RequestContext, params: SubscribeRequestParams) -> EmptyResult:
        uri = self.components.admit_resource(ctx, SUBSCRIBE.name, params.uri).uri
        session = session_of(ctx)
        state = self.sessions.state(session)
        subscriptions = state.subscriptions
        if subscriptions is None:
            subscriptions = state.subscriptions = set()
        limit = self.max_subscriptions
        if (
            uri not in subscriptions and len(subscriptions) >= limit
        ) or not await self.replicas.subscribe(session, uri):
            raise McpError(INVALID_PARAMS, f"Too many subscriptions (at most {limit})")
        subscriptions.add(uri)
        return EmptyResult()

    async def unsubscribe(
        self, ctx: RequestContext, params: UnsubscribeRequestParams
    ) -> EmptyResult:
        uri = canonical(params.uri)
        session = session_of(ctx)
        subscriptions = self.sessions.state(session).subscriptions
        if subscriptions is not None:
            subscriptions.discard(uri)
        await self.replicas.unsubscribe(session, uri)
        return EmptyResult()

    async def set_level(self, ctx: RequestContext, params: SetLevelRequestParams) -> EmptyResult:
        session = session_of(ctx)
        self.sessions.state(session).log_level = params.level
        await self.replicas.set_level(session, params.level)
        return EmptyResult()
