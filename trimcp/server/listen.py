"""``subscriptions/listen`` (2026-07-28): long-lived streams of change notifications.

One listen request is one stream: the client opts in per kind of change (tools, prompts
or resources list changes, updates of named resources); the server acknowledges what it
will honour first, then sends each change as it happens, every message tagged with the
subscription id (the listen request's id). The stream ends when the client goes away
(HTTP: it closes the response; stdio: ``notifications/cancelled``), or gracefully, with a
result, when the server shuts down or the stream has been idle for ``idle_timeout``.

Bounded: at most ``max_streams`` streams at once, and ``max_per_principal`` of one caller
(its :func:`~trimcp.auth.principal_key`; every anonymous caller together is one); an HTTP
transport checks both before it starts a stream (:meth:`ListenHub.refusal`), and a stream
holds no HTTP session slot. Each stream holds at most one pending change
per list and one pending update per subscribed URI (changes made before the stream sends
them merge), so a client that reads slowly holds no queue. ``keepalive`` seconds without a
notification make the transport send a comment (SSE), when it can.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import attrs
import trio

from trimcp import serde
from trimcp.auth.principal import principal_key
from trimcp.errors import INTERNAL_ERROR, INVALID_PARAMS, McpError
from trimcp.protocol.admission import has_capability
from trimcp.protocol.modern import subscription_meta
from trimcp.session.context import RequestContext

if TYPE_CHECKING:
    from trimcp.types import SubscriptionFilter, SubscriptionsListenResult

#: List kinds in the order their notifications go out, with their filter field.
_KINDS = (
    ("tools", "tools_list_changed"),
    ("prompts", "prompts_list_changed"),
    ("resources", "resources_list_changed"),
)


@runtime_checkable
class Keepalive(Protocol):
    """An outlet that can keep a quiet stream open (an SSE comment)."""

    async def keepalive(self) -> None: ...


@attrs.define(eq=False)
class _Listener:
    kinds: frozenset[str]
    uris: frozenset[str]
    wakeup: trio.Event = attrs.Factory(trio.Event)
    changed: set[str] = attrs.Factory(set)
    updated: set[str] = attrs.Factory(set)


class ListenHub:
    """The open listen streams of one server, and the changes that reach them."""

    def __init__(
        self,
        *,
        max_streams: int = 1000,
        max_per_principal: int = 100,
        idle_timeout: float = 3600.0,
        keepalive: float | None = 15.0,
    ) -> None:
        self.max_streams = max_streams
        self.max_per_principal = max_per_principal
        self.idle_timeout = idle_timeout
        self.keepalive = keepalive
        self._listeners: set[_Listener] = set()
        self._per_principal: dict[str | None, int] = {}
        self._closing = False
        self._token: trio.lowlevel.TrioToken | None = None

    @property
    def open_streams(self) -> int:
        return len(self._listeners)

    def streams_of(self, key: str | None) -> int:
        """How many streams principal ``key`` has open now."""
        return self._per_principal.get(key, 0)

    def refusal(self, key: str | None) -> tuple[str, str] | None:
        """Why a new stream of principal ``key`` would be refused now: (the limit's
        name, ``"max_per_principal"`` or ``"max_streams"``; a message naming it), or None."""
        if self._per_principal.get(key, 0) >= self.max_per_principal:
            return (
                "max_per_principal",
                f"Too many subscriptions/listen streams of this caller are open (the limit "
                f"is {self.max_per_principal}, StatelessOptions.listen_max_streams_per_principal)"
                "; close one or try again later",
            )
        if len(self._listeners) >= self.max_streams:
            return (
                "max_streams",
                f"Too many subscriptions/listen streams are open (the limit is "
                f"{self.max_streams}, StatelessOptions.listen_max_streams); close one or try "
                "again later",
            )
        return None

    # --- publishing (synchronous; any thread) --------------------------------------------

    def list_changed(self, kind: str) -> None:
        """List ``kind`` (``tools``, ``prompts`` or ``resources``) changed."""
        if self._listeners:
            self._in_trio(self._mark, kind, None)

    def resource_updated(self, uri: str) -> None:
        """The resource ``uri`` changed."""
        if self._listeners:
            self._in_trio(self._mark, None, uri)

    def everything_updated(self) -> None:
        """Changes may have been missed (the bus was cut off): every stream hears that
        each list it follows changed and each resource it follows was updated."""
        for listener in self._listeners:
            listener.changed.update(listener.kinds)
            listener.updated.update(listener.uris)
            if listener.kinds or listener.uris:
                listener.wakeup.set()

    def _mark(self, kind: str | None, uri: str | None) -> None:
        for listener in self._listeners:
            if kind is not None and kind in listener.kinds:
                listener.changed.add(kind)
                listener.wakeup.set()
            if uri is not None and uri in listener.uris:
                listener.updated.add(uri)
                listener.wakeup.set()

    def _in_trio(self, fn: Callable[..., None], *args: Any) -> None:
        try:
            trio.lowlevel.current_trio_token()
        except RuntimeError:
            token = self._token
            if token is not None:
                with contextlib.suppress(trio.RunFinishedError):
                    token.run_sync_soon(fn, *args)
            return
        fn(*args)

    def close(self) -> None:
        """End every stream gracefully (each answers its listen request), now and later."""
        self._closing = True
        for listener in self._listeners:
            listener.wakeup.set()

    def reopen(self) -> None:
        """Accept streams again after :meth:`close` (a server served again)."""
        self._closing = False

    # --- serving one stream ------------------------------------------------------------------

    async def serve(
        self,
        ctx: RequestContext,
        server_capabilities: dict[str, Any],
        follow: Callable[[str], str | None],
    ) -> SubscriptionsListenResult:
        """Serve the listen request ``ctx`` until it ends (see the module docstring).

        ``follow(uri)``: the canonical URI to follow for a requested resource subscription,
        None for an unknown one (left out of the acknowledgement); it raises
        :class:`McpError` to refuse the request (an ambiguous URI, a missing scope).
        Raises :class:`McpError` ``-32602`` when it asks for no kind of notification,
        ``-32603`` past ``max_streams`` or ``max_per_principal``. Cancellation: the stream
        ends without a result.
        """
        from trimcp.types import SubscriptionFilter, SubscriptionsListenResult

        wanted: SubscriptionFilter = ctx.params.notifications
        uris = wanted.resource_subscriptions or []
        kinds = [kind for kind, field in _KINDS if getattr(wanted, field)]
        if not kinds and not uris:
            raise McpError(
                INVALID_PARAMS,
                "subscriptions/listen needs at least one kind of notification: set "
                "toolsListChanged, promptsListChanged, resourcesListChanged or "
                "resourceSubscriptions",
                {"path": "params.notifications"},
            )
        if self._closing:
            raise McpError(INTERNAL_ERROR, "The server is shutting down; listen again later")
        key = principal_key(ctx.principal)
        refused = self.refusal(key)
        if refused is not None:
            raise McpError(INTERNAL_ERROR, refused[1], {"limit": refused[0]})
        agreed_kinds = frozenset(
            kind for kind in kinds if has_capability(server_capabilities, (kind, "listChanged"))
        )
        subscribe = has_capability(server_capabilities, ("resources", "subscribe"))
        followed = (follow(uri) for uri in uris) if subscribe else iter(())
        agreed_uris = frozenset(uri for uri in followed if uri is not None)
        agreed = SubscriptionFilter(
            tools_list_changed=True if "tools" in agreed_kinds else None,
            prompts_list_changed=True if "prompts" in agreed_kinds else None,
            resources_list_changed=True if "resources" in agreed_kinds else None,
            resource_subscriptions=sorted(agreed_uris) if uris else None,
        )
        subscription = ctx.request_id
        meta = subscription_meta(subscription)
        listener = _Listener(kinds=agreed_kinds, uris=agreed_uris)
        self._token = trio.lowlevel.current_trio_token()
        self._listeners.add(listener)
        self._per_principal[key] = self._per_principal.get(key, 0) + 1
        try:
            await ctx.send_notification(
                "notifications/subscriptions/acknowledged",
                {"_meta": meta, "notifications": serde.unstructure(agreed)},
            )
            await self._deliver(ctx, listener, meta)
        finally:
            self._listeners.discard(listener)
            left = self._per_principal[key] - 1
            if left:
                self._per_principal[key] = left
            else:
                del self._per_principal[key]
        return SubscriptionsListenResult(meta=meta)

    async def _deliver(
        self, ctx: RequestContext, listener: _Listener, meta: dict[str, Any]
    ) -> None:
        idle_deadline = trio.current_time() + self.idle_timeout
        outlet = ctx.outlet
        while not self._closing and not ctx.end_requested:
            wait = idle_deadline - trio.current_time()
            if self.keepalive is not None:
                wait = min(wait, self.keepalive)
            ctx.end_wakeup = listener.wakeup
            with trio.move_on_after(max(wait, 0.0)):
                await listener.wakeup.wait()
            if self._closing or ctx.end_requested:
                return
            if not listener.wakeup.is_set():
                if trio.current_time() >= idle_deadline:
                    return
                if isinstance(outlet, Keepalive):
                    await outlet.keepalive()
                continue
            listener.wakeup = trio.Event()
            changed, listener.changed = listener.changed, set()
            updated, listener.updated = listener.updated, set()
            for kind, _ in _KINDS:
                if kind in changed:
                    await ctx.send_notification(
                        f"notifications/{kind}/list_changed", {"_meta": meta}
                    )
            for uri in sorted(updated):
                await ctx.send_notification(
                    "notifications/resources/updated", {"_meta": meta, "uri": uri}
                )
            idle_deadline = trio.current_time() + self.idle_timeout
