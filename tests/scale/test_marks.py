"""The marks the scale apps leave for the tests: a reader never takes a half-written one.

A CI run failed with ``int('')``: ``Cluster.runner_of`` saw ``<tag>.pid`` exist while the
replica had created it but not yet written the pid."""

from __future__ import annotations

import importlib
import os
from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

import pytest
import trio
import trio.testing

from tests.scale.peers import Cluster


def _cluster(marks: Path, pids: list[int]) -> Cluster:
    replicas = [SimpleNamespace(process=SimpleNamespace(pid=pid)) for pid in pids]
    return Cluster(cast(Any, None), cast(Any, replicas), cast(Any, None), marks)


async def test_runner_of_waits_for_a_whole_pid_not_an_empty_file(
    tmp_path: Path, autojump_clock: trio.testing.MockClock
) -> None:
    cluster = _cluster(tmp_path, [101, 202])
    mark = tmp_path / "job.pid"
    mark.write_text("")  # created, not yet written: what the failing run read
    found: list[int] = []

    async def find() -> None:
        found.append(await cluster.runner_of("job"))

    async with trio.open_nursery() as nursery:
        nursery.start_soon(find)
        await trio.testing.wait_all_tasks_blocked()
        await trio.sleep(1)
        assert found == []  # still waiting, not failed on ''
        mark.write_text("202")
    assert found == [1]


async def test_runner_of_gives_up_naming_the_mark(
    tmp_path: Path, autojump_clock: trio.testing.MockClock
) -> None:
    (tmp_path / "job.pid").write_text("")
    with pytest.raises(AssertionError, match=r"job\.pid within 20 s"):
        await _cluster(tmp_path, [101]).runner_of("job")


@pytest.mark.parametrize(
    ("module", "variable", "leave", "name"),
    [
        ("tests.scale.replica_app", "SCALE_MARKS", lambda m: m._mark("t"), "t.pid"),
        ("tests.scale.bus_app", "BUS_MARKS", lambda m: m._mark("t.asked"), "t.asked"),
    ],
)
def test_the_apps_rename_their_marks_into_place(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    module: str,
    variable: str,
    leave: Any,
    name: str,
) -> None:
    monkeypatch.setenv(variable, str(tmp_path))
    app = importlib.reload(importlib.import_module(module))
    renamed: list[tuple[str, str]] = []
    real_replace = os.replace

    def replace(src: Any, dst: Any) -> None:
        # At the rename, the final name does not exist yet and the aside file is whole.
        assert not Path(dst).exists()
        renamed.append((Path(dst).name, Path(src).read_text()))
        real_replace(src, dst)

    monkeypatch.setattr(os, "replace", replace)
    leave(app)
    assert renamed == [(name, str(os.getpid()))]
    assert sorted(p.name for p in tmp_path.iterdir()) == [name]
