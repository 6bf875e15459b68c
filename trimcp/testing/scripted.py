"""``ScriptedServer``: a fake MCP server you script, to test clients message by message.

    server = ScriptedServer()
    server.expect("tools/call", {"name": "slow"}).progress(1, 2).delay(5).reply(result)
    async with server.open_client() as client:      # a trimcp Client connected to it
        await client.call_tool("slow")
    assert server.requests("tools/call")[0]["params"]["arguments"] == {}

It speaks raw JSON-RPC (dicts), so it can send what no real server would: a malformed
answer, a late one, an unknown id. Each expected message runs its actions (reply, error,
notify, progress, delay, request, send, hold) in order, in a task of its own, so requests
can overlap as they do with a real server; ``notifications/cancelled`` cancels the actions
of that request. A message no expectation matches is recorded as a failure (a request also
gets a ``-32603`` answer naming the problem, so the client never hangs); failures and unmet
expectations raise :class:`ScriptError` when the ``open_*`` block ends.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Awaitable, Callable, Collection, Mapping
from contextlib import asynccontextmanager
from typing import Any, Unpack

import trio

from trimcp._groups import open_nursery_unwrapped
from trimcp.client import Client, ClientKwargs, connect_transport
from trimcp.protocol.jsonrpc import dump_json
from trimcp.protocol.versions import LATEST_VERSION, STATELESS_VERSIONS, SUPPORTED_VERSIONS
from trimcp.serde import unstructure
from trimcp.session import SessionOptions
from trimcp.session.transport import Outgoing, Transport
from trimcp.transports.memory import MemoryTransport, memory_transport_pair

Message = dict[str, Any]
Matcher = Mapping[str, Any] | Callable[[Any], bool] | None
_Action = Callable[["_Run"], Awaitable[None]]

#: What ``initialize`` declares unless told otherwise: everything, so the client refuses
#: no request locally for want of a capability.
ALL_CAPABILITIES: Message = {
    "tools": {"listChanged": True},
    "resources": {"subscribe": True, "listChanged": True},
    "prompts": {"listChanged": True},
    "completions": {},
    "logging": {},
}


class ScriptError(AssertionError):
    """The client did not send what the script expected (or sent something it did not)."""


def matches(expected: Any, actual: Any) -> bool:
    """Whether ``actual`` fits ``expected``: a predicate is called; a mapping matches a
    dict holding at least those keys (recursively); anything else compares equal."""
    if expected is None:
        return True
    if callable(expected):
        return bool(expected(actual))
    if isinstance(expected, Mapping):
        return isinstance(actual, dict) and all(
            key in actual and matches(value, actual[key]) for key, value in expected.items()
        )
    return bool(expected == actual)


def _wire(value: Any) -> Any:
    return (
        value
        if isinstance(value, dict | list | str | int | float | bool) or value is None
        else unstructure(value)
    )


class Expectation:
    """One message the script expects, and what to do when it arrives.

    The action methods return the expectation, so they chain; they run in the order
    given. ``message`` is the message that matched (None until then), ``responses`` the
    client's answers to the requests this expectation sent.
    """

    def __init__(self, method: str, params: Matcher) -> None:
        self.method = method
        self.params = params
        self.message: Message | None = None
        self.responses: list[Message] = []
        self.finished = False
        self._actions: list[_Action] = []

    def __repr__(self) -> str:
        shown = "" if self.params is None else f" {self.params!r}"
        return f"<expect {self.method}{shown}>"

    def _then(self, action: _Action) -> Expectation:
        self._actions.append(action)
        return self

    def reply(self, result: Any = None) -> Expectation:
        """Answer the request with ``result`` (a dict or a typed ``trimcp.types`` object;
        None sends ``{}``)."""

        async def act(run: _Run) -> None:
            await run.answer({"result": {} if result is None else _wire(result)})

        return self._then(act)

    def error(self, code: int, message: str, data: Any = None) -> Expectation:
        """Answer the request with a JSON-RPC error."""
        body: Message = {"code": code, "message": message}
        if data is not None:
            body["data"] = data

        async def act(run: _Run) -> None:
            await run.answer({"error": body})

        return self._then(act)

    def notify(self, method: str, params: Any = None) -> Expectation:
        """Send a notification (``params`` a dict or a typed object)."""
        message: Message = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = _wire(params)

        async def act(run: _Run) -> None:
            await run.send(message)

        return self._then(act)

    def progress(
        self, progress: float, total: float | None = None, message: str | None = None
    ) -> Expectation:
        """Send ``notifications/progress`` with the request's own progress token (a failure
        if the request carried none)."""

        async def act(run: _Run) -> None:
            meta = (run.message.get("params") or {}).get("_meta") or {}
            token = meta.get("progressToken") if isinstance(meta, dict) else None
            if token is None:
                run.server._fail(f"{self!r}: progress() but the request has no progressToken")
                return
            params: Message = {"progressToken": token, "progress": progress}
            if total is not None:
                params["total"] = total
            if message is not None:
                params["message"] = message
            await run.send({"jsonrpc": "2.0", "method": "notifications/progress", "params": params})

        return self._then(act)

    def delay(self, seconds: float) -> Expectation:
        """Wait ``seconds`` (Trio's clock: instant under ``autojump_clock``)."""

        async def act(run: _Run) -> None:
            await trio.sleep(seconds)

        return self._then(act)

    def hold(self, event: trio.Event) -> Expectation:
        """Wait until the test sets ``event`` (deterministic ordering without sleeps)."""

        async def act(run: _Run) -> None:
            await event.wait()

        return self._then(act)

    def request(self, method: str, params: Any = None) -> Expectation:
        """Send a request to the client and wait for its answer (at most the server's
        ``response_timeout``; a failure if none comes); the answer is appended to
        ``responses``."""

        async def act(run: _Run) -> None:
            answer = await run.server._request(method, params)
            if answer is not None:
                self.responses.append(answer)

        return self._then(act)

    def send(self, message: Message | bytes) -> Expectation:
        """Send anything: a dict as JSON, bytes as they are (malformed input included)."""

        async def act(run: _Run) -> None:
            await run.send(message)

        return self._then(act)


class _Run:
    """The running actions of one matched message."""

    def __init__(self, server: ScriptedServer, message: Message) -> None:
        self.server = server
        self.message = message

    async def send(self, message: Message | bytes) -> None:
        await self.server._send(message)

    async def answer(self, body: Message) -> None:
        if "id" not in self.message:
            self.server._fail(f"cannot answer the notification {self.message.get('method')!r}")
            return
        await self.send({"jsonrpc": "2.0", "id": self.message["id"], **body})


class ScriptedServer:
    """A fake MCP server that follows a script; see the module docstring.

    ``name``/``version`` and ``capabilities`` (a dict or ``ServerCapabilities``, default
    :data:`ALL_CAPABILITIES`) make the automatic ``initialize`` answer; ``protocol_version``
    forces the version it answers (default: the client's if supported, else the latest).
    ``server/discover`` is answered too: with a ``DiscoverResult`` when ``protocol_version``
    is ``"2026-07-28"`` (the script then plays a stateless server: no ``initialize``
    comes), else with ``-32601`` as a 2025 server would (the client falls back).
    With ``auto_initialize=False`` the script must expect ``initialize`` (and
    ``server/discover``) and ``notifications/initialized`` itself; ``auto_ping`` answers
    pings. ``ordered``: messages
    must arrive in the order expected (else any unmet expectation that matches is taken).
    ``ignore``: methods that are recorded but never a failure. ``response_timeout`` bounds
    each wait for the client's answer to a scripted request.
    """

    def __init__(
        self,
        *,
        name: str = "scripted",
        version: str = "1.0.0",
        capabilities: Any = None,
        instructions: str | None = None,
        protocol_version: str | None = None,
        auto_initialize: bool = True,
        auto_ping: bool = True,
        ordered: bool = True,
        ignore: Collection[str] = (),
        response_timeout: float = 10.0,
    ) -> None:
        self.info: Message = {"name": name, "version": version}
        self.capabilities: Message = (
            dict(ALL_CAPABILITIES) if capabilities is None else _wire(capabilities)
        )
        self.instructions = instructions
        self.protocol_version = protocol_version
        self.auto_initialize = auto_initialize
        self.auto_ping = auto_ping
        self.ordered = ordered
        self.ignore = frozenset(ignore)
        self.response_timeout = response_timeout
        #: Every message received from the client, in order (batches flattened).
        self.received: list[Message] = []
        #: Every message sent to the client, as the bytes sent.
        self.sent: list[bytes] = []
        #: What went wrong, one line each; :meth:`check` raises when this is not empty.
        self.failures: list[str] = []
        self.expectations: list[Expectation] = []
        self._transport: Transport | None = None
        self._running: dict[Any, trio.CancelScope] = {}
        self._waiting: dict[int, tuple[trio.Event, list[Message]]] = {}
        self._next_id = 0
        self._closing = False
        self._changed = trio.Event()

    # --- the script -----------------------------------------------------------------------

    def expect(self, method: str, params: Matcher = None) -> Expectation:
        """Expect a request or notification ``method`` whose params match ``params`` (a
        dict matched as a subset, or a predicate). Chain actions on the result."""
        expectation = Expectation(method, params)
        self.expectations.append(expectation)
        return expectation

    @property
    def pending(self) -> list[Expectation]:
        """Expectations not matched yet, or whose actions are still running."""
        return [e for e in self.expectations if not e.finished]

    def requests(self, method: str | None = None) -> list[Message]:
        """The requests received (of ``method``), in order."""
        return [
            m
            for m in self.received
            if "id" in m and "method" in m and (method is None or m["method"] == method)
        ]

    def notifications(self, method: str | None = None) -> list[Message]:
        """The notifications received (of ``method``), in order."""
        return [
            m
            for m in self.received
            if "id" not in m and "method" in m and (method is None or m["method"] == method)
        ]

    def check(self) -> None:
        """Raise :class:`ScriptError` if anything failed or an expectation is unmet."""
        problems = list(self.failures)
        problems += [f"never received: {e!r}" for e in self.expectations if e.message is None]
        if problems:
            raise ScriptError("ScriptedServer: " + "; ".join(problems))

    async def wait_done(self, timeout: float = 10.0) -> None:
        """Wait until every expectation is matched and its actions have finished.

        Raises :class:`ScriptError` (with what is still pending) after ``timeout``
        seconds. Cancellation: only stops the waiting.
        """
        with trio.move_on_after(timeout):
            while self.pending:
                await self._changed.wait()
            return
        raise ScriptError(f"ScriptedServer: still pending after {timeout} s: {self.pending!r}")

    # --- running --------------------------------------------------------------------------

    async def serve(
        self, transport: Transport, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
    ) -> None:
        """Follow the script on ``transport`` until the client closes it.

        Cancellation: stops reading; actions still running are cancelled. Either way, the
        running actions are cancelled when the client hangs up.
        """
        self._transport = transport
        async with trio.open_nursery() as nursery:
            task_status.started()
            while True:
                try:
                    data = await transport.receive()
                except (trio.EndOfChannel, trio.ClosedResourceError, trio.BrokenResourceError):
                    break
                self._dispatch(data if isinstance(data, bytes) else dump_json(data.value), nursery)
            nursery.cancel_scope.cancel()

    @asynccontextmanager
    async def open_transport(self, max_buffered: int = 64) -> AsyncIterator[MemoryTransport]:
        """Serve the script on a memory pair and yield the client's end of it.

        On a normal exit, raises :class:`ScriptError` when the script was not followed
        (on an exception, the failures are added to it as a note). Cancellation: the
        scripted side is cancelled when the block ends.
        """
        client_end, server_end = memory_transport_pair(max_buffered)
        try:
            async with open_nursery_unwrapped() as nursery:
                await nursery.start(self.serve, server_end)
                try:
                    yield client_end
                finally:
                    self._closing = True
                    await client_end.aclose()
                    nursery.cancel_scope.cancel()
        except Exception as exc:
            if self.failures:
                exc.add_note("ScriptedServer: " + "; ".join(self.failures))
            raise
        self.check()

    @asynccontextmanager
    async def open_client(
        self, *, options: SessionOptions | None = None, **client_kwargs: Unpack[ClientKwargs]
    ) -> AsyncIterator[Client]:
        """A trimcp :class:`Client` connected to this script (initialized, unless
        ``auto_initialize`` is off and the script does not answer). The client's ``mode``
        defaults to ``"auto"`` for a 2026-07-28 script and to ``"legacy"`` for others, so
        a session-era script sees ``initialize`` first, as before. Same exit checks and
        cancellation as :meth:`open_transport`."""
        if "mode" not in client_kwargs and self.protocol_version not in STATELESS_VERSIONS:
            client_kwargs["mode"] = "legacy"
        async with (
            self.open_transport() as transport,
            connect_transport(transport, options=options, **client_kwargs) as client,
        ):
            yield client

    # --- internals ------------------------------------------------------------------------

    def _fail(self, problem: str) -> None:
        self.failures.append(problem)
        self._notify_changed()

    def _notify_changed(self) -> None:
        self._changed.set()
        self._changed = trio.Event()

    async def _send(self, message: Message | bytes) -> None:
        assert self._transport is not None
        data = message if isinstance(message, bytes) else json.dumps(message).encode()
        try:
            await self._transport.send([Outgoing(data)])
            self.sent.append(data)
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            # Leaving the block while an action still sends is the test's choice, not a
            # deviation from the script; a client that hangs up mid-script is one.
            if not self._closing:
                self._fail(f"the client had gone when sending {data[:200]!r}")

    def _dispatch(self, data: bytes, nursery: trio.Nursery) -> None:
        try:
            decoded = json.loads(data)
        except ValueError:
            self._fail(f"not JSON: {data[:200]!r}")
            return
        for message in decoded if isinstance(decoded, list) else [decoded]:
            if not isinstance(message, dict):
                self._fail(f"not a JSON-RPC message: {message!r}")
                continue
            self.received.append(message)
            self._handle(message, nursery)
        self._notify_changed()

    def _handle(self, message: Message, nursery: trio.Nursery) -> None:
        method = message.get("method")
        if method is None:
            self._resolve(message)
            return
        if method == "notifications/cancelled":
            params = message.get("params") or {}
            scope = self._running.get(params.get("requestId"))
            if scope is not None:
                scope.cancel()
        if self.auto_initialize and method == "initialize":
            nursery.start_soon(self._send, self._initialize_answer(message))
            return
        if self.auto_initialize and method == "server/discover" and "id" in message:
            nursery.start_soon(self._send, self._discover_answer(message))
            return
        if self.auto_initialize and method == "notifications/initialized":
            return
        if self.auto_ping and method == "ping" and "id" in message:
            nursery.start_soon(self._send, {"jsonrpc": "2.0", "id": message["id"], "result": {}})
            return
        expectation = self._match(message)
        if expectation is None:
            if method in self.ignore:
                return
            wanted = [e for e in self.expectations if e.message is None]
            hint = f" (expected {wanted[0]!r})" if wanted and self.ordered else ""
            problem = f"unexpected {method!r}{hint}: {json.dumps(message)[:300]}"
            self._fail(problem)
            if "id" in message:
                nursery.start_soon(
                    self._send,
                    {
                        "jsonrpc": "2.0",
                        "id": message["id"],
                        "error": {"code": -32603, "message": f"ScriptedServer: {problem}"},
                    },
                )
            return
        expectation.message = message
        nursery.start_soon(self._run, expectation, message)

    def _match(self, message: Message) -> Expectation | None:
        for expectation in self.expectations:
            if expectation.message is not None:
                continue
            if expectation.method == message["method"] and matches(
                expectation.params, message.get("params")
            ):
                return expectation
            if self.ordered:
                return None
        return None

    async def _run(self, expectation: Expectation, message: Message) -> None:
        run = _Run(self, message)
        request_id = message.get("id")
        try:
            with trio.CancelScope() as scope:
                if request_id is not None:
                    self._running[request_id] = scope
                for action in expectation._actions:
                    await action(run)
        finally:
            if request_id is not None:
                self._running.pop(request_id, None)
            expectation.finished = True
            self._notify_changed()

    def _initialize_answer(self, message: Message) -> Message:
        asked = (message.get("params") or {}).get("protocolVersion")
        version = self.protocol_version or (
            asked if asked in SUPPORTED_VERSIONS else LATEST_VERSION
        )
        result: Message = {
            "protocolVersion": version,
            "capabilities": self.capabilities,
            "serverInfo": self.info,
        }
        if self.instructions is not None:
            result["instructions"] = self.instructions
        return {"jsonrpc": "2.0", "id": message["id"], "result": result}

    def _discover_answer(self, message: Message) -> Message:
        """A 2026 server's ``DiscoverResult`` when the script speaks 2026-07-28
        (``protocol_version``); otherwise the error a 2025 server gives (``-32601``)."""
        if self.protocol_version not in STATELESS_VERSIONS:
            return {
                "jsonrpc": "2.0",
                "id": message["id"],
                "error": {"code": -32601, "message": "Method not found: server/discover"},
            }
        result: Message = {
            "resultType": "complete",
            "supportedVersions": list(STATELESS_VERSIONS),
            "capabilities": self.capabilities,
            "ttlMs": 0,
            "cacheScope": "private",
            "_meta": {"io.modelcontextprotocol/serverInfo": self.info},
        }
        if self.instructions is not None:
            result["instructions"] = self.instructions
        return {"jsonrpc": "2.0", "id": message["id"], "result": result}

    async def _request(self, method: str, params: Any) -> Message | None:
        self._next_id += 1
        request_id = self._next_id
        request: Message = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if params is not None:
            request["params"] = _wire(params)
        event = trio.Event()
        self._waiting[request_id] = (event, [])
        try:
            await self._send(request)
            with trio.move_on_after(self.response_timeout):
                await event.wait()
                return self._waiting[request_id][1][0]
            self._fail(f"no answer to {method!r} within {self.response_timeout} s")
            return None
        finally:
            del self._waiting[request_id]

    def _resolve(self, message: Message) -> None:
        if message.get("id") is None and "error" in message:
            # The client's complaint about something unreadable we sent (e.g. -32700 for a
            # scripted malformed message): recorded in ``received``, not a failure.
            return
        waiting = self._waiting.get(message.get("id"))  # type: ignore[arg-type]
        if waiting is None:
            self._fail(f"an answer to no request of ours: {json.dumps(message)[:300]}")
            return
        event, box = waiting
        box.append(message)
        event.set()


__all__ = ["ALL_CAPABILITIES", "Expectation", "ScriptError", "ScriptedServer", "matches"]
