"""2026-07-28 across replicas: listen streams hear changes raised on another replica, and a
``requestState`` sealed by one replica opens on another with no secret in configuration
(the keyring is shared and rotated through Redis).

Replicas of ``tests/scale/bus_app.py`` with ``--store redis://...``; trimcp's own client
(2026-07-28: ``subscriptions/listen`` and input rounds), directly to two replicas, and
through nginx (round-robin) for the input rounds.
"""

from __future__ import annotations

from pathlib import Path

import trio

from tests.scale.peers import BUS_APP, Cluster, cluster_fixture
from trimcp import connect_http
from trimcp.session import RequestContext
from trimcp.types import ElicitRequestParams, ElicitResult, TextContent

HERE = Path(__file__).resolve().parent
WAIT = 20.0


cluster = cluster_fixture(count=2, app=BUS_APP, marks_variable="BUS_MARKS")


def _text(result: object) -> str:
    content = getattr(result, "content", None)
    assert isinstance(content, list)
    block = content[0]
    assert isinstance(block, TextContent)
    return block.text


async def test_a_listen_stream_hears_changes_raised_on_another_replica(cluster: Cluster) -> None:
    a, b = cluster.replicas
    with trio.fail_after(WAIT):
        async with (
            connect_http(a.url) as listener,
            connect_http(b.url) as raiser,
            listener.listen(tools_list_changed=True, resource_subscriptions=["bus://7"]) as sub,
        ):
            assert listener.protocol_version == "2026-07-28"
            ack = sub.acknowledged
            assert ack is not None
            assert ack.resource_subscriptions == ["bus://7"]
            # Raised on b (its pid differs from a's): heard on a's stream.
            assert _text(await raiser.call_tool("touch", {"n": 7})) == str(b.process.pid)
            events = sub.__aiter__()
            first = await events.__anext__()
            assert (first.method, first.uri) == ("notifications/resources/updated", "bus://7")
            await raiser.call_tool("grow", {"name": "modern_grown"})
            second = await events.__anext__()
            assert second.method == "notifications/tools/list_changed"


async def test_request_state_from_one_replica_opens_on_another(cluster: Cluster) -> None:
    asked = 0

    async def accept(ctx: RequestContext, params: ElicitRequestParams) -> ElicitResult:
        nonlocal asked
        asked += 1
        return ElicitResult(action="accept", content={"name": "Bo"})

    replica_pids = {str(r.process.pid) for r in cluster.replicas}
    with trio.fail_after(WAIT * 2):
        async with connect_http(cluster.nginx.url, elicitation_handler=accept) as client:
            assert client.protocol_version == "2026-07-28"
            answers = [_text(await client.call_tool("ask", {})) for _ in range(8)]
    # Each call took two attempts through round-robin (the question, then the retry with
    # the sealed state): half of them were retried on the other replica, and opened there.
    assert asked == 8
    assert {a.rsplit(" ", 1)[0] for a in answers} == {"hello Bo"}
    assert {a.rsplit(" ", 1)[1] for a in answers} <= replica_pids
