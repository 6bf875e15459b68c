"""A 2025-11-25 client resumes a call's stream (``GET`` with ``Last-Event-ID``) on a replica
that is not running the call: it gets the rest of the stream, as the call goes on
elsewhere, then the answer (or, if the running replica dies, an error naming it), never
an empty stream. Raw HTTP straight to two replicas of ``tests/scale/replica_app.py``
sharing a real Redis.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.scale.peers import RedisServer, Replica
from tests.scale.raw_session import open_session, resume, start_slow_call


def resume_until_answered(
    port: int, session: str, last_event_id: str
) -> tuple[list[dict[str, Any]], int]:
    """Resume as a client does: again from the last event id it got whenever a stream
    ends without the answer (each such stream must say ``retry``). The messages, and
    how many resumes it took."""
    messages: list[dict[str, Any]] = []
    for resumes in range(1, 100):
        events = resume(port, session, last_event_id)
        for event in events:
            if event.get("data"):
                assert event.get("id"), event
                last_event_id = event["id"]
                messages.append(json.loads(event["data"]))
        if messages and messages[-1].get("id") == 7:
            return messages, resumes
        assert any("retry" in event for event in events), f"ended with no answer: {events}"
    raise AssertionError(f"no answer after 99 resumes: {messages}")


def progress_of(messages: list[dict[str, Any]]) -> list[int]:
    return [m["params"]["progress"] for m in messages if m.get("method")]


@pytest.fixture(scope="module")
def replicas(
    redis_server: RedisServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[list[Replica]]:
    marks: Path = tmp_path_factory.mktemp("marks")
    started: list[Replica] = []
    try:
        for _ in range(2):
            started.append(Replica(redis_server.url, env={"SCALE_MARKS": str(marks)}))
        yield started
    finally:
        for replica in started:
            replica.stop()


def test_a_resume_on_another_replica_follows_the_call_to_its_answer(
    replicas: list[Replica],
) -> None:
    a, b = replicas
    session = open_session(a.port)
    # Hung up after the first progress event: the next is a second away.
    *_, last = start_slow_call(a.port, session, "followed", steps=3, delay=1.0, progress=1)
    # Resumed on b while a still runs the call: b follows what a stores, to the answer.
    events = resume(b.port, session, last)
    messages = [json.loads(event["data"]) for event in events if event.get("data")]
    assert messages, "an empty stream"
    answer = messages[-1]
    assert answer.get("id") == 7, messages
    assert answer["result"]["content"][0]["text"] == "done followed"
    assert progress_of(messages) == [2, 3]
    assert all(event.get("id") for event in events if event.get("data"))


def test_a_resume_behind_another_replica_ends_after_the_replay_then_each_event_once(
    replicas: list[Replica],
) -> None:
    # A resume that replays stored events ends right after them (retry): a client that
    # loses a resumed stream midway resumes again from where it started that one (the
    # official SDK does), so what a held stream had delivered would come twice.
    a, b = replicas
    session = open_session(a.port)
    priming, *_ = start_slow_call(a.port, session, "behind", steps=60, delay=0.05, progress=2)
    # Resumed on b from the priming event: 1 and 2 are stored, so b is behind.
    first = resume(b.port, session, priming)
    replayed = [json.loads(event["data"]) for event in first if event.get("data")]
    assert progress_of(replayed)[:2] == [1, 2]
    assert all(m.get("method") for m in replayed), "followed to the answer"
    assert "retry" in first[-1], first
    messages, _ = resume_until_answered(b.port, session, first[-2]["id"])
    assert progress_of(replayed + messages) == list(range(1, 61))  # each once, in order
    assert messages[-1]["result"]["content"][0]["text"] == "done behind"


def test_a_resume_followed_while_the_runner_dies_ends_with_an_error_naming_it(
    replicas: list[Replica],
) -> None:
    a, b = replicas
    session = open_session(a.port)
    *_, last = start_slow_call(a.port, session, "cut", steps=600, delay=0.1, progress=1)
    a.kill()
    replicas[0] = a.respawn()
    messages, _ = resume_until_answered(b.port, session, last)
    answer = messages[-1]
    assert "stopped" in answer["error"]["message"], answer
    assert answer["error"]["data"]["replica"], answer
    assert progress_of(messages) == sorted(set(progress_of(messages)))
