"""A store URL's password never reaches a message, and a worker's settings (which may hold
one) are not inherited by what the worker starts."""

from __future__ import annotations

import json
import os

import pytest

from trimcp.cli.workers import WORKER_SETTINGS, store_warnings, supervised_settings
from trimcp.server.serving import ServeSettings
from trimcp.stores import store_from_url
from trimcp.stores.redis_client import RedisAddress
from trimcp.stores.urls import shown_url


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("redis://:hunter2@h:1/0", "redis://:***@h:1/0"),
        ("redis://me:hunter2@h/0", "redis://me:***@h/0"),
        ("redis://h:6379/0", "redis://h:6379/0"),
        ("memory://", "memory://"),
    ],
)
def test_a_password_is_never_shown(url: str, shown: str) -> None:
    assert shown_url(url) == shown


@pytest.mark.parametrize(
    "url",
    [
        "rediss://:hunter2@h:1/0",  # unknown scheme
        "redis://:hunter2@h:99999/0",  # bad port
        "redis://:hunter2@h:1/zero",  # bad database
    ],
)
def test_store_url_errors_name_the_url_without_its_password(url: str) -> None:
    parse = RedisAddress.from_url if url.startswith("redis://") else store_from_url
    with pytest.raises(ValueError, match=r"\*\*\*") as caught:
        parse(url)
    assert "hunter2" not in str(caught.value)


def test_a_worker_reads_its_settings_once_and_leaves_none_to_its_children(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(WORKER_SETTINGS, json.dumps({"store": "redis://:hunter2@h:1/0"}))
    assert supervised_settings() == {"store": "redis://:hunter2@h:1/0"}
    assert WORKER_SETTINGS not in os.environ
    assert supervised_settings() == {}


def test_workers_on_the_in_memory_store_are_told_what_each_keeps_alone() -> None:
    sessions = store_warnings(ServeSettings())
    assert len(sessions) == 1
    assert "sessions, tasks and per-user state" in sessions[0]
    stateless = store_warnings(ServeSettings(stateless=True), dpop=True)
    assert any("DPoP proofs" in line for line in stateless)
    assert any("own tasks and per-user state" in line for line in stateless)
    assert store_warnings(ServeSettings(store="redis://127.0.0.1:6379/0"), dpop=True) == []
