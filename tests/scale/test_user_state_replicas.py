"""Issue 34's check: state that outlives a call, driven by the official SDK client.

Two replicas, ``trimcp run examples/user_state.py --transport http --store redis://...``
on one real redis-server, callers told apart by API keys (``DEMO_API_KEYS``). The SDK
client (``tests/peers/sdk_state_client.py``, PyPI ``mcp``, importing nothing from
trimcp) makes every call on a new connection, alternating replicas and eras
(``mode="auto"`` negotiates 2026-07-28 with these servers, ``mode="legacy"`` the 2025
initialize handshake):

- per-user state written at 2026-07-28 is read back at 2026-07-28 and in the 2025 era,
  on both replicas; another user sees nothing;
- a cart handle's state grows across connections, eras and replicas; another user's use
  of it, and a forged handle, are tool errors saying why;
- after both replicas restart on the same Redis, both kinds of state are still there and
  the handle still opens (the sealing keys live in Redis too).
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.scale.peers import ROOT, RedisServer, Replica, free_port

PEER = ROOT / "tests" / "peers" / "sdk_state_client.py"
APP = ROOT / "examples" / "user_state.py"
KEYS = {"alice": "key-a", "bob": "key-b"}
NEW, OLD = "auto", "legacy"


def replica(redis: RedisServer, port: int | None = None) -> Replica:
    port = free_port() if port is None else port
    env = {
        "DEMO_API_KEYS": "key-a=alice,key-b=bob",
        "RESOURCE": f"http://127.0.0.1:{port}/mcp",
    }
    return Replica(redis.url, app=APP, port=port, env=env)


@pytest.fixture
def replicas(redis_server: RedisServer) -> Iterator[list[Replica]]:
    running = [replica(redis_server), replica(redis_server)]
    try:
        yield running
    finally:
        for one in running:
            one.stop()


def run_plan(tmp_path: Path, replicas: list[Replica], calls: list[tuple[Any, ...]]) -> list[Any]:
    """Run ``(user, replica index, mode, tool, args)`` calls through the SDK peer."""
    plan = [
        {"url": replicas[at].url, "key": KEYS[user], "mode": mode, "tool": tool, "args": args}
        for user, at, mode, tool, args in calls
    ]
    path = tmp_path / f"plan-{len(list(tmp_path.iterdir()))}.json"
    path.write_text(json.dumps(plan))
    done = subprocess.run(
        [sys.executable, str(PEER), str(path)],
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    logs = "\n".join(f"--- replica {r.port}:\n{r.output()[-2000:]}" for r in replicas)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:] + logs
    answers: list[Any] = json.loads(done.stdout)["answers"]
    for (_, _, mode, _, _), answer in zip(calls, answers, strict=True):
        assert answer["version"] == ("2026-07-28" if mode == NEW else "2025-11-25"), answer
    return answers


def texts(answers: list[Any]) -> list[tuple[bool, str]]:
    return [(answer["is_error"], answer["text"]) for answer in answers]


def test_per_user_and_handle_state_across_calls_eras_replicas_and_restarts(
    redis_server: RedisServer, replicas: list[Replica], tmp_path: Path
) -> None:
    first = run_plan(
        tmp_path,
        replicas,
        [
            ("alice", 0, NEW, "remember", {"key": "color", "value": "blue"}),
            ("alice", 1, NEW, "recall", {"key": "color"}),
            ("alice", 0, OLD, "recall", {"key": "color"}),
            ("alice", 1, OLD, "recall", {"key": "color"}),
            ("bob", 0, NEW, "recall", {"key": "color"}),
            ("bob", 1, OLD, "recall", {"key": "color"}),
            ("alice", 1, NEW, "recall", {"key": "never-set"}),
            ("alice", 0, NEW, "open_cart", {}),
        ],
    )
    assert texts(first) == [
        (False, "remembered color"),
        (False, "blue"),
        (False, "blue"),
        (False, "blue"),
        (False, ""),  # bob sees nothing of alice's
        (False, ""),
        (False, ""),  # a key never set: nothing
        (False, first[7]["text"]),
    ]
    cart = first[7]["text"]
    assert cart.startswith("v1.")
    body = cart.rsplit(".", 1)[1]
    forged = (
        cart.rsplit(".", 1)[0] + "." + body[:20] + ("A" if body[20] != "A" else "B") + body[21:]
    )

    second = run_plan(
        tmp_path,
        replicas,
        [
            ("alice", 1, OLD, "add_item", {"cart": cart, "item": "apple"}),
            ("alice", 0, NEW, "add_item", {"cart": cart, "item": "pear"}),
            ("alice", 1, NEW, "add_item", {"cart": cart, "item": "fig"}),
            ("bob", 0, NEW, "add_item", {"cart": cart, "item": "stolen"}),
            ("bob", 1, OLD, "add_item", {"cart": cart, "item": "stolen"}),
            ("alice", 0, NEW, "add_item", {"cart": forged, "item": "x"}),
            ("alice", 1, OLD, "add_item", {"cart": "not-a-handle", "item": "x"}),
        ],
    )
    assert [a["structured"] for a in second[:3]] == [
        {"result": ["apple"]},
        {"result": ["apple", "pear"]},
        {"result": ["apple", "pear", "fig"]},
    ]
    for refused in second[3:5]:
        assert refused["is_error"], refused
        assert "minted for another user" in refused["text"]
    for refused in second[5:]:
        assert refused["is_error"], refused
        assert "not a handle this server minted" in refused["text"]

    # Both replicas restart on the same Redis.
    for n, old in enumerate(replicas):
        old.stop()
        replicas[n] = replica(redis_server, port=old.port)
    third = run_plan(
        tmp_path,
        replicas,
        [
            ("alice", 1, NEW, "recall", {"key": "color"}),
            ("alice", 0, OLD, "recall", {"key": "color"}),
            ("bob", 0, NEW, "recall", {"key": "color"}),
            ("alice", 0, OLD, "add_item", {"cart": cart, "item": "kiwi"}),
            ("alice", 1, NEW, "add_item", {"cart": cart, "item": "plum"}),
            ("bob", 1, NEW, "add_item", {"cart": cart, "item": "stolen"}),
        ],
    )
    assert texts(third)[:3] == [(False, "blue"), (False, "blue"), (False, "")]
    assert third[3]["structured"] == {"result": ["apple", "pear", "fig", "kiwi"]}
    assert third[4]["structured"] == {"result": ["apple", "pear", "fig", "kiwi", "plum"]}
    assert third[5]["is_error"]
    assert "minted for another user" in third[5]["text"]
    for one in replicas:
        assert "Traceback" not in one.output(), one.output()[-3000:]
