"""``/healthz`` of a replica follows its Redis store: 503 naming the store while Redis is
down, 200 again once it answers, and the outage is one log line each way, however many
calls meet it (a real redis-server the test stops and starts, a ``trimcp run`` replica)."""

from __future__ import annotations

import http.client
import json
import time
from pathlib import Path

from tests.scale.peers import START_TIMEOUT, RedisServer, Replica
from tests.scale.test_bus_outage import INITIALIZE, post

CALL = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "tools/call",
    "params": {"name": "echo", "arguments": {"text": "hi"}},
}


def health(port: int) -> tuple[int, dict[str, object]]:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        connection.request("GET", "/healthz")
        response = connection.getresponse()
        return response.status, json.loads(response.read())
    finally:
        connection.close()


def health_turns(port: int, status: int) -> dict[str, object]:
    """The body of ``/healthz`` once it answers ``status`` (another process decides when:
    polled, bounded)."""
    deadline = time.monotonic() + START_TIMEOUT
    while True:
        answered, body = health(port)
        if answered == status:
            return body
        assert time.monotonic() < deadline, f"/healthz still answers {answered} {body}"
        time.sleep(0.05)


def test_healthz_follows_the_store_and_an_outage_is_one_line_each_way(
    scale_tools: dict[str, str], tmp_path: Path
) -> None:
    redis = RedisServer(scale_tools["SCALE_REDIS"], tmp_path)
    redis.start()
    replica = Replica(redis.url)
    try:
        assert health(replica.port) == (200, {"status": "ok", "sessions": 0})
        status, session = post(replica.port, INITIALIZE)
        assert status == 200
        initialized = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        assert post(replica.port, initialized, session)[0] == 202

        redis.stop()
        body = health_turns(replica.port, 503)
        assert body["status"] == "store unavailable"
        assert f"the store at {redis.url} is unavailable" in str(body["store"])
        for _ in range(5):  # served from memory; each would log lines of its own before
            assert post(replica.port, CALL, session)[0] == 200
        assert post(replica.port, INITIALIZE)[0] == 200  # a new session, not shared
        assert health(replica.port)[0] == 503

        redis.start()
        assert health_turns(replica.port, 200) == {"status": "ok", "sessions": 2}
        assert post(replica.port, CALL, session)[0] == 200
    finally:
        log = replica.output()
        replica.stop()
        redis.stop()
    lines = log.splitlines()
    assert all(line.startswith("trimcp: ") for line in lines), log
    down = [line for line in lines if "is unavailable" in line]
    up = [line for line in lines if "answers again" in line]
    assert len(down) == 1, log
    assert redis.url in down[0]
    assert "/healthz answers 503" in down[0]
    assert len(up) == 1, log
    assert len(lines) == 3, log  # serving, down, up
