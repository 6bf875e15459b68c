"""SSE polling across replicas: any event id a replica hands a client is known on every
replica before the client can have it.

A call whose handler ends its SSE response before answering (``close_request_stream``,
what the official suite's ``test_reconnection`` tool does in ``server-sse-polling``) gives
its client one event id: the priming event's, which is never stored. Its client resumes
with that id (``GET`` + ``Last-Event-ID``), through a balancer on any replica, maybe
before anything of the call is stored; since bb779b0 a resume of a stream not known is
refused, so the stream must be recorded before its priming event leaves the replica.

Two replicas in this process (``serve_http(store=RedisStore(...))`` each, one real
redis-server), raw HTTP straight to each. The tool answers only once the test lets it,
after B has taken the resume: nothing of the call is in Redis but what A recorded before
sending the priming event. Failed before the fix: A recorded a stream only when its
response was still open after the priming event's few scheduler passes; one ended at once
was never recorded, and B answered 400 "Unknown Last-Event-ID" (the intermittent WARNING
of ``server-sse-disconnect-resume`` in the conformance suites' cluster legs, whenever the
suite's GET reached a replica before the answer was stored).

Real clock over loopback; every wait is bounded by ``fail_after``.
"""

from __future__ import annotations

import json
from functools import partial

import pytest
import trio

import trimcp
from tests.http_server.test_lean_engine import Wire, mcp_post
from tests.http_server.test_lean_streams import get, read_head
from tests.http_server.test_real_socket import sse_messages
from tests.scale.peers import RedisServer
from tests.scale.test_principals import BOUND, V2025, LegacySession, two_replicas
from trimcp.protocol.sse import SSEDecoder, SSEEvent
from trimcp.transports.http_server import close_request_stream


def polling_app(release: trio.Event) -> trimcp.Server:
    app = trimcp.Server("polling")

    @app.tool()
    async def polled(ctx: trimcp.Context) -> str:
        """End this call's SSE response at once; answer once the test releases it."""
        assert close_request_stream(ctx.request_context)
        await release.wait()
        return "answered after the stream was closed"

    return app


def _port(url: str) -> int:
    return int(url.removeprefix("http://").split("/", 1)[0].rsplit(":", 1)[1])


def _event_ids(body: bytes) -> list[tuple[str | None, str]]:
    decoder = SSEDecoder()
    decoder.receive_data(body)
    events = []
    while isinstance(event := decoder.next_event(), SSEEvent):
        events.append((event.id, event.data))
    return events


@pytest.mark.parametrize("resumed_on", ["the other replica", "the same replica"])
async def test_the_priming_event_id_of_a_stream_closed_at_once_resumes_anywhere(
    redis_server: RedisServer, resumed_on: str
) -> None:
    release = trio.Event()
    with trio.fail_after(BOUND):
        async with two_replicas(redis_server, None, partial(polling_app, release)) as (a, b):
            session = await LegacySession.start(a.url, None)
            call = {"jsonrpc": "2.0", "id": 7, "method": "tools/call"}
            call["params"] = {"name": "polled", "arguments": {}}
            post_stream = await trio.open_tcp_stream("127.0.0.1", _port(a.url))
            async with post_stream:
                await post_stream.send_all(mcp_post(call, session.session_id))
                posted = await Wire(post_stream).response()
            assert posted.status == 200
            ((priming, data),) = _event_ids(posted.body)  # the priming event, then the end
            assert priming is not None
            assert data == ""
            other = b if resumed_on == "the other replica" else a
            get_stream = await trio.open_tcp_stream("127.0.0.1", _port(other.url))
            async with get_stream:
                await get_stream.send_all(get(session.session_id, V2025, priming))
                head, rest = await read_head(get_stream)
                assert head.startswith(b"HTTP/1.1 200 "), head  # failed before: 400
                release.set()  # the answer, stored only now
                wire = Wire(get_stream)
                wire.buffer = head + b"\r\n\r\n" + rest
                resumed = await wire.response("GET")
            (answer,) = [m for m in sse_messages(resumed.body) if m.get("id") == 7]
            assert answer["result"]["content"][0]["text"] == (
                "answered after the stream was closed"
            ), json.dumps(answer)
