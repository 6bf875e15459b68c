"""The one CI guard: any ``CI`` value but ``0``/``false`` is CI, where a missing peer fails;
every skip-or-fail decision uses it; ``.ci/run`` sets ``CI`` itself."""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

import tests.scale.peers as scale_peers
from tests.ci import missing_peer, under_ci

ROOT = Path(__file__).resolve().parents[1]

CI_VALUES = ["true", "1", "yes", "TRUE", "github-actions", " true "]
NOT_CI_VALUES = ["", "0", "false", "False", " 0 "]
#: Caught together so that a skip where a failure is due fails the test (not skips it).
PEER_OUTCOMES = (pytest.fail.Exception, pytest.skip.Exception)


@pytest.mark.parametrize("value", CI_VALUES)
def test_any_ci_value_is_ci(value: str) -> None:
    assert under_ci({"CI": value})


@pytest.mark.parametrize("value", NOT_CI_VALUES)
def test_empty_zero_and_false_are_not_ci(value: str) -> None:
    assert not under_ci({"CI": value})


def test_no_ci_variable_is_not_ci() -> None:
    assert not under_ci({})


@pytest.mark.parametrize(
    ("value", "outcome"),
    [(value, pytest.fail.Exception) for value in CI_VALUES]
    + [(value, pytest.skip.Exception) for value in NOT_CI_VALUES],
)
def test_a_missing_peer_fails_under_ci_and_skips_elsewhere(
    value: str, outcome: type[BaseException], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CI", value)
    with pytest.raises(PEER_OUTCOMES, match="redis-server is not installed") as raised:
        missing_peer("redis-server is not installed", "CI must provide it")
    assert raised.type is outcome


def test_the_scale_tests_fail_under_ci_1_when_their_tools_are_missing(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """``CI=1`` once skipped 47 of the 62 scale tests with exit 0: only ``true`` counted."""
    setup = tmp_path / "setup.sh"
    setup.write_text("#!/bin/sh\necho 'redis-server: not found' >&2\nexit 1\n")
    setup.chmod(0o755)
    monkeypatch.setattr(scale_peers, "SETUP", setup)
    monkeypatch.setenv("CI", "1")
    with pytest.raises(PEER_OUTCOMES, match="redis-server: not found") as raised:
        scale_peers.tools()
    assert raised.type is pytest.fail.Exception, "skipped under CI=1"


#: Ways a Python file or a shell script could read ``CI`` on its own.
READS_CI = re.compile(r"""environ(\.get)?\s*[\(\[]\s*["']CI["']|getenv\(\s*["']CI["']|\$\{?CI\b""")


def test_nothing_but_the_guard_reads_ci() -> None:
    """A second, different reading of ``CI`` is how ``CI=1`` came to skip the scale tests."""
    allowed = {ROOT / "tests" / "ci.py", Path(__file__).resolve()}  # the guard, and this test
    scripts = [
        *ROOT.glob("tests/**/*.py"),
        *ROOT.glob("tests/**/*.sh"),
        *ROOT.glob("examples/**/*.sh"),
    ]
    readers = [
        str(path.relative_to(ROOT))
        for path in scripts
        if path not in allowed
        and "node_modules" not in path.parts
        and READS_CI.search(path.read_text())
    ]
    assert readers == []


def test_the_pattern_finds_a_reader() -> None:
    """The scan above is not vacuous: each way of reading ``CI`` is matched."""
    for line in ['os.environ.get("CI")', "os.environ['CI']", 'os.getenv("CI")', '[ -n "$CI" ]']:
        assert READS_CI.search(line), line
    assert not READS_CI.search('monkeypatch.setenv("CI", "1")')


def test_ci_run_exports_ci_true(tmp_path: Path) -> None:
    """``.ci/run`` sets ``CI=true`` for everything it starts, whatever the caller's ``CI``."""
    (tmp_path / ".ci").mkdir()
    shutil.copy(ROOT / ".ci" / "run", tmp_path / ".ci" / "run")
    dev = tmp_path / "dev"
    dev.write_text('#!/bin/sh\necho "$1 CI=$CI"\n')
    dev.chmod(0o755)
    env = {k: v for k, v in os.environ.items() if k != "CI"}
    done = subprocess.run(
        ["bash", str(tmp_path / ".ci" / "run")],
        capture_output=True,
        text=True,
        timeout=30,
        env=env,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert [line for line in done.stdout.splitlines() if "CI=" in line] == [
        "demo CI=true",
        "test CI=true",
    ]


def _fake_checkout(tmp_path: Path) -> Path:
    """A copy of ``./dev`` beside a ``.venv`` whose tools only say how they were called
    (its install stamp in place, so nothing is installed)."""
    shutil.copy(ROOT / "dev", tmp_path / "dev")
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    bin_dir = tmp_path / ".venv" / "bin"
    bin_dir.mkdir(parents=True)
    for tool in ("python", "ruff", "mypy"):
        script = bin_dir / tool
        script.write_text(f'#!/bin/sh\necho "{tool} $*"\n')
        script.chmod(0o755)
    digest = hashlib.sha1((ROOT / "pyproject.toml").read_bytes()).hexdigest()[:12]
    (tmp_path / ".venv" / f".installed-{digest}").touch()
    return tmp_path


def _dev(checkout: Path, *args: str) -> list[str]:
    done = subprocess.run(
        [str(checkout / "dev"), *args], capture_output=True, text=True, timeout=30, check=False
    )
    assert done.returncode == 0, done.stderr
    return [line for line in done.stdout.splitlines() if not line.startswith("==")]


def test_dev_test_alone_runs_every_check_and_with_paths_only_pytest(tmp_path: Path) -> None:
    """``./dev test tests/cli`` runs pytest on those tests alone (it spent minutes on ruff
    and mypy first: issue 35); ``./dev test`` and ``./dev test -q`` run every check."""
    checkout = _fake_checkout(tmp_path)
    every = [
        "ruff check trimcp tests examples benchmarks",
        "ruff format --check trimcp tests examples benchmarks",
        "mypy ",
    ]
    assert _dev(checkout, "test") == [*every, "python -m pytest"]
    assert _dev(checkout, "test", "-q") == [*every, "python -m pytest -q"]
    assert _dev(checkout, "test", "tests/cli", "-q") == ["python -m pytest tests/cli -q"]
    assert _dev(checkout, "test", "-x", "tests/a.py::test_b") == [
        "python -m pytest -x tests/a.py::test_b"
    ]
    # CI runs every check: .ci/run calls ./dev test with nothing after it.
    assert "./dev test\n" in (ROOT / ".ci" / "run").read_text().splitlines(keepends=True)
