"""The sans-IO MCP connection: whole messages in, events out; calls in, bytes out.

One :class:`Connection` per session and role. It knows the lifecycle, the negotiated
version and capabilities, which requests are in flight in each direction, and which
progress tokens belong to which of our requests (a task-augmented request's token lives
on until we see its task end). It does no I/O, starts no tasks and never raises on bad
input from the peer: that becomes a :class:`MessageRejected` event carrying
the error reply to send. Misuse by the local side raises :class:`LocalProtocolError`.

Framing (lines, SSE events, HTTP bodies) is the transport's job: :meth:`receive` takes one
complete JSON text, and every ``send_*`` returns one complete JSON text as bytes.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

import attrs

from trimcp import serde
from trimcp._sealed import SEALED
from trimcp.errors import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    UNSUPPORTED_PROTOCOL_VERSION,
    LocalProtocolError,
    McpError,
    RemoteProtocolError,
)
from trimcp.protocol import tasks_ext
from trimcp.protocol.admission import (
    Peer,
    admit_request,
    admitted_method,
    admitted_params,
    has_capability,
)
from trimcp.protocol.events import (
    BatchReceived,
    CancelReceived,
    ErrorReceived,
    Event,
    LateResponseReceived,
    MessageIgnored,
    MessageRejected,
    NotificationReceived,
    ProgressReceived,
    ProgressToken,
    RequestReceived,
    ResponseReceived,
)
from trimcp.protocol.jsonrpc import (
    ErrorResponse,
    InvalidMessage,
    Message,
    Notification,
    Request,
    RequestId,
    Response,
    classify,
    dump_json,
    encode_error,
    notification_object,
    parse_json,
    request_object,
    response_object,
)
from trimcp.protocol.lifecycle import (
    INBOUND_REQUESTS,
    OUTBOUND_REQUESTS,
    Role,
    State,
    Transition,
    next_state,
    request_allowed,
)
from trimcp.protocol.methods import Method, lookup, task_capability
from trimcp.protocol.modern import recent_client
from trimcp.protocol.negotiated import Negotiated
from trimcp.protocol.versions import (
    STATELESS_VERSIONS,
    SUPPORTED_VERSIONS,
    allows_batches,
    is_stateless,
)
from trimcp.types import (
    TERMINAL_TASK_STATUSES,
    CreateTaskResult,
    InitializeRequestParams,
    InitializeResult,
    InputRequiredResult,
)

#: A batch larger than this is rejected whole: it would let one message start unbounded work.
DEFAULT_MAX_BATCH = 100

#: 2026-07-28: the requests a server may answer with an ``InputRequiredResult``.
INPUT_REQUIRED_METHODS: frozenset[str] = frozenset({"tools/call", "prompts/get", "resources/read"})
#: Task-augmented requests whose progress tokens are kept after their ``CreateTaskResult``
#: (the oldest is forgotten beyond this: a requester that never learns its tasks' ends).
MAX_FOLLOWED_TASKS = 1000
_TASK_METHODS: Final = frozenset({"tasks/get", "tasks/result", "tasks/cancel"})
#: The requests 2025-11-25 lets run as a task (their params type has ``task``). A ``task``
#: on any other request (TypeScript SDK v1 sends ``task: {}`` on ``tasks/get``) asks for
#: nothing: the request goes as it came and the peer answers it plainly.
_AUGMENTABLE: Final = frozenset({"tools/call", "sampling/createMessage", "elicitation/create"})
#: The ``resultType`` values the core protocol defines (absent means ``complete``).
_RESULT_TYPES = (None, "complete", "input_required", tasks_ext.RESULT_TYPE_TASK)


@attrs.define(slots=True)
class _Outbound:
    method: str
    progress_token: ProgressToken | None
    #: A task-augmented request (params with ``task``): answered with ``CreateTaskResult``.
    task: bool = False
    #: The result is handed over as decoded JSON, never structured (a relayed request).
    raw: bool = False
    #: ``tasks/get``, ``tasks/result``, ``tasks/cancel``: the task asked about.
    task_id: str | None = None


def _is_token(value: object) -> bool:
    return type(value) is int or type(value) is str


def _is_number(value: object) -> bool:
    return type(value) is int or type(value) is float


class Connection:
    """The protocol state of one MCP session, for one role. Not thread- or task-safe:
    the session engine calls it from one task at a time (it never awaits).
    """

    __slots__ = (
        "_admitted",
        "_allowed_in",
        "_allowed_state",
        "_followed",
        "_inbound",
        "_init_params",
        "_next_id",
        "_outbound",
        "_own_caps",
        "_peer",
        "_peer_caps",
        "_progress",
        "_task_requests",
        "max_batch",
        "negotiated",
        "pass_through",
        "peer_initialized",
        "role",
        "state",
        "supported_versions",
    )

    def __init__(
        self,
        role: Role,
        *,
        supported_versions: tuple[str, ...] = SUPPORTED_VERSIONS,
        max_batch: int = DEFAULT_MAX_BATCH,
    ) -> None:
        self.role = role
        self.state = State.NEW
        #: The inbound requests legal in ``_allowed_state`` (INBOUND_REQUESTS's entry, looked
        #: up again when the state is another: a tuple of two enums hashes in Python, twice).
        self._allowed_state: State | None = None
        self._allowed_in: frozenset[str] | None = None
        #: The last method admitted after the handshake and what its admission found,
        #: for as long as the agreement and our capabilities it was checked against are
        #: the same objects: (method, its row, its params type, whether stateless, the
        #: agreement, our capabilities). A peer repeats one method (tools/call): its row,
        #: revision and capability checks are not done again per request.
        self._admitted: tuple[Any, ...] | None = None
        self.supported_versions = supported_versions
        self.max_batch = max_batch
        #: What the handshake agreed on; None until it completes.
        self.negotiated: Negotiated | None = None
        #: Server side: whether ``notifications/initialized`` has arrived.
        self.peer_initialized = False
        self._peer: Peer = "client" if role is Role.SERVER else "server"
        self._inbound: dict[RequestId, str] = {}
        self._outbound: dict[RequestId, _Outbound] = {}
        self._progress: dict[ProgressToken, RequestId] = {}
        #: Tasks whose creating request's progress token stays valid until they end
        #: (task id -> that request's id, which is also its token), and the reverse.
        self._followed: dict[str, RequestId] = {}
        self._task_requests: dict[RequestId, str] = {}
        self._next_id = 1
        self._own_caps: dict[str, Any] | None = None
        self._peer_caps: dict[str, Any] | None = None
        self._init_params: InitializeRequestParams | None = None
        #: Methods whose inbound requests and notifications keep their params as decoded
        #: JSON (not structured): set by a session whose handler relays them untouched.
        #: ``initialize`` is always structured (the lifecycle reads it).
        self.pass_through: Callable[[str], bool] | None = None

    # --- queries --------------------------------------------------------------------------

    @property
    def protocol_version(self) -> str | None:
        """The negotiated protocol version, or None before the handshake completes."""
        return self.negotiated.protocol_version if self.negotiated else None

    def peer_has(self, *path: str) -> bool:
        """Whether the peer declared the capability at ``path`` (wire names)."""
        return has_capability(self._peer_caps, path)

    def own_has(self, *path: str) -> bool:
        """Whether we declared the capability at ``path`` (wire names)."""
        return has_capability(self._own_caps, path)

    def follows_task(self, request_id: RequestId) -> bool:
        """Whether our task-augmented request ``request_id`` was answered with a task that
        has not ended yet as far as we saw: its progress still arrives as
        :class:`ProgressReceived` (the spec keeps the token valid for the task's life)."""
        return request_id in self._task_requests

    def creates_task(self, request_id: RequestId) -> bool:
        """Whether our request ``request_id``, still unanswered, is task-augmented."""
        pending = self._outbound.get(request_id)
        return pending is not None and pending.task

    def followed_count(self) -> int:
        """How many tasks :meth:`follows_task` is true for."""
        return len(self._followed)

    def inbound_in_flight(self) -> list[RequestId]:
        """Ids of the peer's requests we have not answered or forgotten yet."""
        return list(self._inbound)

    def number_requests_from(self, first: int) -> None:
        """Number our next requests from ``first`` on (replicas sharing a session give
        each its own range, so an answer says which replica waits for it)."""
        self._next_id = max(self._next_id, first)

    def outbound_in_flight(self) -> list[RequestId]:
        """Ids of our requests still waiting for an answer."""
        return list(self._outbound)

    # --- receiving ------------------------------------------------------------------------

    def receive(self, data: bytes | str) -> Event:
        """Take one complete JSON text from the peer and report what it was."""
        try:
            obj = parse_json(data)
        except InvalidMessage as exc:
            return self._rejected(exc)
        return self.receive_object(obj)

    def receive_object(self, obj: Any) -> Event:
        """Like :meth:`receive`, for a value already decoded from JSON."""
        if type(obj) is list:
            return self._receive_batch(obj)
        try:
            message = classify(obj)
        except InvalidMessage as exc:
            request_id = exc.request_id
            if not exc.replyable and request_id is not None and request_id in self._outbound:
                # A malformed answer to one of our requests: fail that request now (with
                # what was wrong) instead of leaving it to wait for an answer that came.
                return self._invalid_answer(request_id, exc.message)
            return self._rejected(exc)
        return self._dispatch(message)

    def receive_message(self, message: Message) -> Event:
        """Like :meth:`receive_object`, for one message its transport classified already
        (with :func:`~trimcp.protocol.jsonrpc.classify`): it is not classified twice."""
        if type(message) is Request:  # (nearly always: no _dispatch frame)
            return self._on_request(message)
        return self._dispatch(message)

    def _invalid_answer(self, request_id: RequestId, reason: str) -> ErrorReceived:
        pending = self._outbound.pop(request_id)
        self._drop_progress(pending)
        if pending.method == "initialize":
            self._transition(Transition.RECEIVED_INITIALIZE_ERROR)
        error = RemoteProtocolError(
            INTERNAL_ERROR, f"The peer sent an invalid answer to {pending.method}: {reason}"
        )
        return ErrorReceived(id=request_id, method=pending.method, error=error)

    def _dispatch(self, message: Message) -> Event:
        if type(message) is Request:
            return self._on_request(message)
        if type(message) is Notification:
            return self._on_notification(message)
        if type(message) is Response:
            return self._on_response(message)
        assert type(message) is ErrorResponse
        return self._on_error_response(message)

    def _receive_batch(self, items: list[Any]) -> Event:
        if not allows_batches(self.protocol_version):
            return self._rejected(
                InvalidMessage(
                    INVALID_REQUEST,
                    f"Invalid request: batches are not allowed in protocol version "
                    f"{self.protocol_version or '(not negotiated)'}",
                ),
                _request_ids(items),
            )
        if not items:
            return self._rejected(InvalidMessage(INVALID_REQUEST, "Invalid request: empty batch"))
        if len(items) > self.max_batch:
            # Refused whole, with one error (id null): it settles every request in it.
            return self._rejected(
                InvalidMessage(
                    INVALID_REQUEST, f"Invalid request: batch larger than {self.max_batch}"
                ),
                _request_ids(items),
            )
        events: list[Event] = []
        for item in items:
            try:
                message = classify(item)
            except InvalidMessage as exc:
                events.append(self._rejected(exc))
                continue
            if type(message) is Request and message.method == "initialize":
                events.append(
                    self._rejected(
                        InvalidMessage(
                            INVALID_REQUEST,
                            "Invalid request: initialize must not be part of a batch",
                            request_id=message.id,
                        )
                    )
                )
                continue
            events.append(self._dispatch(message))
        return BatchReceived(events=tuple(events))

    def _rejected(
        self, error: RemoteProtocolError, answers: tuple[RequestId, ...] | None = None
    ) -> MessageRejected:
        if isinstance(error, InvalidMessage):
            if not error.replyable:
                return MessageRejected(error=error, reply=None)
            reply = encode_error(error.request_id, error)
            if answers is None:
                answers = () if error.request_id is None else (error.request_id,)
        else:
            reply = encode_error(None, error)
        return MessageRejected(error=error, reply=reply, answers=answers or ())

    def _reject_request(
        self, request_id: RequestId, code: int, message: str, data: Any = None
    ) -> MessageRejected:
        return self._rejected(InvalidMessage(code, message, request_id=request_id, data=data))

    def _on_request(self, request: Request) -> Event:
        request_id, method = request.id, request.method
        if request_id in self._inbound:
            # The refusal settles nothing: the request that holds the id is still to be
            # answered, and a transport must keep waiting for that answer.
            return self._rejected(
                InvalidMessage(
                    INVALID_REQUEST,
                    f"Invalid request: id {request_id!r} is already in use",
                    request_id=request_id,
                ),
                (),
            )
        state = self.state
        if state is not self._allowed_state:
            self._allowed_in = INBOUND_REQUESTS[(self.role, state)]
            self._allowed_state = state
        allowed = self._allowed_in  # (request_allowed, without its lookup per request)
        if method not in allowed if allowed is not None else method == "initialize":
            rejected = self._reject_request(
                request_id, INVALID_REQUEST, self._state_refusal(method)
            )
            if method == "server/discover" and self.state is State.NEW:
                return attrs.evolve(rejected, expected=True)  # an auto-mode client's probe
            return rejected
        pass_through = self.pass_through
        negotiated = self.negotiated
        structure = pass_through is None or method == "initialize" or not pass_through(method)
        try:
            if negotiated is None:
                params = admit_request(
                    method,
                    request.params,
                    peer=self._peer,
                    version=None,
                    capabilities=None,
                    structure=structure,
                )
            else:
                # (admit_request in its two halves: the first, which depends on the method
                # alone, done once for a method the peer repeats; see _admitted)
                own_caps = self._own_caps
                admitted = self._admitted
                if (
                    admitted is None
                    or admitted[0] != method
                    or admitted[4] is not negotiated
                    or admitted[5] is not own_caps
                ):
                    version = negotiated.protocol_version
                    spec = admitted_method(
                        method, peer=self._peer, version=version, capabilities=own_caps
                    )
                    if spec is None:  # (unknown to the table: its params pass as they are)
                        admitted = (method, None, None, False, None, None)
                    else:
                        admitted = self._admitted = (
                            method,
                            spec,
                            spec.params_type,
                            version in STATELESS_VERSIONS,
                            negotiated,
                            own_caps,
                        )
                params = admitted_params(
                    admitted[1], request.params, admitted[3], structure, admitted[2]
                )
        except RemoteProtocolError as exc:
            return self._reject_request(request_id, exc.code, exc.message, exc.data)
        if method == "initialize":
            assert isinstance(params, InitializeRequestParams)
            # Kept for the session's life: shared with every session that sent the same.
            raw = request.params
            assert raw is not None  # (structured: it has both)
            info, capabilities = recent_client(raw["clientInfo"], raw["capabilities"])
            params = attrs.evolve(params, client_info=info, capabilities=capabilities)
            self._init_params = params
            self._transition(Transition.RECEIVED_INITIALIZE)
        self._inbound[request_id] = method
        # (_progress_token's first tests inlined: a request without params, or without
        # _meta in them, has none: nearly every request)
        raw = request.params
        token = _progress_token(request) if raw and "_meta" in raw else None
        return RequestReceived(id=request_id, method=method, params=params, progress_token=token)

    def _state_refusal(self, method: str) -> str:
        if self.state is State.CLOSED:
            return "Invalid request: the session is closed"
        if method == "initialize":
            return "Invalid request: the session is already initialized"
        if self.role is Role.SERVER:
            return f"Invalid request: {method} before initialization (only ping is allowed)"
        return f"Invalid request: {method} before initialization completed"

    def _on_notification(self, note: Notification) -> Event:
        method, params = note.method, note.params
        if method == "notifications/cancelled":
            return self._on_cancelled(params)
        if method == "notifications/progress":
            return self._on_progress(params)
        if method == "notifications/initialized" and self.role is Role.SERVER:
            self.peer_initialized = True
        spec = lookup(method)
        typed: Any = params
        if spec is not None:
            if spec.kind != "notification" or spec.sender not in (self._peer, "both"):
                return MessageIgnored(reason=f"{method} is not a notification the peer may send")
            pass_through = self.pass_through
            params_type = spec.params_type
            if params_type is not None and (pass_through is None or not pass_through(method)):
                try:
                    typed = serde.structure(params if params is not None else {}, params_type)
                except serde.ShapeError as exc:
                    error = RemoteProtocolError(
                        INVALID_PARAMS, f"Invalid params for {method}: {exc}"
                    )
                    return MessageRejected(error=error, reply=None)
        if method == "notifications/tasks/status" and self._followed:
            if type(typed) is dict:  # passed through untouched (a relay)
                status, task_id = typed.get("status"), typed.get("taskId")
            else:
                status, task_id = getattr(typed, "status", None), getattr(typed, "task_id", None)
            if status in TERMINAL_TASK_STATUSES:
                self._forget_task(task_id)
        return NotificationReceived(method=method, params=typed)

    def _on_cancelled(self, params: dict[str, Any] | None) -> Event:
        request_id = params.get("requestId") if params else None
        if not _is_token(request_id):
            return MessageIgnored(reason="notifications/cancelled without a valid requestId")
        assert request_id is not None
        method = self._inbound.get(request_id)
        if method is None:
            return MessageIgnored(reason=f"cancel for unknown or finished request {request_id!r}")
        if method == "initialize":
            return MessageIgnored(reason="initialize cannot be cancelled")
        reason = params.get("reason") if params else None
        return CancelReceived(request_id=request_id, reason=reason if type(reason) is str else None)

    def _on_progress(self, params: dict[str, Any] | None) -> Event:
        if not params:
            return MessageIgnored(reason="notifications/progress without params")
        token = params.get("progressToken")
        progress = params.get("progress")
        if not _is_token(token) or not _is_number(progress):
            return MessageIgnored(reason="malformed notifications/progress")
        assert token is not None
        assert progress is not None
        request_id = self._progress.get(token)
        if request_id is None:
            return MessageIgnored(reason=f"progress for unknown or finished token {token!r}")
        total = params.get("total")
        message = params.get("message")
        return ProgressReceived(
            request_id=request_id,
            progress=progress,
            total=total if _is_number(total) else None,
            message=message if type(message) is str else None,
        )

    def _on_response(self, response: Response) -> Event:
        pending = self._outbound.pop(response.id, None)
        if pending is None:
            request_id = response.id
            if type(request_id) is int and 0 < request_id < self._next_id:
                # Ours, no longer awaited (cancelled or timed out): the engine decides.
                return LateResponseReceived(id=request_id, result=response.result)
            return MessageIgnored(reason=f"response for unknown request {request_id!r}")
        self._drop_progress(pending)
        method = pending.method
        result: Any = response.result
        if pending.raw:  # relayed: the requester judges it (classify made sure it is an object)
            if pending.task and pending.progress_token is not None:
                task = result.get("task") if type(result) is dict else None
                task_id = task.get("taskId") if type(task) is dict else None
                if type(task_id) is str:
                    self._follow(task_id, response.id)
            elif pending.task_id is not None and (
                method == "tasks/result" or result.get("status") in TERMINAL_TASK_STATUSES
            ):
                self._forget_task(pending.task_id)
            return ResponseReceived(id=response.id, method=method, result=result)
        result_type = CreateTaskResult if pending.task else _result_type_of(method, result)
        if result_type is None:
            error = RemoteProtocolError(
                INTERNAL_ERROR,
                f"The peer sent a {method} result with resultType "
                f"{result.get('resultType')!r}, which a {method} result cannot have",
            )
            if method == "initialize":
                self._transition(Transition.RECEIVED_INITIALIZE_ERROR)
            return ErrorReceived(id=response.id, method=method, error=error)
        if result_type is not False:
            try:
                result = serde.structure(result, result_type)
            except serde.ShapeError as exc:
                error = RemoteProtocolError(
                    INTERNAL_ERROR, f"The peer sent an invalid {method} result: {exc}"
                )
                if method == "initialize":
                    self._transition(Transition.RECEIVED_INITIALIZE_ERROR)
                return ErrorReceived(id=response.id, method=method, error=error)
        if method == "initialize":
            return self._on_initialize_result(response.id, result)
        if pending.task and pending.progress_token is not None:
            assert isinstance(result, CreateTaskResult)
            self._follow(result.task.task_id, response.id)
        elif pending.task_id is not None and (
            method == "tasks/result" or getattr(result, "status", "") in TERMINAL_TASK_STATUSES
        ):
            self._forget_task(pending.task_id)
        return ResponseReceived(id=response.id, method=method, result=result)

    def _on_initialize_result(self, request_id: RequestId, result: Any) -> Event:
        assert isinstance(result, InitializeResult)
        assert self._init_params is not None
        if result.protocol_version not in self.supported_versions:
            self._transition(Transition.RECEIVED_INITIALIZE_ERROR)
            error = RemoteProtocolError(
                UNSUPPORTED_PROTOCOL_VERSION,
                f"The server chose protocol version {result.protocol_version!r}, "
                f"which this client does not support",
                {"supported": list(self.supported_versions), "requested": result.protocol_version},
            )
            return ErrorReceived(id=request_id, method="initialize", error=error)
        self._set_negotiated(self._init_params, result)
        self._transition(Transition.RECEIVED_INITIALIZE_RESULT)
        return ResponseReceived(id=request_id, method="initialize", result=result)

    def _on_error_response(self, response: ErrorResponse) -> Event:
        if response.id is None:
            return ErrorReceived(id=None, method=None, error=response.error)
        pending = self._outbound.pop(response.id, None)
        if pending is None:
            return MessageIgnored(reason=f"error for unknown or cancelled request {response.id!r}")
        self._drop_progress(pending)
        if pending.method == "initialize":
            self._transition(Transition.RECEIVED_INITIALIZE_ERROR)
        # tasks/result answers the task's own error when it failed; -32602 is an unknown,
        # expired or already ended task.
        if pending.task_id is not None and (
            pending.method == "tasks/result" or response.error.code == INVALID_PARAMS
        ):
            self._forget_task(pending.task_id)
        return ErrorReceived(id=response.id, method=pending.method, error=response.error)

    # --- sending --------------------------------------------------------------------------

    def send_request(
        self,
        method: str,
        params: Any = None,
        *,
        with_progress: bool = False,
        raw_result: bool = False,
    ) -> tuple[RequestId, bytes]:
        """Encode a new request. Returns its id (never reused) and the bytes to send.

        ``with_progress`` allocates a progress token (added to ``params._meta``) so the
        peer's progress notifications arrive as :class:`ProgressReceived`. ``raw_result``: the
        answer's result is reported as decoded JSON, never structured (for relaying). Raises
        :class:`LocalProtocolError` when the lifecycle, the negotiated version or the
        peer's capabilities do not allow the request (a task-augmented one, params with
        ``task`` on a request that may run as a task, needs the peer's
        ``tasks.requests.<method>`` capability too).
        """
        if not request_allowed(OUTBOUND_REQUESTS, self.role, self.state, method):
            raise LocalProtocolError(self._local_state_refusal(method))
        spec = lookup(method)
        if spec is not None:
            self._check_outbound(spec, "request")
        raw = _wire(params)
        task = method in _AUGMENTABLE and isinstance(raw, dict) and raw.get("task") is not None
        if task:
            self._check_task_augmented(method)
        request_id = self._next_id
        self._next_id += 1
        token: ProgressToken | None = None
        if with_progress:
            token = request_id
            raw = dict(raw) if raw is not None else {}
            meta = raw.get("_meta")
            raw["_meta"] = (
                {**meta, "progressToken": token}
                if isinstance(meta, dict)
                else {"progressToken": token}
            )
        data = _encode(request_object(request_id, method, raw))
        task_id = raw.get("taskId") if method in _TASK_METHODS and type(raw) is dict else None
        self._outbound[request_id] = _Outbound(
            method, token, task, raw_result, task_id if type(task_id) is str else None
        )
        if token is not None:
            self._progress[token] = request_id
        if method == "initialize":
            self._init_params = (
                params
                if isinstance(params, InitializeRequestParams)
                else serde.structure(raw or {}, InitializeRequestParams)
            )
            self._transition(Transition.SENT_INITIALIZE)
        return request_id, data

    def adopt_stateless(self, negotiated: Negotiated) -> None:
        """Client role, stateless revision (2026-07-28): start operating at the version in
        ``negotiated`` without a handshake (it was chosen from ``server/discover`` or
        pinned). Later requests are checked against that version and the server's
        capabilities, as after ``initialize``. Raises :class:`LocalProtocolError` when
        this connection is not a client that has not begun a handshake.
        """
        if self.role is not Role.CLIENT or self.state is not State.NEW:
            raise LocalProtocolError(
                "Only a client connection that has not begun a handshake can adopt a "
                "stateless protocol version"
            )
        self.negotiated = negotiated
        self._own_caps = serde.unstructure(negotiated.client_capabilities)
        self._peer_caps = wire_capabilities(negotiated.server_capabilities)
        self._transition(Transition.ADOPTED_STATELESS)

    def _local_state_refusal(self, method: str) -> str:
        if self.state is State.CLOSED:
            return f"Cannot send {method}: the session is closed"
        if method == "initialize":
            return "Cannot send initialize: the session is already initializing or initialized"
        return f"Cannot send {method} before initialization completed"

    def _check_outbound(self, spec: Method[Any, Any], kind: str) -> None:
        if spec.kind != kind or spec.sender not in (self.role.value, "both"):
            raise LocalProtocolError(
                f"A {self.role.value} cannot send {spec.name} as a {kind}", METHOD_NOT_FOUND
            )
        version = self.protocol_version
        if spec.name in tasks_ext.METHODS and is_stateless(version):
            return  # an extension method in 2026-07-28 (the server judges it)
        if version is not None and version not in spec.revisions:
            raise LocalProtocolError(
                f"{spec.name} does not exist in the negotiated protocol version {version}",
                METHOD_NOT_FOUND,
            )
        if spec.capability is None or self.negotiated is None:
            return
        if kind == "request" and not has_capability(self._peer_caps, spec.capability):
            raise LocalProtocolError(
                f"Cannot send {spec.name}: the {self._peer} did not declare the "
                f"{'.'.join(spec.capability)} capability",
                METHOD_NOT_FOUND,
            )
        if kind == "notification" and not has_capability(self._own_caps, spec.capability):
            raise LocalProtocolError(
                f"Cannot send {spec.name}: we did not declare the "
                f"{'.'.join(spec.capability)} capability",
                METHOD_NOT_FOUND,
            )

    def _check_task_augmented(self, method: str) -> None:
        """Refuse a task-augmented request (params with ``task``) the peer did not say it
        runs as a task: it would answer a plain result where a ``CreateTaskResult`` is
        awaited. 2026-07-28 has no ``task`` param (the extension's server decides)."""
        if self.negotiated is None or is_stateless(self.protocol_version):
            return
        path = task_capability(method)
        if not has_capability(self._peer_caps, path):
            raise LocalProtocolError(
                f"Cannot send {method} as a task: the {self._peer} did not declare the "
                f"{'.'.join(path)} capability; send it without 'task'",
                METHOD_NOT_FOUND,
            )

    def send_notification(self, method: str, params: Any = None) -> bytes:
        """Encode a notification. Raises :class:`LocalProtocolError` when it is not allowed."""
        if self.state is State.CLOSED:
            raise LocalProtocolError(f"Cannot send {method}: the session is closed")
        spec = lookup(method)
        if spec is not None:
            self._check_outbound(spec, "notification")
        return _encode(notification_object(method, _wire(params)))

    def send_result(self, request_id: RequestId, result: Any) -> bytes:
        """Encode the successful answer to the peer's request ``request_id``.

        Raises :class:`LocalProtocolError` when that request is not in flight (already
        answered, forgotten after a cancel, or never received) or the result cannot be
        encoded as JSON; the request then stays in flight, so an error can still be sent.
        """
        method = self._inbound.get(request_id)
        if method is None:
            raise LocalProtocolError(f"No in-flight request {request_id!r} to answer")
        # (_wire and _encode inlined: once per answer)
        raw = result if result is None or type(result) is dict else serde.unstructure(result)
        try:
            data = dump_json(response_object(request_id, raw if raw is not None else {}))
        except (TypeError, ValueError, RecursionError) as exc:
            raise LocalProtocolError(
                f"Message cannot be encoded as JSON: {exc}", INTERNAL_ERROR
            ) from exc
        del self._inbound[request_id]
        if method == "initialize":
            assert self._init_params is not None
            typed = (
                result
                if isinstance(result, InitializeResult)
                else serde.structure(raw, InitializeResult)
            )
            self._set_negotiated(self._init_params, typed)
            self._transition(Transition.SENT_INITIALIZE_RESULT)
        return data

    def send_error(self, request_id: RequestId, error: McpError) -> bytes:
        """Encode an error answer to the peer's request ``request_id``."""
        method = self._inbound.pop(request_id, None)
        if method is None:
            raise LocalProtocolError(f"No in-flight request {request_id!r} to answer")
        if method == "initialize":
            self._transition(Transition.SENT_INITIALIZE_ERROR)
        return encode_error(request_id, error)

    def forget_inbound(self, request_id: RequestId) -> None:
        """Drop the peer's request without answering it (it was cancelled)."""
        self._inbound.pop(request_id, None)

    def cancel_outbound(self, request_id: RequestId, reason: str | None = None) -> bytes | None:
        """Forget our request and encode the ``notifications/cancelled`` to send for it.

        A response arriving later is reported as :class:`LateResponseReceived` (the
        engine drops it, or hands it to whoever asked). Returns None when there is nothing to cancel
        (already answered) or when it must not be cancelled (``initialize``).
        """
        pending = self._outbound.pop(request_id, None)
        if pending is None:
            return None
        self._drop_progress(pending)
        if pending.method == "initialize" or self.state is State.CLOSED:
            return None
        params: dict[str, Any] = {"requestId": request_id}
        if reason is not None:
            params["reason"] = reason
        return _encode(notification_object("notifications/cancelled", params))

    def close(self) -> list[RequestId]:
        """Move to CLOSED; returns the ids of our requests that will now never be answered."""
        self._transition(Transition.CLOSED)
        pending = list(self._outbound)
        self._outbound.clear()
        self._progress.clear()
        self._followed.clear()
        self._task_requests.clear()
        self._inbound.clear()
        return pending

    def resting_state(self) -> dict[str, Any]:
        """The state another process needs to go on with this session, as plain JSON data.

        Only what lasts between requests: the lifecycle state and what the handshake agreed
        on (version, both identities and capabilities, instructions). Requests under way
        are not included: they belong to the process running them.
        """
        state: dict[str, Any] = {
            "v": 1,
            "role": self.role.value,
            "state": self.state.value,
            "peerInitialized": self.peer_initialized,
        }
        negotiated = self.negotiated
        if negotiated is not None and negotiated.client_info is not None:  # session era
            state["params"] = serde.unstructure(
                InitializeRequestParams(
                    protocol_version=negotiated.protocol_version,
                    capabilities=negotiated.client_capabilities,
                    client_info=negotiated.client_info,
                )
            )
            state["result"] = serde.unstructure(
                InitializeResult(
                    protocol_version=negotiated.protocol_version,
                    capabilities=negotiated.server_capabilities,
                    server_info=negotiated.server_info,
                    instructions=negotiated.instructions,
                )
            )
        return state

    def restore(self, state: dict[str, Any]) -> None:
        """Take over a state made by :meth:`resting_state` (on a fresh connection).

        Raises ValueError when ``state`` is not one (another format version, another role,
        malformed fields): the caller treats the session as unknown.
        """
        try:
            if state.get("v") != 1 or state.get("role") != self.role.value:
                raise ValueError("not a resting state of this format and role")
            lifecycle = State(state["state"])
            peer_initialized = state["peerInitialized"]
            if type(peer_initialized) is not bool:
                raise ValueError("peerInitialized must be a boolean")
            if "params" in state:
                params = serde.structure(state["params"], InitializeRequestParams)
                result = serde.structure(state["result"], InitializeResult)
                self._set_negotiated(params, result)
        except (KeyError, TypeError, AttributeError) as error:
            raise ValueError(f"malformed resting state: {error!r}") from None
        except Exception as error:  # cattrs's structure errors (exception groups)
            if isinstance(error, ValueError):
                raise
            raise ValueError(f"malformed resting state: {error!r}") from None
        self.state = lifecycle
        self.peer_initialized = peer_initialized

    def compact(self) -> None:
        """Release the memory of emptied request tables (for long idle sessions): each
        empty one becomes the shared sealed table until :meth:`reopen`."""
        # A dict keeps the table it grew to after its items go, and even a fresh one costs
        # 64 bytes: a resting session holds none of its own.
        if not self._inbound:
            self._inbound = SEALED
        if not self._outbound:
            self._outbound = SEALED
        if not self._progress:
            self._progress = SEALED
        if not self._followed:
            self._followed, self._task_requests = SEALED, SEALED

    def reopen(self) -> None:
        """Fresh tables for those :meth:`compact` sealed: the session is awake again (call
        it before anything is received or sent)."""
        if self._inbound is SEALED:
            self._inbound = {}
        if self._outbound is SEALED:
            self._outbound = {}
        if self._progress is SEALED:
            self._progress = {}
        if self._followed is SEALED:
            self._followed, self._task_requests = {}, {}

    # --- internals ------------------------------------------------------------------------

    def _transition(self, transition: Transition) -> None:
        self.state = next_state(self.role, self.state, transition)

    def _drop_progress(self, pending: _Outbound) -> None:
        if pending.progress_token is not None:
            self._progress.pop(pending.progress_token, None)

    def _follow(self, task_id: str, request_id: RequestId) -> None:
        """Keep the progress token of ``request_id`` (its id) valid while ``task_id`` runs."""
        if task_id in self._followed or request_id in self._task_requests:
            return  # a peer reusing a task id: keep the first
        if len(self._followed) >= MAX_FOLLOWED_TASKS:
            self._forget_task(next(iter(self._followed)))
        self._followed[task_id] = request_id
        self._task_requests[request_id] = task_id
        self._progress[request_id] = request_id

    def _forget_task(self, task_id: object) -> None:
        """The task ended (or is forgotten): its creating request's token is no more."""
        if not self._followed or type(task_id) is not str:
            return
        request_id = self._followed.pop(task_id, None)
        if request_id is not None:
            del self._task_requests[request_id]
            self._progress.pop(request_id, None)

    def _set_negotiated(self, params: InitializeRequestParams, result: InitializeResult) -> None:
        self.negotiated = Negotiated.from_handshake(params, result)
        self._init_params = None  # ``negotiated`` holds what is still needed of it
        client_caps = wire_capabilities(params.capabilities)
        server_caps = wire_capabilities(result.capabilities)
        if self.role is Role.SERVER:
            self._own_caps, self._peer_caps = server_caps, client_caps
        else:
            self._own_caps, self._peer_caps = client_caps, server_caps


#: The wire form of the capabilities objects seen last, by identity (each entry holds its
#: object, so the id stays its own): a server declares the same capabilities object to
#: every session, clients of one kind share theirs (:func:`~trimcp.protocol.modern.
#: recent_client`), and thousands of sessions need not hold a dict each (they are only read).
_wire_caps: dict[int, tuple[object, dict[str, Any]]] = {}
#: At most this many entries (the oldest goes first).
_WIRE_CAPS_ENTRIES: Final = 16


def wire_capabilities(capabilities: object) -> dict[str, Any]:
    """The wire form of a capabilities object, kept for the objects seen last (a server
    hands every request the same object until what it registers changes; sessions of
    clients that declared the same capabilities share one object)."""
    entry = _wire_caps.get(id(capabilities))
    if entry is not None and entry[0] is capabilities:
        return entry[1]
    wire: dict[str, Any] = serde.unstructure(capabilities)
    if len(_wire_caps) >= _WIRE_CAPS_ENTRIES:
        del _wire_caps[next(iter(_wire_caps))]
    _wire_caps[id(capabilities)] = (capabilities, wire)
    return wire


def _request_ids(items: list[Any]) -> tuple[RequestId, ...]:
    """The ids of the members of a batch that look like requests (for a refusal of it all)."""
    ids: list[RequestId] = []
    for item in items:
        if type(item) is dict and "method" in item:
            request_id = item.get("id")
            if type(request_id) is int or type(request_id) is str:
                ids.append(request_id)
    return tuple(ids)


def _result_type_of(method: str, result: Any) -> type | bool | None:
    """The class to structure a result of ``method`` as; ``False`` when it is free-form.

    ``None`` when the result claims a ``resultType`` it may not have: one the core
    protocol does not define (the spec says to treat it as invalid), or
    ``input_required`` on a request that cannot need input.
    """
    spec = lookup(method)
    if spec is None:
        return False
    kind = result.get("resultType") if type(result) is dict else None
    if kind not in _RESULT_TYPES:
        return None
    if kind == "input_required":
        return InputRequiredResult if method in INPUT_REQUIRED_METHODS else None
    if kind == tasks_ext.RESULT_TYPE_TASK:
        # The tasks extension: a flat CreateTaskResult, read by the client's task code.
        return False if method == "tools/call" else None
    if kind is not None and method in tasks_ext.METHODS:
        return False  # the extension's 2026 shapes (ttlMs, inline result...)
    result_type = spec.result_type
    return False if result_type is None else result_type


def _progress_token(request: Request) -> ProgressToken | None:
    params = request.params
    if not params:
        return None
    meta = params.get("_meta")
    if type(meta) is not dict:
        return None
    token = meta.get("progressToken")
    return token if _is_token(token) else None


def _wire(value: Any) -> Any:
    """Plain JSON data for a typed object; dicts and None pass through unchanged."""
    if value is None or type(value) is dict:
        return value
    return serde.unstructure(value)


def _encode(obj: dict[str, Any]) -> bytes:
    try:
        return dump_json(obj)
    except (TypeError, ValueError, RecursionError) as exc:
        raise LocalProtocolError(
            f"Message cannot be encoded as JSON: {exc}", INTERNAL_ERROR
        ) from exc
