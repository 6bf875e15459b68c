"""An event store that does real I/O (e.g. Redis) must not lose a POST to a resting session.

Regression: the app wakes the session, then registers the POST stream and stores its
priming event (an await), then feeds the body. With a store that takes longer than
``rest_after`` the woken session went back to rest in between (the transport held no
input yet), and the body then sat in a queue nobody read: the call hung.
"""

from __future__ import annotations

import trio
import trio.testing

from tests.http_server.helpers import running_app
from trimcp.transports.http_server import HttpServerConfig, InMemoryEventStore


class SlowEventStore(InMemoryEventStore):
    """Every store takes a second, as a remote store can."""

    async def store(self, stream_id: str, message: bytes) -> str:
        await trio.sleep(1.0)
        return self.store_nowait(stream_id, message)


async def test_a_slow_event_store_does_not_strand_a_call_to_a_resting_session(
    autojump_clock: trio.abc.Clock,
) -> None:
    config = HttpServerConfig(rest_after=0.1, event_store_factory=lambda sid: SlowEventStore())
    async with running_app(config) as (_app, client):
        session_id = await client.initialize()
        for request_id in range(1, 4):
            await trio.sleep(5)  # the session rests
            await trio.testing.wait_all_tasks_blocked()
            with trio.fail_after(60):
                answer = await client.call(session_id, request_id, "echo", {"text": "hi"})
            assert answer["result"]["content"][0]["text"] == "hi"
