"""Client middleware: code that runs around every request a :class:`~trimcp.client.Client`
sends (``Client(middleware=[...])``, or ``connect_*(..., middleware=[...])``).

    async def stamp(call: OutgoingCall, call_next: ClientNext) -> Any:
        call.params = with_meta(call.params, {"example.com/tenant": "acme"})
        return await call_next(call)

A middleware is ``async def (call, call_next) -> result``: it may read or replace
``call.params``, answer without sending (return a result, raise), or wrap the result.
The first is the outermost. It runs in the caller's task: cancelling the caller cancels
it (``trio.Cancelled`` at its next checkpoint), and the request in flight is cancelled at
the server as usual. Requests of the handshake (``initialize``, ``server/discover``) are
not passed through; 2026-07-28 requests are, with their ``_meta`` envelope already in
``params``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any


class OutgoingCall:
    """One request on its way to the server."""

    __slots__ = ("client", "method", "params", "request_id", "target")

    def __init__(self, client: Any, method: str, params: Any, target: str | None) -> None:
        self.client = client
        self.method = method
        #: Typed params, a dict or None; replace them to send something else.
        self.params = params
        #: What the request is about (a tool or prompt name, a URI), when known.
        self.target = target
        #: The JSON-RPC id, once the request is sent (None before, and for a request the
        #: chain answered without sending).
        self.request_id: int | str | None = None

    def __repr__(self) -> str:
        return f"<OutgoingCall {self.method!r} {self.target!r}>"


ClientNext = Callable[[OutgoingCall], Awaitable[Any]]
ClientMiddleware = Callable[[OutgoingCall, ClientNext], Awaitable[Any]]


def build_client_chain(middleware: Sequence[ClientMiddleware], terminal: ClientNext) -> ClientNext:
    """``terminal`` wrapped by ``middleware`` (the first is the outermost)."""
    chain = terminal
    for layer in reversed(middleware):
        chain = _link(layer, chain)
    return chain


def _link(layer: ClientMiddleware, nxt: ClientNext) -> ClientNext:
    def step(call: OutgoingCall) -> Awaitable[Any]:
        return layer(call, nxt)

    return step
