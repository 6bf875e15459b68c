"""The official server suites through replicas: what passes against one process must pass
through the cluster a balancer makes of it.

``tests/scale``'s cluster: two ``examples/everything_server.py --store redis://...``
replicas on one redis-server, behind nginx round-robin with no stickiness (every request
may reach either replica). Each leg runs a whole suite through nginx and must end with
every scenario passing and no check FAILURE or WARNING: a scenario that passes direct
(test_conformance.py) and fails here fails CI. Legs: suite 0.1.16 (``--suite all``),
suite 0.2.0-alpha.12 at 2025-11-25, at 2026-07-28, at its default wire (the tasks
extension included) and ``--requirements`` of both eras.

Needs npm (the suite) and redis-server + nginx (``tests/scale/setup.sh``); skipped without
them outside CI, as the suites and the replica tests are.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conformance.test_conformance import (
    ANSI,
    SCENARIO_LINE,
    SERVER_SUITE_TIMEOUT,
    SUITE_2026,
    TOTAL,
    bad_checks,
    checks_of,
    install_suite,
    run_suite,
)
from tests.scale.peers import EVERYTHING_SERVER, Cluster, RedisServer, open_cluster, tools

pytestmark = [pytest.mark.conformance]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    install_suite(None)
    install_suite(SUITE_2026)
    found = tools()
    redis = RedisServer(found["SCALE_REDIS"], tmp_path_factory.mktemp("redis"))
    redis.start()
    try:
        with open_cluster(
            found["SCALE_NGINX"],
            redis,
            tmp_path_factory.mktemp("cluster"),
            count=2,
            app=EVERYTHING_SERVER,
            script=True,
        ) as opened:
            yield opened
            for replica in opened.replicas:  # what a replica logged must be read
                assert "Traceback" not in replica.output(), opened.logs()
    finally:
        redis.stop()


#: (suite version (None: 0.1.16), the suite's arguments, how many scenarios).
LEGS = {
    "0.1.16": (None, ("--suite", "all"), 32),
    "2025-11-25": (SUITE_2026, ("--suite", "all", "--spec-version", "2025-11-25"), 33),
    "2026-07-28": (SUITE_2026, ("--suite", "all", "--spec-version", "2026-07-28"), 40),
    "default-wire": (SUITE_2026, ("--suite", "all"), None),
    "requirements-2025-11-25": (SUITE_2026, ("--requirements", "2025-11-25"), None),
    "requirements-2026-07-28": (SUITE_2026, ("--requirements", "2026-07-28"), None),
}


@pytest.mark.parametrize("leg", LEGS)
def test_the_server_suites_pass_through_replicas(
    leg: str, cluster: Cluster, tmp_path: Path
) -> None:
    version, args, count = LEGS[leg]
    out = tmp_path / "results"
    done = run_suite(
        "server",
        "--url",
        cluster.nginx.url,
        "-o",
        str(out),
        *args,
        timeout=SERVER_SUITE_TIMEOUT,
        version=version,
    )
    text = ANSI.sub("", done.stdout)
    report = f"exit {done.returncode}\n{text[-6000:]}\n{done.stderr[-2000:]}\n{cluster.logs()}"
    assert done.returncode == 0, report
    scenarios = {name: mark for mark, name, _, _ in SCENARIO_LINE.findall(text)}
    if count is not None:
        assert len(scenarios) == count, report
    assert scenarios, report
    assert [n for n, mark in scenarios.items() if mark != "✓"] == [], report
    [(_passed, failed)] = TOTAL.findall(text)
    assert int(failed) == 0, report
    assert bad_checks(checks_of(out), []) == [], report
