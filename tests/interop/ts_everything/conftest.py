"""Run the official TypeScript everything server (``@modelcontextprotocol/server-everything``,
pinned in ``setup.sh``) as a peer of trimcp's client, over stdio and Streamable HTTP.

The tests are ``tests/interop/test_client_vs_ts_everything.py``. They live one directory
up, where this conftest's fixtures are not visible, so they import ``ts_everything`` and
``peer`` from here by name.

* ``ts_everything`` (session): runs ``setup.sh --quiet`` (npm, cached under
  ``.cache/ts-everything``). Skipped when npm is missing, except under CI (``CI`` set),
  where a missing npm fails.
* ``peer`` (per test, ``stdio`` and ``http``): a :class:`StdioPeer`, or an
  :class:`HttpPeer` around a server of its own on 127.0.0.1 (the server's ``app.listen``
  binds every interface, so the conformance suite's preload forces 127.0.0.1), stopped with
  its process group at the end.

A real subprocess means the real clock: every wait is bounded (``TEST_BOUND``,
``NOTIFY_WAIT``, ``START_TIMEOUT``, ``STOP_TIMEOUT``) and nothing sleeps; waits wake on
what the server or the client reports (:class:`Inbox`).
"""

from __future__ import annotations

import functools
import json
import os
import shutil
import signal
import socket
import subprocess
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager, suppress
from pathlib import Path
from typing import Any, Generic, Protocol, TypeVar, Unpack

import attrs
import pytest
import trio

from tests.ci import missing_peer
from trimcp.client import Client, ClientKwargs, connect_http, connect_stdio, connect_transport
from trimcp.session.transport import Decoded, Outgoing, Transport
from trimcp.transports.http_client import open_http_client_transport
from trimcp.transports.stdio import ShutdownTimeouts, open_stdio_client_transport

HERE = Path(__file__).resolve().parent
SETUP = HERE / "setup.sh"

SETUP_TIMEOUT = 600.0  # a cold install fetches about 110 packages
START_TIMEOUT = 20.0  # node starting the HTTP server
STOP_TIMEOUT = 5.0  # each step of stopping the HTTP server's process group
TEST_BOUND = 60.0  # one client connection, handshake to close
NOTIFY_WAIT = 10.0  # one notification, log line or server output line

T = TypeVar("T")


class Inbox(Generic[T]):
    """Items reported by a callback or a reader task, with a bounded wait for the next."""

    def __init__(self) -> None:
        self.items: list[T] = []
        self.closed = False
        self._changed = trio.Event()

    def _poke(self) -> None:
        self._changed.set()
        self._changed = trio.Event()

    def append(self, item: T) -> None:
        self.items.append(item)
        self._poke()

    def close(self) -> None:
        """No more items will come (the reader reached the end of its stream)."""
        self.closed = True
        self._poke()

    async def wait_until(self, condition: Callable[[], bool], timeout: float = NOTIFY_WAIT) -> None:
        with trio.fail_after(timeout):
            while not condition():
                if self.closed:
                    raise AssertionError(f"ended before the condition held: {self.items!r}")
                await self._changed.wait()

    async def wait_for(self, match: Callable[[T], bool], timeout: float = NOTIFY_WAIT) -> T:
        """The first item (already there or still to come) that ``match`` accepts."""
        found: list[T] = []

        def seen() -> bool:
            found[:] = [item for item in self.items if match(item)][:1]
            return bool(found)

        await self.wait_until(seen, timeout)
        return found[0]


# --- the installed server ---------------------------------------------------------------------


@attrs.frozen(kw_only=True)
class TsEverything:
    """What ``setup.sh`` printed: a node, the server's entry point, the localhost preload."""

    node: str
    entry: str
    preload: str

    def stdio_argv(self) -> list[str]:
        return [self.node, self.entry, "stdio"]

    def http_argv(self) -> list[str]:
        return [self.node, "--require", self.preload, self.entry, "streamableHttp"]

    @property
    def docs_dir(self) -> Path:
        """The files the server lists as its static resources."""
        return Path(self.entry).parent / "docs"


@pytest.fixture(scope="session", name="ts_everything")
def ts_everything_fixture() -> TsEverything:
    """Install (or check) the pinned server. Skips without npm, but fails under CI."""
    if shutil.which("npm") is None:
        reason = "npm is not installed: cannot install @modelcontextprotocol/server-everything"
        missing_peer(reason, "CI must provide npm")
    done = subprocess.run(
        [str(SETUP), "--quiet"], capture_output=True, text=True, timeout=SETUP_TIMEOUT, check=False
    )
    assert done.returncode == 0, f"setup.sh failed:\n{done.stderr}"
    values = dict(line.split("=", 1) for line in done.stdout.splitlines() if "=" in line)
    return TsEverything(
        node=values["TS_EVERYTHING_NODE"],
        entry=values["TS_EVERYTHING_JS"],
        preload=values["TS_EVERYTHING_PRELOAD"],
    )


# --- a transport that records what the client sent ----------------------------------------------


class Recorder:
    """Wraps a transport; every message it has written goes into ``sent``, decoded.

    A message is recorded once the inner transport's ``send`` returned: written to the
    child's stdin, or POSTed (and, for a notification, accepted with 202).
    """

    def __init__(self, inner: Transport) -> None:
        self.inner = inner
        self.sent: Inbox[dict[str, Any]] = Inbox()

    async def receive(self) -> bytes | Decoded:
        return await self.inner.receive()

    async def send(self, messages: list[Outgoing]) -> None:
        await self.inner.send(messages)
        for outgoing in messages:
            decoded = json.loads(outgoing.data)
            for message in decoded if isinstance(decoded, list) else [decoded]:
                self.sent.append(message)

    async def aclose(self) -> None:
        await self.inner.aclose()


@attrs.frozen(kw_only=True)
class Wired:
    """A connected client and the record of what it sent."""

    client: Client
    recorder: Recorder


# --- peers: one per transport ----------------------------------------------------------------


class Peer(Protocol):
    """One transport to the server; ``name`` is ``stdio`` or ``http``."""

    name: str

    def connect(self, **kwargs: Unpack[ClientKwargs]) -> AbstractAsyncContextManager[Client]:
        """A client through the public opener of this transport (bounded by TEST_BOUND)."""
        ...

    def connect_wired(self, **kwargs: Unpack[ClientKwargs]) -> AbstractAsyncContextManager[Wired]:
        """A client over the transport opened by hand and wrapped in a :class:`Recorder`."""
        ...

    async def notifications_ready(self) -> None:
        """Return once the server can reach the last client outside of a request."""
        ...

    async def assert_closed_cleanly(self) -> None:
        """After the last wired client closed: the server saw a clean close."""
        ...


@attrs.define
class StdioPeer:
    """The server as a child process, one per connection."""

    ts: TsEverything
    name: str = "stdio"
    stderr: Inbox[str] = attrs.field(factory=Inbox)
    returncodes: list[int | None] = attrs.field(factory=list)

    @asynccontextmanager
    async def connect(self, **kwargs: Unpack[ClientKwargs]) -> AsyncIterator[Client]:
        with trio.fail_after(TEST_BOUND):
            async with connect_stdio(
                self.ts.stdio_argv(), on_stderr=self.stderr.append, **kwargs
            ) as client:
                yield client

    @asynccontextmanager
    async def connect_wired(
        self, shutdown: ShutdownTimeouts | None = None, **kwargs: Unpack[ClientKwargs]
    ) -> AsyncIterator[Wired]:
        with trio.fail_after(TEST_BOUND):
            async with open_stdio_client_transport(
                self.ts.stdio_argv(),
                on_stderr=self.stderr.append,
                shutdown=shutdown or ShutdownTimeouts(),
            ) as transport:
                recorder = Recorder(transport)
                async with connect_transport(recorder, **kwargs) as client:
                    yield Wired(client=client, recorder=recorder)
        # Leaving the transport ran its shutdown ladder: the child has been reaped.
        self.returncodes.append(transport.process.returncode)

    async def notifications_ready(self) -> None:
        pass  # one pipe each way, open from the start

    async def assert_closed_cleanly(self) -> None:
        # Closing stdin was enough: the child exited by itself, before any signal.
        assert self.returncodes[-1] == 0, (self.returncodes, self.stderr.items)


@attrs.define
class HttpServer:
    """The server in its Streamable HTTP mode, with everything it printed."""

    process: trio.Process
    port: int
    output: Inbox[str]

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/mcp"

    def session_ids(self) -> list[str]:
        prefix = "Session initialized with ID: "
        return [line[len(prefix) :] for line in self.output.items if line.startswith(prefix)]

    async def wait_line(self, line: str) -> None:
        await self.output.wait_for(lambda seen: seen == line)


@attrs.define
class HttpPeer:
    """Clients of one server process over Streamable HTTP; one HTTP session each."""

    server: HttpServer
    name: str = "http"
    sessions: list[str] = attrs.field(factory=list)

    async def _note_session(self, known: set[str]) -> None:
        # The server prints the id before it answers initialize; its output may still be
        # on the way to our reader.
        await self.server.output.wait_until(lambda: bool(set(self.server.session_ids()) - known))
        [new] = set(self.server.session_ids()) - known
        self.sessions.append(new)

    @asynccontextmanager
    async def connect(self, **kwargs: Unpack[ClientKwargs]) -> AsyncIterator[Client]:
        known = set(self.server.session_ids())
        with trio.fail_after(TEST_BOUND):
            async with connect_http(self.server.url, **kwargs) as client:
                await self._note_session(known)
                yield client

    @asynccontextmanager
    async def connect_wired(self, **kwargs: Unpack[ClientKwargs]) -> AsyncIterator[Wired]:
        known = set(self.server.session_ids())
        with trio.fail_after(TEST_BOUND):
            async with open_http_client_transport(self.server.url) as transport:
                recorder = Recorder(transport)
                async with connect_transport(recorder, **kwargs) as client:
                    await self._note_session(known)
                    assert transport.session_id == self.sessions[-1]
                    yield Wired(client=client, recorder=recorder)

    async def notifications_ready(self) -> None:
        # Messages outside of a request travel on the client's GET stream; the server
        # drops them (keeps them only for a Last-Event-ID replay) until that stream is
        # open. It prints this line when the GET arrives, and registers the stream
        # before it reads another request.
        await self.server.wait_line(f"Establishing new SSE stream for session {self.sessions[-1]}")

    async def assert_closed_cleanly(self) -> None:
        session = self.sessions[-1]
        # The client DELETEd its session and the server closed that session's transport.
        await self.server.wait_line(f"Received session termination request for session {session}")
        await self.server.wait_line(
            f"Transport closed for session {session}, removing from transports map"
        )


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


async def read_lines(stream: trio.abc.ReceiveStream, into: Inbox[str]) -> None:
    pending = b""
    try:
        while chunk := await stream.receive_some():
            pending += chunk
            *lines, pending = pending.split(b"\n")
            for line in lines:
                into.append(line.decode("utf-8", "replace").rstrip("\r"))
    finally:
        into.close()


def printed_more(output: Inbox[str], count: int) -> bool:
    return len(output.items) > count


async def wait_listening(server: HttpServer) -> None:
    """Poll the port each time the server prints something, until it accepts."""
    output = server.output
    with trio.fail_after(START_TIMEOUT):
        while True:
            # Counted before the attempt: a line printed while it fails still wakes us.
            printed = len(output.items)
            try:
                stream = await trio.open_tcp_stream("127.0.0.1", server.port)
            except OSError:
                pass
            else:
                await stream.aclose()
                return
            # Raises AssertionError (with the output) if the server exits instead.
            await output.wait_until(functools.partial(printed_more, output, printed), START_TIMEOUT)


async def stop_process_group(process: trio.Process) -> None:
    """SIGTERM the group, wait; SIGKILL, wait. Only while the leader is not reaped, so the
    group id is still ours."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        if process.returncode is not None:
            return
        with suppress(ProcessLookupError):
            os.killpg(process.pid, sig)
        with trio.move_on_after(STOP_TIMEOUT):
            await process.wait()


@asynccontextmanager
async def spawn_http_server(ts: TsEverything, port: int) -> AsyncIterator[HttpServer]:
    """The server process on ``port``, its output read line by line; on the way out its
    process group is stopped (bounded, shielded)."""
    # The preload logs each listen it rewrites to 127.0.0.1; the start checks that line.
    env = {**os.environ, "PORT": str(port), "CONFORMANCE_PRELOAD_DEBUG": "1"}
    process = await trio.lowlevel.open_process(
        ts.http_argv(),
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        assert process.stdout is not None
        server = HttpServer(process=process, port=port, output=Inbox())
        async with trio.open_nursery() as nursery:
            nursery.start_soon(read_lines, process.stdout, server.output)
            yield server
            nursery.cancel_scope.cancel()
    finally:
        with trio.CancelScope(shield=True):
            await stop_process_group(process)


@asynccontextmanager
async def run_http_server(ts: TsEverything) -> AsyncIterator[HttpServer]:
    """The server listening on a free 127.0.0.1 port, until the block ends.

    The port is free when picked; should another process take it first, the server exits
    with EADDRINUSE and another port is tried.
    """
    for _attempt in range(3):
        port = free_port()
        async with spawn_http_server(ts, port) as server:
            try:
                await wait_listening(server)
            except AssertionError:
                if any("is already in use" in line for line in server.output.items):
                    continue
                raise
            rewritten = f'[localhost-preload] listen({{"port":{port},"host":"127.0.0.1"}})'
            assert rewritten in server.output.items, server.output.items
            yield server
            return
    raise AssertionError("three free ports in a row were taken before the server bound them")


@pytest.fixture(params=["stdio", "http"], name="peer")
async def peer_fixture(
    request: pytest.FixtureRequest, ts_everything: TsEverything
) -> AsyncIterator[Peer]:
    if request.param == "stdio":
        yield StdioPeer(ts_everything)
        return
    async with run_http_server(ts_everything) as server:
        yield HttpPeer(server)
