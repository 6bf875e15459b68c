"""``ctx.elicit`` / ``ctx.sample`` / ``ctx.list_roots`` in a 2026-07-28 request (MRTR).

A stateless server cannot send the client a request. When a handler of ``tools/call``,
``prompts/get`` or ``resources/read`` asks a question whose answer the retry does not
carry yet, the attempt ends: the question is recorded, the attempt's cancel scope is
cancelled (the handler sees ``trio.Cancelled``; its ``finally`` blocks run), and the
request is answered with an ``InputRequiredResult`` holding every question asked in that
attempt and a sealed ``requestState``. The client retries the same request with
``inputResponses`` and the state; the handler body runs again from the top and this time
each question returns its answer. Questions asked concurrently (from tasks of one
nursery) travel in one round.

What the state holds (sealed, see :mod:`trimcp.stores.request_state`): its expiry, the
round number, a digest of every question asked so far under its key, and the answers
already used. It is bound to the method, the tool/prompt/resource, a digest of the
arguments and the principal, so it opens only on a retry of the same request.

Which answers a handler gets: the answer under the key it asks now; when an earlier
round asked under that key, only if it is the same question (an answer is never reused
for another question). Answers under keys the handler does not ask are ignored. A state
that does not open, has expired or belongs to another request refuses the request before
the handler runs (``-32602``). After ``max_rounds`` rounds the request fails instead of
asking again.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable
from contextvars import ContextVar
from typing import Any, TypeVar

import attrs
import trio

from trimcp import serde
from trimcp._record import Record
from trimcp._validators import positive
from trimcp.auth.principal import principal_key
from trimcp.errors import INVALID_PARAMS, INVALID_REQUEST, LocalProtocolError, RemoteProtocolError
from trimcp.protocol.jsonrpc import dump_json
from trimcp.session.context import RequestContext
from trimcp.stores.request_state import InvalidRequestState, RequestStateKeyring
from trimcp.types import InputRequiredResult

T = TypeVar("T")

_SHORT = {
    "elicitation/create": "elicitation",
    "sampling/createMessage": "sampling",
    "roots/list": "roots",
}


@attrs.frozen(kw_only=True, repr=False, eq=False)
class InputOptions(Record):
    """How a server asks for input in 2026-07-28.

    ``keyring`` seals ``requestState`` (a random key per process by default: give every
    replica the same one). ``state_ttl``: seconds a state stays valid. ``max_rounds``:
    input rounds one request may take before it fails. ``max_questions``: questions in
    one round. ``max_state_bytes``: the largest state issued (answers travel in it).
    ``clock`` gives wall-clock seconds (replicas compare expiries).
    """

    keyring: RequestStateKeyring = attrs.field(factory=RequestStateKeyring)
    state_ttl: float = attrs.field(default=600.0, validator=positive)
    max_rounds: int = attrs.field(default=8, validator=positive)
    max_questions: int = attrs.field(default=16, validator=positive)
    max_state_bytes: int = attrs.field(default=128 * 1024, validator=positive)
    clock: Callable[[], float] = time.time


def digest(value: Any) -> str:
    """A short stable digest of a JSON value (keys sorted)."""
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:32]


def _binding(ctx: RequestContext) -> bytes:
    params = ctx.params
    name = getattr(params, "name", None) or getattr(params, "uri", None) or ""
    arguments = getattr(params, "arguments", None) or {}  # absent and {} are the same call
    return json.dumps(
        [ctx.method, name, digest(arguments), principal_key(ctx.principal) or ""],
        separators=(",", ":"),
    ).encode("utf-8", "surrogatepass")


@attrs.define(eq=False)
class InputRound:
    """One attempt of one request: the answers it may use and the questions it asked."""

    options: InputOptions
    ctx: RequestContext
    rounds: int = 0
    #: Questions earlier rounds asked: key -> digest.
    asked: dict[str, str] = attrs.Factory(dict)
    #: Answers this attempt may use: key -> raw answer.
    answers: dict[str, Any] = attrs.Factory(dict)
    #: Answers used in this attempt: key -> (question digest, raw answer).
    used: dict[str, tuple[str, Any]] = attrs.Factory(dict)
    #: Questions asked in this attempt and not answered: key -> request object.
    pending: dict[str, dict[str, Any]] = attrs.Factory(dict)
    pending_digests: dict[str, str] = attrs.Factory(dict)
    counters: dict[str, int] = attrs.Factory(dict)
    scope: trio.CancelScope | None = None

    def next_key(self, method: str) -> str:
        short = _SHORT.get(method, "input")
        count = self.counters.get(short, 0) + 1
        self.counters[short] = count
        return f"{short}-{count}"

    def result(self) -> InputRequiredResult:
        """The ``InputRequiredResult`` for the questions pending now.

        Raises :class:`RemoteProtocolError` past ``max_rounds`` or ``max_state_bytes``.
        """
        options = self.options
        if self.rounds >= options.max_rounds:
            raise RemoteProtocolError(
                INVALID_REQUEST,
                f"Gave up after {self.rounds} input_required rounds (the limit is "
                f"{options.max_rounds}); send the request again without requestState to "
                "start over",
            )
        payload = {
            "exp": options.clock() + options.state_ttl,
            "r": self.rounds + 1,
            "q": {
                **self.asked,
                **{k: d for k, (d, _) in self.used.items()},
                **self.pending_digests,
            },
            "a": {key: list(entry) for key, entry in self.used.items()},
        }
        data = dump_json(payload)
        if len(data) > options.max_state_bytes:
            raise RemoteProtocolError(
                INVALID_REQUEST,
                f"The answers so far do not fit in a requestState of "
                f"{options.max_state_bytes} bytes; ask for less per request",
            )
        state = options.keyring.seal(data, _binding(self.ctx))
        return InputRequiredResult(input_requests=dict(self.pending), request_state=state)


def open_round(options: InputOptions, ctx: RequestContext) -> InputRound:
    """The attempt of ``ctx`` (a 2026 ``tools/call``, ``prompts/get`` or
    ``resources/read``), with what its ``requestState`` and ``inputResponses`` carry.

    Raises :class:`RemoteProtocolError` ``-32602`` when the state does not open, has
    expired, or was issued for another request: the handler must not run.
    """
    params = ctx.params
    attempt = InputRound(options=options, ctx=ctx)
    token = getattr(params, "request_state", None)
    responses = getattr(params, "input_responses", None) or {}
    if token is not None:
        try:
            payload = json.loads(options.keyring.open(token, _binding(ctx)))
        except InvalidRequestState as exc:
            raise RemoteProtocolError(
                INVALID_PARAMS,
                f"Invalid requestState: {exc}; send the request again "
                "without requestState and inputResponses to start over",
                {"path": "params.requestState"},
            ) from None
        if not payload["exp"] > options.clock():
            raise RemoteProtocolError(
                INVALID_PARAMS,
                "Invalid requestState: it has expired; send the request again without "
                "requestState and inputResponses to start over",
                {"path": "params.requestState"},
            )
        attempt.rounds = int(payload["r"])
        attempt.asked = dict(payload["q"])
        for key, (question, answer) in payload["a"].items():
            attempt.asked[key] = question
            attempt.answers[key] = answer
    for key, answer in responses.items():
        attempt.answers[key] = answer
    return attempt


#: The attempt the running handler belongs to (set around 2026 input-capable requests).
current_round: ContextVar[InputRound | None] = ContextVar("trimcp_input_round", default=None)


async def ask(method: str, params: Any, result_type: type[T], key: str | None) -> T:
    """The answer to one question of a 2026 handler, or the end of its attempt.

    ``params`` is the question's wire form. Raises :class:`LocalProtocolError` outside a
    request that may ask (only ``tools/call``, ``prompts/get`` and ``resources/read``
    may), or when one attempt asks twice under one key; :class:`RemoteProtocolError`
    ``-32602`` when the client's answer does not fit ``result_type``. Cancellation: this
    is how an attempt ends: the attempt's scope is cancelled and ``trio.Cancelled``
    propagates.
    """
    attempt = current_round.get()
    if attempt is None or attempt.scope is None:
        raise LocalProtocolError(
            f"Cannot ask the client for input ({method}) here: in 2026-07-28 only "
            "tools/call, prompts/get and resources/read may answer input_required"
        )
    if key is None:
        key = attempt.next_key(method)
    elif not key or len(key) > 200:
        raise LocalProtocolError(f"input key must be 1 to 200 characters, not {key!r}")
    request: dict[str, Any] = {"method": method}
    if params is not None:
        request["params"] = params
    question = digest(request)
    if key in attempt.used or key in attempt.pending:
        raise LocalProtocolError(f"this attempt already asked for input under the key {key!r}")
    earlier = attempt.asked.get(key)
    if key in attempt.answers and (earlier is None or earlier == question):
        answer = attempt.answers[key]
        try:
            typed = serde.structure(answer, result_type)
        except serde.ShapeError as exc:
            raise RemoteProtocolError(
                INVALID_PARAMS,
                f"inputResponses[{key!r}] is not a valid {result_type.__name__}: {exc}",
                {"path": f"params.inputResponses.{key}{'' if exc.path == '$' else exc.path}"},
            ) from None
        attempt.used[key] = (question, answer)
        return typed
    if len(attempt.pending) >= attempt.options.max_questions:
        raise LocalProtocolError(
            f"more than {attempt.options.max_questions} questions in one input round"
        )
    attempt.pending[key] = request
    attempt.pending_digests[key] = question
    attempt.scope.cancel()
    await trio.sleep_forever()
    raise AssertionError("unreachable")  # pragma: no cover


async def run_attempt(options: InputOptions, ctx: RequestContext, call: Callable[[], Any]) -> Any:
    """Run ``call()`` (the handler) as one attempt of ``ctx``; its result, or the
    ``InputRequiredResult`` when it asked for input it does not have yet.

    Raises what :func:`open_round` and :meth:`InputRound.result` raise. Cancellation:
    the request's own cancellation propagates; the attempt's does not.
    """
    attempt = open_round(options, ctx)
    token = current_round.set(attempt)
    try:
        with trio.CancelScope() as scope:
            attempt.scope = scope
            result = await call()
    finally:
        current_round.reset(token)
        attempt.scope = None
    if attempt.pending:
        return attempt.result()
    return result
