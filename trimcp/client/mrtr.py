"""Multi round-trip requests (2026-07-28): answering an ``InputRequiredResult``.

A 2026 server that needs something from the client while handling ``tools/call``,
``prompts/get`` or ``resources/read`` (an elicitation, a sampled message, the roots) ends
the attempt with an ``InputRequiredResult``. The client runs the handlers the application
registered for each input request, then retries the original request with the answers
(``inputResponses``) and the server's ``requestState`` echoed untouched. This module does
one round; :class:`~trimcp.client.Client` loops, at most ``max_input_rounds`` times.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import attrs
import trio

from trimcp import serde
from trimcp.client.handlers import ClientHandlers
from trimcp.errors import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    METHOD_NOT_FOUND,
    LocalError,
    McpError,
    RemoteProtocolError,
)
from trimcp.protocol.methods import lookup
from trimcp.session import RequestContext, Session
from trimcp.types import InputRequiredResult

#: The server-to-client requests an ``InputRequiredResult`` may carry.
INPUT_METHODS = frozenset({"elicitation/create", "sampling/createMessage", "roots/list"})
#: Input requests answered per round; more is refused (each may ask a person something).
MAX_INPUT_REQUESTS = 32
#: Retries of one request after ``InputRequiredResult`` before the client gives up.
DEFAULT_MAX_INPUT_ROUNDS = 8

_CAPABILITY = {
    "elicitation/create": "elicitation",
    "sampling/createMessage": "sampling",
    "roots/list": "roots",
}


class InputRoundsExceeded(LocalError):
    """The server kept answering ``InputRequiredResult`` past ``max_input_rounds``: this
    client gave up (a :class:`~trimcp.errors.LocalError`).

    Code ``-32603``; ``data`` holds the method, the target and the number of rounds.
    """

    def __init__(self, method: str, target: str | None, rounds: int) -> None:
        about = f" {target!r}" if target is not None else ""
        super().__init__(
            INTERNAL_ERROR,
            f"{method}{about} still asked for input after {rounds} rounds; the server may "
            "be looping. Raise max_input_rounds if it legitimately needs more, or check "
            "the server.",
            {"method": method, "target": target, "rounds": rounds},
        )


class MalformedInputRequest(RemoteProtocolError):
    """The server sent an ``InputRequiredResult`` this client cannot act on (``-32602``):
    the server broke the protocol, so it is a :class:`~trimcp.errors.RemoteProtocolError`."""

    def __init__(self, message: str, key: str | None = None) -> None:
        super().__init__(INVALID_PARAMS, message, {"inputRequest": key} if key else None)


class MissingInputHandler(LocalError):
    """The server asked for an input (an elicitation, a sampled message, the roots) this
    client registered no handler for. Code ``-32601``; ``data`` holds the method and the
    input's key."""

    def __init__(self, method: str, key: str) -> None:
        super().__init__(
            METHOD_NOT_FOUND,
            f"The server asked for {method} (input {key!r}) but this client has no "
            f"{_CAPABILITY[method]} handler registered",
            {"method": method, "inputRequest": key},
        )


def check_input_required(result: InputRequiredResult) -> dict[str, Any]:
    """The input requests of ``result`` (possibly none), after checking their shape.

    Raises :class:`MalformedInputRequest` for a result with neither ``inputRequests``
    nor ``requestState`` (the spec requires one), too many requests, or a request that
    is not ``{"method": <one of INPUT_METHODS>, "params": {...}}``.
    """
    requests = result.input_requests
    if not requests and result.request_state is None:
        raise MalformedInputRequest(
            "The server answered input_required with neither inputRequests nor requestState"
        )
    requests = requests or {}
    if len(requests) > MAX_INPUT_REQUESTS:
        raise MalformedInputRequest(
            f"The server asked for {len(requests)} inputs at once; this client answers at "
            f"most {MAX_INPUT_REQUESTS} per round"
        )
    for key, request in requests.items():
        if not isinstance(request, dict) or not isinstance(request.get("method"), str):
            raise MalformedInputRequest(f"Input request {key!r} has no method", key)
        if request["method"] not in INPUT_METHODS:
            raise MalformedInputRequest(
                f"Input request {key!r} asks for {request['method']!r}, which is not one of "
                f"{', '.join(sorted(INPUT_METHODS))}",
                key,
            )
        params = request.get("params")
        if params is not None and not isinstance(params, dict):
            raise MalformedInputRequest(f"Input request {key!r} has params that are no object")
    return requests


async def answer_input_requests(
    handlers: ClientHandlers, session: Session, requests: Mapping[str, Any]
) -> dict[str, Any]:
    """Run the registered handler for each input request, one after another; returns the
    ``inputResponses`` object (wire form).

    Raises :class:`MalformedInputRequest` for params that do not fit the method, and
    :class:`MissingInputHandler` (``-32601``) when the server asked for something this
    client did not register. Cancellation: the running handler sees
    ``trio.Cancelled``; nothing is sent.
    """
    responses: dict[str, Any] = {}
    for key, request in requests.items():
        method: str = request["method"]
        spec = lookup(method)
        assert spec is not None
        assert spec.params_type is not None
        try:
            params = serde.structure(request.get("params") or {}, spec.params_type)
        except serde.ShapeError as exc:
            raise MalformedInputRequest(
                f"Input request {key!r} ({method}) has invalid params: {exc}", key
            ) from None
        with trio.CancelScope() as scope:
            ctx = RequestContext(session, key, method, params, None, scope)
            try:
                result = await handlers.handle_request(ctx)
            except McpError as exc:
                if exc.code != METHOD_NOT_FOUND:
                    raise
                raise MissingInputHandler(method, key) from None
        responses[key] = serde.unstructure(result)
    return responses


async def with_input_rounds(
    attempt: Callable[[Any], Awaitable[Any]],
    params: Any,
    handlers: ClientHandlers,
    session: Session,
    max_rounds: int,
    method: str,
    target: str | None,
) -> Any:
    """Send ``params`` through ``attempt``; while the answer is an ``InputRequiredResult``,
    answer its input requests with ``handlers`` and send again: the original params plus
    ``inputResponses`` and the echoed ``requestState`` (each attempt is a new request, so
    a new id). Raises :class:`InputRoundsExceeded` after ``max_rounds`` retries and
    :class:`MalformedInputRequest` for an answer it cannot act on. Cancellation: as the
    attempt or the running handler; nothing more is sent.
    """
    current = params
    rounds = 0
    while True:
        result = await attempt(current)
        if not isinstance(result, InputRequiredResult):
            return result
        if rounds >= max_rounds:
            raise InputRoundsExceeded(method, target, rounds)
        rounds += 1
        requests = check_input_required(result)
        responses = await answer_input_requests(handlers, session, requests)
        current = attrs.evolve(
            params, input_responses=responses or None, request_state=result.request_state
        )
