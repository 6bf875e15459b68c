"""A small Redis client for Trio: hiredis encodes and parses, Trio streams carry.

Why not a full client library: coredis (typed, runs on Trio through anyio) measured 360-680
us per sequential round trip on this machine, against 30-46 us for hiredis's C reader and
``pack_command`` over one ``trio.SocketStream`` (``benchmarks/redis_clients.py``): coredis
hands every command to a writer task and every reply back from a reader task through anyio
memory streams, and type-checks arguments at run time. trimcp makes a few calls per
request, so the round trip is the cost that counts. Nothing here speaks RESP by hand:
``hiredis.pack_command`` writes commands, ``hiredis.Reader`` reads replies.

Every call is bounded: ``timeout`` covers waiting for a pooled connection, connecting,
sending and reading the whole reply. A connection that failed or was cancelled mid-call is
closed, never reused (its next reply would belong to the wrong caller). Failures raise
:class:`StoreUnavailable` naming the server and the cause; errors Redis answers with
raise :class:`RedisReplyError`.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from contextlib import suppress
from urllib.parse import unquote, urlsplit

import attrs
import hiredis
import trio

from trimcp._fastio import FastReceive, FastSend
from trimcp._record import Record
from trimcp.stores.base import StoreUnavailable
from trimcp.stores.urls import shown_url

logger = logging.getLogger("trimcp.stores.redis")

Arg = str | bytes | int | float
Command = Sequence[Arg]

#: Largest reply a connection buffers before it is dropped (a store never reads this much).
MAX_REPLY_BYTES = 64 * 1024 * 1024


class RedisReplyError(Exception):
    """Redis refused a command (its error reply, e.g. ``WRONGTYPE`` or ``NOAUTH``)."""


@attrs.frozen(kw_only=True, repr=False, eq=False)
class RedisAddress(Record):
    """Where a Redis server is, parsed from ``redis://[user:password@]host[:port][/db]``."""

    host: str = "127.0.0.1"
    port: int = 6379
    db: int = 0
    username: str | None = attrs.field(default=None, repr=False)
    password: str | None = attrs.field(default=None, repr=False)

    @classmethod
    def from_url(cls, url: str) -> RedisAddress:
        """Parse a ``redis://`` URL; ValueError names what is wrong with it."""
        parts = urlsplit(url)
        if parts.scheme != "redis":
            raise ValueError(f"a Redis store URL starts with redis://, got {shown_url(url)!r}")
        db_text = parts.path.lstrip("/") or "0"
        if not db_text.isdigit():
            raise ValueError(
                f"the Redis database in {shown_url(url)!r} must be a number, got {db_text!r}"
            )
        try:
            port = parts.port or 6379
        except ValueError as error:
            raise ValueError(f"bad port in Redis URL {shown_url(url)!r}: {error}") from None
        return cls(
            host=parts.hostname or "127.0.0.1",
            port=port,
            db=int(db_text),
            username=unquote(parts.username) if parts.username else None,
            password=unquote(parts.password) if parts.password else None,
        )

    def __str__(self) -> str:
        return f"redis://{self.host}:{self.port}/{self.db}"


class Connection:
    """One connection: a Trio stream and its hiredis reply reader."""

    __slots__ = ("_in", "_out", "reader", "stream")

    def __init__(self, stream: trio.SocketStream) -> None:
        self.stream = stream
        self._in = FastReceive(stream)
        self._out = FastSend(stream)
        self.reader = hiredis.Reader()
        self.reader.setmaxbuf(0)  # hiredis compacts its buffer after each reply

    async def roundtrip(self, packed: bytes, replies: int) -> list[object]:
        """Send ``packed`` and read ``replies`` replies.

        On POSIX the syscalls are made directly and trio is asked only to wait when the
        socket would block (trio's stream calls add two checkpoints each, a fifth of a
        call's cost): see trimcp/_fastio.py for when this checkpoints.
        """
        await self._out.send_all(packed)
        reader = self.reader
        out: list[object] = []
        buffered = 0
        while len(out) < replies:
            reply = reader.gets()
            if reply is False:
                data = await self._in.receive_some(65536)
                if not data:
                    raise trio.BrokenResourceError("Redis closed the connection")
                buffered += len(data)
                if buffered > MAX_REPLY_BYTES:
                    raise trio.BrokenResourceError("a Redis reply exceeded the size bound")
                reader.feed(bytes(data))  # (no copy: it is bytes on POSIX)
                continue
            out.append(reply)
            buffered = 0
        return out


class RedisClient:
    """A pool of Redis connections (opened on demand, at most ``max_connections``).

    ``timeout`` bounds each call from start to the whole reply; ``connect_timeout``
    bounds opening a connection within it. ``max_idle`` connections are kept open between
    calls (default: ``max_connections``, so a busy replica never reconnects per call; with
    8 kept and 16 sessions busy, half the calls opened a new TCP connection). Close with
    :meth:`aclose`.
    """

    def __init__(
        self,
        address: RedisAddress | str,
        *,
        timeout: float = 2.0,
        connect_timeout: float = 1.0,
        max_connections: int = 32,
        max_idle: int | None = None,
    ) -> None:
        if isinstance(address, str):
            address = RedisAddress.from_url(address)
        if max_idle is None:
            max_idle = max_connections
        if timeout <= 0 or connect_timeout <= 0 or max_connections < 1 or max_idle < 0:
            raise ValueError("timeouts must be > 0, max_connections >= 1, max_idle >= 0")
        self.address = address
        self.timeout = timeout
        self.connect_timeout = connect_timeout
        self.max_idle = max_idle
        self._slots = trio.Semaphore(max_connections)
        self._idle: list[Connection] = []
        self._closed = False
        #: The cause of the outage under way (None: the store answered the last call).
        self._outage: str | None = None
        #: Outages begun so far: a call that started before the current one began proves
        #: nothing about recovery (its success may predate the failure).
        self._outages = 0
        self._down_since = 0.0

    async def execute(self, *args: Arg) -> object:
        """Run one command and return its reply.

        Raises :class:`StoreUnavailable` (not reachable, or no whole reply within
        ``timeout``) or :class:`RedisReplyError`. Cancellation: the connection in use is
        closed; the command may or may not have run.
        """
        (reply,) = await self.pipeline([args])
        if isinstance(reply, hiredis.ReplyError):
            raise RedisReplyError(f"{self.address}: {reply}")
        return reply

    async def pipeline(self, commands: Sequence[Command]) -> list[object]:
        """Send ``commands`` in one write and return their replies, in order.

        An error reply is returned in its place as a ``hiredis.ReplyError`` (the other
        commands ran). Raises :class:`StoreUnavailable` as :meth:`execute` does.
        Cancellation: as :meth:`execute`.
        """
        if self._closed:
            raise StoreUnavailable(f"the store client for {self.address} is closed")
        packed = b"".join([_pack(command) for command in commands])
        outages = self._outages
        try:
            with trio.fail_after(self.timeout):
                try:
                    self._slots.acquire_nowait()  # (no checkpoint when a slot is free)
                except trio.WouldBlock:
                    await self._slots.acquire()
                try:
                    connection = self._idle.pop() if self._idle else await self._connect()
                    try:
                        replies = await connection.roundtrip(packed, len(commands))
                    except BaseException:
                        await _close_quietly(connection)
                        raise
                    self._give_back(connection)
                finally:
                    self._slots.release()
        except trio.TooSlowError:
            raise self._unavailable(f"no answer within {self.timeout:g}s") from None
        except (OSError, trio.BrokenResourceError, trio.ClosedResourceError) as error:
            raise self._unavailable(str(error) or type(error).__name__) from error
        except hiredis.ProtocolError as error:
            raise self._unavailable(f"unreadable reply: {error}") from error
        if self._outage is not None and outages == self._outages:
            self.mark_up()
        return replies

    @property
    def outage(self) -> str | None:
        """What the store's last failure was, while nothing has answered since (None: it
        answered). Read from memory: asking it makes no call."""
        return self._outage

    def mark_down(self, cause: str) -> None:
        """The store failed (``cause`` in words): logs one line when an outage begins,
        none while it lasts."""
        if self._outage is None:
            self._outages += 1
            self._down_since = trio.current_time()
            logger.error(
                "the store at %s is unavailable (%s): sessions, events and notifications "
                "are not shared, and calls that need the store fail, until it answers "
                "(/healthz answers 503 meanwhile)",
                self.address,
                cause,
            )
        self._outage = cause

    def mark_up(self) -> None:
        """The store answered: logs one line when this ends an outage."""
        if self._outage is not None:
            self._outage = None
            logger.warning(
                "the store at %s answers again (unavailable for %.1f s)",
                self.address,
                trio.current_time() - self._down_since,
            )

    async def aclose(self) -> None:
        """Close every pooled connection; later calls raise :class:`StoreUnavailable`."""
        self._closed = True
        idle, self._idle = self._idle, []
        for connection in idle:
            await _close_quietly(connection)

    async def connect(self) -> Connection:
        """A new connection outside the pool (e.g. a pub/sub subscriber's), authenticated
        and on the right database; the caller closes its ``stream``. Bounded by
        ``connect_timeout`` for the connect; raises OSError, RedisReplyError."""
        return await self._connect()

    # --- internals ------------------------------------------------------------------------

    def _unavailable(self, cause: str) -> StoreUnavailable:
        self.mark_down(cause)
        return StoreUnavailable(
            f"the shared store at {self.address} is unavailable ({cause}): check that "
            "Redis runs and is reachable from this server; calls recover once it answers",
            reported=True,
        )

    async def _connect(self) -> Connection:
        address = self.address
        with trio.fail_after(self.connect_timeout):
            stream = await trio.open_tcp_stream(address.host, address.port)
        connection = Connection(stream)
        setup: list[Command] = []
        if address.password is not None:
            if address.username is not None:
                setup.append(("AUTH", address.username, address.password))
            else:
                setup.append(("AUTH", address.password))
        if address.db:
            setup.append(("SELECT", address.db))
        if setup:
            try:
                replies = await connection.roundtrip(
                    b"".join([_pack(c) for c in setup]), len(setup)
                )
            except BaseException:
                await _close_quietly(connection)
                raise
            for reply in replies:
                if isinstance(reply, hiredis.ReplyError):
                    await _close_quietly(connection)
                    raise RedisReplyError(f"{address}: connection setup refused: {reply}")
        return connection

    def _give_back(self, connection: Connection) -> None:
        if len(self._idle) < self.max_idle and not self._closed:
            self._idle.append(connection)
        else:
            connection.stream.socket.close()  # synchronous: nothing to flush


def pack(command: Command) -> bytes:
    """One command in Redis's wire format."""
    return _pack(command)


def _pack(command: Command) -> bytes:
    # hiredis's stub declares a one-item tuple; it takes any number of arguments.
    packed: bytes = hiredis.pack_command(tuple(command))  # type: ignore[arg-type]
    return packed


async def close_connection(connection: Connection) -> None:
    """Close a connection :meth:`RedisClient.connect` opened (bounded, shielded, quiet)."""
    await _close_quietly(connection)


async def _close_quietly(connection: Connection) -> None:
    with (
        trio.CancelScope(shield=True),
        trio.move_on_after(0.5),
        suppress(OSError, trio.BrokenResourceError, trio.ClosedResourceError),
    ):
        await connection.stream.aclose()


def reply_error(reply: object) -> bool:
    """Whether a :meth:`RedisClient.pipeline` reply is Redis's error reply."""
    return isinstance(reply, hiredis.ReplyError)
