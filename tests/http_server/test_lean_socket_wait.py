"""The lean engine between requests on a real socket (a socket pair, read with direct
syscalls): the wait for the next head, whole or in parts, under the idle timer, and the
header timeout that ends it (autojump clock; no test asserts a time)."""

from __future__ import annotations

import trio
import trio.testing

from tests.http_server.test_lean_engine import LIMITS, WAIT, Wire, fixed_app, request
from trimcp._fastio import FastReceive
from trimcp.transports.http_server.idle import IdleTimer
from trimcp.transports.http_server.lean import _Connection, _ServerState


async def test_a_connection_waits_for_heads_whole_or_in_parts_then_times_out(
    autojump_clock: trio.abc.Clock,
) -> None:
    app = fixed_app({"status": 200, "headers": []}, [{"body": b"hi"}])
    timer = IdleTimer(LIMITS.header_timeout)
    state = _ServerState(timer)
    ours, theirs = trio.socket.socketpair()
    client, server = trio.SocketStream(ours), trio.SocketStream(theirs)
    assert FastReceive(server).direct  # read with direct syscalls, as a TCP connection is
    connection = _Connection(server, app, state, LIMITS)
    wire = Wire(client)
    with trio.fail_after(WAIT):
        async with trio.open_nursery() as nursery:
            await nursery.start(timer.run)
            nursery.start_soon(connection.run)
            for _ in range(2):  # whole heads, each after the connection waited for it
                await trio.testing.wait_all_tasks_blocked()
                await client.send_all(request("GET", "/"))
                assert (await wire.response("GET")).body == b"hi"
            raw = request("GET", "/")
            await trio.testing.wait_all_tasks_blocked()
            await client.send_all(raw[:10])  # a head in two parts
            await trio.testing.wait_all_tasks_blocked()
            await client.send_all(raw[10:])
            assert (await wire.response("GET")).body == b"hi"
            # Nothing more: the idle timer ends the connection at the header timeout.
            assert await client.receive_some(1024) == b""
            timer.close()
    await client.aclose()
