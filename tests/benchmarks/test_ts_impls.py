"""The TypeScript SDK's servers in the benchmark suite (``ts-v1``, ``ts-v2``): installed on
first use from the interop tests' locks, skipped with "needs node/npm" without npm, and a
smoke run of ``--quick`` for both beside trimcp with tiny counts. No timing assertions.

Without npm the tests that run node skip, except under CI, where they fail
(``tests.ci.missing_peer``).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:
    # `benchmarks` is a top-level directory, not part of the installed package.
    sys.path.insert(0, str(REPO))

from benchmarks.suite import runner, ts_sdk  # noqa: E402
from benchmarks.suite.impls import EXIT_UNAVAILABLE, Impl, builtin_impls  # noqa: E402
from benchmarks.suite.workloads import Skip, _argv  # noqa: E402
from tests.ci import missing_peer  # noqa: E402

SDKS = {sdk.name: sdk for sdk in (ts_sdk.V1, ts_sdk.V2)}
#: Bound on one ``--check`` or bad-option run of a server program.
RUN_TIMEOUT = 60.0


@pytest.fixture(scope="module", name="installed")
def installed_fixture() -> dict[str, ts_sdk.Installed]:
    """Both SDKs installed (first use: ``npm ci`` into ``.cache/``). Skips without npm,
    but fails under CI."""
    if shutil.which("npm") is None or shutil.which("node") is None:
        missing_peer(
            "node/npm are not installed: cannot install the TypeScript SDK servers",
            "CI must provide node and npm",
        )
    return {name: sdk.install() for name, sdk in SDKS.items()}


# ----------------------------------------------------------------------------- without node


def test_builtins_name_the_pinned_sdks() -> None:
    impls = builtin_impls()
    assert impls["ts-v1"].conventional
    assert impls["ts-v2"].conventional
    # The pins are the tests' locks: the SDK v1 the everything server is built on, and v2.
    assert (ts_sdk.V1.pinned_version() or "").startswith("1.")
    assert (ts_sdk.V2.pinned_version() or "").startswith("2.")
    assert f"@modelcontextprotocol/sdk {ts_sdk.V1.pinned_version()}" in impls["ts-v1"].note
    assert f"@modelcontextprotocol/server {ts_sdk.V2.pinned_version()}" in impls["ts-v2"].note


def test_setup_runs_once_and_its_failure_is_a_skip_reason() -> None:
    calls: list[int] = []

    def setup() -> ts_sdk.Installed:
        calls.append(1)
        return ts_sdk.Installed(command=("srv", "--x"), versions={"thing": "1.0"})

    impl = Impl("ok", setup=setup)
    assert impl.versions() == {}
    assert impl.command() == ("srv", "--x")
    assert impl.command() == ("srv", "--x")
    assert calls == [1]
    assert impl.spawns
    assert impl.versions() == {"thing": "1.0"}
    assert _argv(impl, "--tools", "3") == ["srv", "--x", "--tools", "3"]

    def broken() -> ts_sdk.Installed:
        calls.append(2)
        raise ts_sdk.NotInstalled("needs node/npm: no npm")

    impl = Impl("broken", setup=broken, conventional=True)
    assert impl.unavailable() == "needs node/npm: no npm"
    assert impl.unavailable("--http", "0") == "needs node/npm: no npm"
    with pytest.raises(Skip, match="needs node/npm"):
        _argv(impl)
    assert calls == [1, 2]  # tried once, not once per workload
    assert impl.versions() == {}


def test_without_npm_the_ts_rows_are_skipped_with_the_reason(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    empty = tmp_path / "bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))  # no npm, no node
    status = runner.main(
        [
            "--quick",
            "--impl",
            "ts-v1,ts-v2",
            "--only",
            "seq,http-sse",
            "--reps",
            "1",
            "--no-idle-check",
            "--out",
            str(tmp_path / "out"),
        ]
    )
    out, err = capsys.readouterr()
    assert status == 0, err
    (json_file,) = (tmp_path / "out").glob("bench-quick-*.json")
    results = json.loads(json_file.read_text())
    for workload in results["workloads"]:
        for name in ("ts-v1", "ts-v2"):
            skipped = workload["impls"][name]["skipped"]
            assert skipped.startswith("needs node/npm: npm is not on PATH"), skipped
    (md_file,) = (tmp_path / "out").glob("bench-quick-*.md")
    assert "- ts-v1: skipped: needs node/npm" in md_file.read_text()
    assert "skipped" in out


# ----------------------------------------------------------------------------- with node


@pytest.mark.parametrize(
    ("name", "options", "reason"),
    [
        ("ts-v1", ("--page-size", "50"), "no tools/list pagination"),
        ("ts-v2", ("--page-size", "50"), "no tools/list pagination"),
        ("ts-v2", ("--http", "0", "--json-response"), "2025-era requests over SSE only"),
    ],
)
def test_servers_say_what_they_cannot_do(
    installed: dict[str, ts_sdk.Installed], name: str, options: tuple[str, ...], reason: str
) -> None:
    done = subprocess.run(
        [*installed[name].command, "--check", *options],
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT,
        check=False,
    )
    assert done.returncode == EXIT_UNAVAILABLE, done.stderr
    assert reason in done.stderr
    ok = subprocess.run(
        [*installed[name].command, "--check", "--http", "0", "--tools", "5"],
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT,
        check=False,
    )
    assert ok.returncode == 0, ok.stderr


@pytest.mark.parametrize("name", sorted(SDKS))
@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (("--tools", "many"), "--tools takes an integer"),
        (("--speed",), 'unknown option "--speed"'),
    ],
)
def test_servers_refuse_bad_options(
    installed: dict[str, ts_sdk.Installed], name: str, argv: tuple[str, ...], message: str
) -> None:
    done = subprocess.run(
        [*installed[name].command, *argv],
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT,
        check=False,
    )
    assert done.returncode == 2
    assert message in done.stderr


def test_quick_smoke_run_of_both_ts_sdks_beside_trimcp(
    installed: dict[str, ts_sdk.Installed], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    status = runner.main(
        [
            "--quick",
            "--impl",
            "trimcp,ts-v1,ts-v2",
            "--only",
            "seq,pipe,http-sse,http-2026,http-idle,storm",
            "--scale",
            "0.02",
            "--reps",
            "1",
            "--no-idle-check",
            "--out",
            str(tmp_path),
        ]
    )
    out, err = capsys.readouterr()
    assert status == 0, err
    assert "| workload | headline metric | trimcp | ts-v1 | ts-v2 |" in out
    (json_file,) = tmp_path.glob("bench-quick-*.json")
    results = json.loads(json_file.read_text())
    by_name = {w["name"]: w["impls"] for w in results["workloads"]}
    for workload in ("seq", "pipe", "http-sse"):
        for name in ("trimcp", "ts-v1", "ts-v2"):
            assert by_name[workload][name]["summary"], (workload, name, by_name[workload][name])
    for name in ("ts-v1", "ts-v2"):
        assert by_name["http-sse"][name]["summary"]["answered"] == "sse"
        storm = by_name["storm"][name]["summary"]
        assert storm["leaked"]["max"] == 0
        assert storm["duplicates"]["max"] == 0
    # Eras: v2 serves 2026-07-28 statelessly; v1 speaks 2025 only.
    assert by_name["http-2026"]["ts-v2"]["summary"]
    assert by_name["http-2026"]["ts-v1"]["skipped"] == "serves no 2026-07-28 requests"
    # v1 keeps sessions; v2's createMcpHandler keeps none, so nothing to weigh.
    assert by_name["http-idle"]["ts-v1"]["summary"]
    assert by_name["http-idle"]["ts-v2"]["skipped"].startswith("keeps no sessions")
    # The versions that ran are the ones the tests' locks pin.
    versions = results["meta"]["versions"]
    assert versions["@modelcontextprotocol/sdk"] == ts_sdk.V1.pinned_version()
    assert versions["@modelcontextprotocol/server"] == ts_sdk.V2.pinned_version()
    assert versions["node"] == installed["ts-v1"].versions["node"]
