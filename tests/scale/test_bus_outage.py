"""Redis down while a client answers through a replica that must relay: a clear error
(503 naming the store), never a silent loss; once Redis is back, relaying works again."""

from __future__ import annotations

import http.client
import json
from collections.abc import Mapping
from pathlib import Path

from tests.scale.peers import RedisServer, Replica

HERE = Path(__file__).resolve().parent

INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 0,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {"elicitation": {}},
        "clientInfo": {"name": "raw", "version": "1"},
    },
}
#: An answer to a server request that the replica with tag 1 sent (not this one's, but
#: for a one-in-a-million chance).
FOREIGN_ANSWER = {"jsonrpc": "2.0", "id": (1 << 32) + 5, "result": {"action": "decline"}}
CANCEL = {
    "jsonrpc": "2.0",
    "method": "notifications/cancelled",
    "params": {"requestId": 77, "reason": "stop"},
}


def post(port: int, message: Mapping[str, object], session: str | None = None) -> tuple[int, str]:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    headers = {
        "content-type": "application/json",
        "accept": "application/json, text/event-stream",
        "mcp-protocol-version": "2025-11-25",
    }
    if session is not None:
        headers["mcp-session-id"] = session
    try:
        connection.request("POST", "/mcp", json.dumps(message), headers)
        response = connection.getresponse()
        body = response.read().decode()
        return response.status, response.getheader("mcp-session-id") or body
    finally:
        connection.close()


def test_relaying_while_redis_is_down_fails_clearly_and_recovers(
    scale_tools: dict[str, str], tmp_path: Path
) -> None:
    redis = RedisServer(scale_tools["SCALE_REDIS"], tmp_path)
    redis.start()
    replica = Replica(redis.url, app=HERE / "bus_app.py", env={"BUS_MARKS": str(tmp_path)})
    try:
        status, session = post(replica.port, INITIALIZE)
        assert status == 200
        initialized = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        assert post(replica.port, initialized, session)[0] == 202
        assert post(replica.port, FOREIGN_ANSWER, session)[0] == 202  # relayed (to nobody)
        redis.stop()
        # The session is held here (served from memory), but the message cannot travel.
        for message in (FOREIGN_ANSWER, CANCEL):
            status, body = post(replica.port, message, session)
            assert status == 503, body
            assert "Could not pass this message on" in body
            assert f"redis://127.0.0.1:{redis.port}/0" in body
        redis.start()
        assert post(replica.port, FOREIGN_ANSWER, session)[0] == 202
        assert post(replica.port, CANCEL, session)[0] == 202
    finally:
        replica.stop()
        redis.stop()
