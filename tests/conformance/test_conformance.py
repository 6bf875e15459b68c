"""The official MCP conformance suite against trimcp, both ways.

* Server: ``examples/everything_server.py --transport http --port 0`` on 127.0.0.1, then
  ``run.sh server --suite all``: every one of the 32 scenarios must pass, with no check
  FAILURE or WARNING (beyond what ``expected-failures.yml`` lists; that file is empty).
* Client: ``examples/conformance_client.py`` through every client scenario of the pinned
  suite (its four core scenarios and 22 authorization ones), each against the suite's own
  mock server: one ``--suite all`` run (the scenarios in parallel), and one test per
  scenario reading that scenario's results (``RUN_ALONE`` ones, timed against the clock,
  get a run of their own).
* 2026-07-28 (suite 0.2.0-alpha.12): the same server passes all 40 server scenarios at
  ``--spec-version 2026-07-28`` and ``--requirements 2026-07-28`` (which also runs the
  10 unscored ``io.modelcontextprotocol/tasks`` extension scenarios; each of them is
  also run by name, every check must succeed), and still all 33 at
  ``--spec-version 2025-11-25``.

``setup.sh`` installs the pinned suite and Node 22 through npm on first use (cached under
``.cache/conformance``). Skipped only when npm is not installed, and then only outside CI
(under ``CI`` a missing npm fails); any other setup failure fails. The tests of the baseline
files and of the client's refusal need no npm and always run. Select these tests with ``-m
conformance``. Every subprocess wait is bounded.
"""

from __future__ import annotations

import json
import os
import re
import select
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import attrs
import pytest

from tests.ci import missing_peer

ROOT = Path(__file__).resolve().parents[2]
HERE = ROOT / "tests" / "conformance"
SERVER = ROOT / "examples" / "everything_server.py"
CLIENT = ROOT / "examples" / "conformance_client.py"
EXPECTED_FAILURES = HERE / "expected-failures.yml"
#: `server --requirements 2026-07-28`: scenarios owned by other open issues.
EXPECTED_FAILURES_2026 = HERE / "expected-failures-2026.yml"

SERVER_SCENARIOS = 32
#: Suite 0.2.0-alpha.12's server scenarios at --spec-version 2026-07-28 and 2025-11-25.
SERVER_SCENARIOS_2026 = 40
SERVER_SCENARIOS_2025_11_25 = 33
CLIENT_SCENARIOS = ["initialize", "tools_call", "elicitation-sep1034-client-defaults", "sse-retry"]
#: Suite 0.2.0-alpha.12 (CONFORMANCE_SUITE_VERSION) at --spec-version 2026-07-28: every
#: client scenario that needs no authorization (`run.sh list --client --spec-version
#: 2026-07-28` lists the rest, all auth/*, which belong to the authorization work).
SUITE_2026 = "0.2.0-alpha.12"
CLIENT_SCENARIOS_2026 = [
    "tools_call",
    "request-metadata",
    "sep-2322-client-request-state",
    "http-standard-headers",
    "http-custom-headers",
    "http-invalid-tool-headers",
    "json-schema-ref-no-deref",
    "json-schema-2020-12-preservation",
]

SETUP_TIMEOUT = 600.0  # a cold install downloads Node and the suite
SERVER_START_TIMEOUT = 30.0
SERVER_SUITE_TIMEOUT = 300.0  # about 3 s when all is well; a hanging request costs 60 s
CLIENT_SCENARIO_TIMEOUT = 120.0  # the suite kills the client after its own 30 s
#: ``--suite all`` starts every client at once: the suite's bound per client, and ours.
CLIENT_SUITE_SCENARIO_TIMEOUT = 90.0
CLIENT_SUITE_TIMEOUT = 300.0
SERVER_STOP_TIMEOUT = 20.0  # serve_http's close bound is 11 s by default

ANSI = re.compile(r"\x1b\[[0-9;]*m")
TOTAL = re.compile(r"^Total: (\d+) passed, (\d+) failed$", re.MULTILINE)
SCENARIO_LINE = re.compile(r"^([✓✗]) (\S+): (\d+) passed, (\d+) failed$", re.MULTILINE)

# The npm check is in the suite fixtures: the tests that need no npm (the baseline files,
# the client's own refusal) always run.
pytestmark = [pytest.mark.conformance]


def read_expected_failures(path: Path = EXPECTED_FAILURES) -> dict[str, list[str]]:
    """The ``server:``/``client:`` lists of the baseline file (the tiny YAML subset it
    uses: ``key: []`` or ``key:`` followed by ``  - name`` lines; ``#`` comments)."""
    lists: dict[str, list[str]] = {"server": [], "client": []}
    current: str | None = None
    for raw in path.read_text(encoding="utf-8").splitlines():
        line = raw.split("#", 1)[0].rstrip()
        if not line:
            continue
        if line.startswith(("server:", "client:")):
            current, _, rest = line.partition(":")
            if rest.strip() not in ("", "[]"):
                raise ValueError(f"{path}: write {current} entries as '  - name' lines")
            continue
        if current is None or not line.lstrip().startswith("- "):
            raise ValueError(f"{path}: cannot read {raw!r}")
        lists[current].append(line.lstrip()[2:].strip())
    return lists


def checks_of(output_dir: Path) -> dict[str, list[dict[str, object]]]:
    """Every check the suite recorded, by result directory name."""
    return {
        path.parent.name: json.loads(path.read_text(encoding="utf-8"))
        for path in sorted(output_dir.glob("*/checks.json"))
    }


def bad_checks(checks: dict[str, list[dict[str, object]]], allowed: list[str]) -> list[str]:
    """Checks with status FAILURE or WARNING, outside scenarios listed in ``allowed``."""
    return [
        f"{where}: {check.get('id')} {check.get('status')} {check.get('errorMessage', '')}"
        for where, items in checks.items()
        if not any(f"-{name}-" in f"-{where}-" for name in allowed)
        for check in items
        if check.get("status") in ("FAILURE", "WARNING")
    ]


def suite_env(version: str | None) -> dict[str, str]:
    """The environment that selects suite ``version`` (None: setup.sh's default)."""
    env = dict(os.environ)
    env.pop("CONFORMANCE_SUITE_VERSION", None)
    if version is not None:
        env["CONFORMANCE_SUITE_VERSION"] = version
    return env


def require_npm() -> None:
    """Skip without npm, except under CI (``CI`` set), where a missing peer fails."""
    if shutil.which("npm") is None:
        reason = "npm is not installed: cannot install the conformance suite"
        missing_peer(reason, "CI must provide npm")


def install_suite(version: str | None) -> None:
    require_npm()
    done = subprocess.run(
        [str(HERE / "setup.sh"), "--quiet"],
        capture_output=True,
        text=True,
        timeout=SETUP_TIMEOUT,
        env=suite_env(version),
        check=False,
    )
    assert done.returncode == 0, f"setup.sh failed:\n{done.stderr}"


@pytest.fixture(scope="module")
def suite() -> None:
    """Install (or check) the pinned suite; fails if npm cannot install it."""
    install_suite(None)


@pytest.fixture(scope="module")
def suite_2026() -> None:
    """Install (or check) suite 0.2.0-alpha.12, which knows 2026-07-28."""
    install_suite(SUITE_2026)


@attrs.frozen
class SuiteRun:
    """One ``client --suite all`` run: each scenario's checks, client stdout and stderr."""

    results: dict[str, tuple[list[dict[str, object]], str, str]]
    stdout: str
    stderr: str

    def result(self, scenario: str) -> tuple[list[dict[str, object]], str, str]:
        assert scenario in self.results, f"the suite run has no {scenario}:\n{self.stdout}"
        return self.results[scenario]

    def report(self, scenario: str) -> str:
        checks, stdout, stderr = self.results[scenario]
        return f"{json.dumps(checks, indent=1)[-6000:]}\n{stdout[-2000:]}\n{stderr[-2000:]}"


def run_client_suite(
    out: Path, version: str | None, spec_version: str | None, *, alone: str | None = None
) -> SuiteRun:
    """Every client scenario of a suite (at ``spec_version``, if given) in one ``--suite
    all`` run, the scenarios in parallel: several times faster than one run per scenario.
    Each test then reads its own scenario's results. With ``alone``: that scenario only."""
    if " " in sys.executable or " " in str(CLIENT):
        pytest.fail("the suite splits --command on spaces; run from a path without any")
    done = run_suite(
        "client",
        "--command",
        f"{sys.executable} {CLIENT}",
        *(["--scenario", alone] if alone else ["--suite", "all"]),
        *(["--spec-version", spec_version] if spec_version else []),
        # Generous: every client starts at once, which on a loaded machine takes a while.
        "--timeout",
        str(int(CLIENT_SUITE_SCENARIO_TIMEOUT * 1000)),
        "-o",
        str(out),
        timeout=CLIENT_SUITE_TIMEOUT,
        version=version,
    )
    results = {}
    # "auth/x" makes the result folder auth/x-<time>/: one level deeper.
    for path in out.rglob("checks.json"):
        folder = path.parent
        name = re.sub(r"-\d{4}-\d{2}-\d{2}T[\d-]+Z$", "", str(folder.relative_to(out)))
        results[name] = (
            json.loads(path.read_text(encoding="utf-8")),
            (folder / "stdout.txt").read_text(encoding="utf-8"),
            (folder / "stderr.txt").read_text(encoding="utf-8"),
        )
    return SuiteRun(results, done.stdout, ANSI.sub("", done.stderr))


@pytest.fixture(scope="module")
def client_suite(suite: None, tmp_path_factory: pytest.TempPathFactory) -> SuiteRun:
    """The pinned suite's every client scenario (26), run once."""
    return run_client_suite(tmp_path_factory.mktemp("client-suite"), None, None)


@pytest.fixture(scope="module")
def client_suite_2025(suite_2026: None, tmp_path_factory: pytest.TempPathFactory) -> SuiteRun:
    """Suite 0.2.0-alpha.12's every client scenario at --spec-version 2025-11-25 (19)."""
    out = tmp_path_factory.mktemp("client-suite-2025")
    return run_client_suite(out, SUITE_2026, "2025-11-25")


@pytest.fixture(scope="module")
def client_suite_2026(suite_2026: None, tmp_path_factory: pytest.TempPathFactory) -> SuiteRun:
    """Suite 0.2.0-alpha.12's every client scenario at --spec-version 2026-07-28 (33)."""
    out = tmp_path_factory.mktemp("client-suite-2026")
    return run_client_suite(out, SUITE_2026, "2026-07-28")


#: Scenarios that time the client against the wall clock (sse-retry: the wait before it
#: reconnects). With every other client starting at the same moment a reconnect can come
#: late, a WARNING that says nothing about the client: these run alone.
RUN_ALONE = frozenset({"sse-retry"})


def suite_result(
    run: SuiteRun, scenario: str, version: str | None, spec_version: str | None, out: Path
) -> SuiteRun:
    """The run to read ``scenario`` from: the shared one, or a run of its own."""
    if scenario in RUN_ALONE:
        return run_client_suite(out, version, spec_version, alone=scenario)
    return run


def check_suite_result(run: SuiteRun, scenario: str, *, may_refuse: bool = False) -> None:
    """One scenario of a suite run passed: no failed or warning check, one success at
    least, and the client ran to its end (or refused where it has to, or may)."""
    checks, stdout, stderr = run.result(scenario)
    report = run.report(scenario)
    assert bad_checks({scenario: checks}, []) == [], report
    assert any(check.get("status") == "SUCCESS" for check in checks), report
    finished = f"{scenario}: done" in stdout
    refused = "failed: " in stderr
    if may_refuse:  # the suite's checks say whether refusing was right
        assert finished or refused, report
    elif scenario in AUTH_REFUSALS:
        assert refused, report
    else:
        assert finished, report


def check_suite_run(run: SuiteRun, scenarios: set[str]) -> None:
    """The run tested exactly ``scenarios`` (a scenario the suite adds must be listed
    here to be tested) and no client timed out. (Its exit status is not the verdict: a
    ``RUN_ALONE`` scenario may warn here; each scenario's test checks its own results.)"""
    assert set(run.results) == scenarios, run.stdout[-6000:]
    assert "timed out" not in run.stderr, run.stderr[-6000:]


def run_suite(
    *args: str, timeout: float, version: str | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(HERE / "run.sh"), *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=ROOT,
        env=suite_env(version),
        check=False,
    )


@pytest.fixture
def server_url(suite: None, tmp_path: Path) -> Iterator[str]:
    """The everything server over Streamable HTTP on a free loopback port."""
    with everything_server(tmp_path) as url:
        yield url


@contextmanager
def everything_server(tmp_path: Path, *flags: str) -> Iterator[str]:
    """Run ``examples/everything_server.py --transport http`` with ``flags`` (e.g.
    ``--stateless``) on a free loopback port; yield its URL, then stop it and check it
    exited 0 without a traceback."""
    stderr_path = tmp_path / "server.stderr"
    with stderr_path.open("wb") as stderr:
        process = subprocess.Popen(
            [
                sys.executable,
                str(SERVER),
                "--transport",
                "http",
                "--host",
                "127.0.0.1",
                "--port",
                "0",
                *flags,
            ],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=stderr,
            cwd=ROOT,
        )
    assert process.stdout is not None
    try:
        ready, _, _ = select.select([process.stdout], [], [], SERVER_START_TIMEOUT)
        line = process.stdout.readline().decode().strip() if ready else ""
        assert line.startswith("http://127.0.0.1:"), (
            f"server did not report its URL within {SERVER_START_TIMEOUT}s: {line!r}\n"
            + stderr_path.read_text(errors="replace")
        )
        yield line
        # A clean stop: SIGTERM closes every session (bounded) and the process exits 0.
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=SERVER_STOP_TIMEOUT) == 0
        log = stderr_path.read_text(errors="replace")
        assert "Traceback" not in log, log
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(timeout=SERVER_STOP_TIMEOUT)
        process.stdout.close()


def test_everything_server_passes_every_server_scenario(server_url: str, tmp_path: Path) -> None:
    expected = read_expected_failures()["server"]
    out = tmp_path / "results"
    done = run_suite(
        "server",
        "--url",
        server_url,
        "--suite",
        "all",
        "-o",
        str(out),
        "--expected-failures",
        str(EXPECTED_FAILURES),
        timeout=SERVER_SUITE_TIMEOUT,
    )
    text = ANSI.sub("", done.stdout)
    report = f"exit {done.returncode}\n{text[-6000:]}\n{done.stderr[-2000:]}"
    assert done.returncode == 0, report

    scenarios = {name: mark for mark, name, _, _ in SCENARIO_LINE.findall(text)}
    assert len(scenarios) == SERVER_SCENARIOS, report
    assert sorted(n for n, mark in scenarios.items() if mark != "✓") == sorted(expected), report
    totals = TOTAL.findall(text)
    assert len(totals) == 1, report
    passed, failed = map(int, totals[0])
    assert passed >= SERVER_SCENARIOS, report
    if not expected:
        assert failed == 0, report

    checks = checks_of(out)
    assert len(checks) == SERVER_SCENARIOS
    assert bad_checks(checks, expected) == []


def run_server_suite(url: str, out: Path, *args: str) -> tuple[str, str]:
    """Run suite 0.2.0-alpha.12 against ``url``; (stdout without colours, report)."""
    done = run_suite(
        "server",
        "--url",
        url,
        "-o",
        str(out),
        *args,
        timeout=SERVER_SUITE_TIMEOUT,
        version=SUITE_2026,
    )
    text = ANSI.sub("", done.stdout)
    report = f"exit {done.returncode}\n{text[-6000:]}\n{done.stderr[-2000:]}"
    assert done.returncode == 0, report
    return text, report


@pytest.mark.parametrize(
    ("spec_version", "count"),
    [("2026-07-28", SERVER_SCENARIOS_2026), ("2025-11-25", SERVER_SCENARIOS_2025_11_25)],
)
def test_everything_server_passes_every_server_scenario_of_the_2026_suite(
    spec_version: str, count: int, suite_2026: None, server_url: str, tmp_path: Path
) -> None:
    """One server, both eras: every scenario at 2026-07-28 (stateless) and at 2025-11-25."""
    out = tmp_path / "results"
    text, report = run_server_suite(
        server_url, out, "--suite", "all", "--spec-version", spec_version
    )
    scenarios = {name: mark for mark, name, _, _ in SCENARIO_LINE.findall(text)}
    assert len(scenarios) == count, report
    assert [n for n, mark in scenarios.items() if mark != "✓"] == [], report
    [(_passed, failed)] = TOTAL.findall(text)
    assert int(failed) == 0, report
    checks = checks_of(out)
    assert len(checks) == count
    assert bad_checks(checks, []) == [], report


def test_everything_server_meets_the_2026_requirements(
    suite_2026: None, server_url: str, tmp_path: Path
) -> None:
    """``--requirements 2026-07-28`` exits 0; what fails is only what other issues own."""
    expected = read_expected_failures(EXPECTED_FAILURES_2026)["server"]
    out = tmp_path / "results"
    text, report = run_server_suite(
        server_url,
        out,
        "--requirements",
        "2026-07-28",
        "--expected-failures",
        str(EXPECTED_FAILURES_2026),
    )
    assert "Baseline check passed" in text, report
    scenarios = {name: mark for mark, name, _, _ in SCENARIO_LINE.findall(text)}
    assert sorted(n for n, mark in scenarios.items() if mark != "✓") == sorted(expected), report
    assert all(name.startswith("tasks-") for name in expected)
    assert bad_checks(checks_of(out), expected) == [], report


#: The tasks extension (SEP-2663) scenarios of suite 0.2.0-alpha.12 (issue 13).
TASKS_SCENARIOS = [
    "tasks-lifecycle", "tasks-capability-negotiation", "tasks-wire-fields",
    "tasks-request-state-removal", "tasks-mrtr-input", "tasks-request-headers",
    "tasks-dispatch-and-envelope", "tasks-status-notifications", "tasks-required-task-error",
    "tasks-mrtr-composition",
]  # fmt: skip


@pytest.mark.parametrize("scenario", TASKS_SCENARIOS)
def test_everything_server_passes_the_tasks_extension_scenarios(
    scenario: str, suite_2026: None, server_url: str, tmp_path: Path
) -> None:
    out = tmp_path / "results"
    _text, report = run_server_suite(server_url, out, "--scenario", scenario)
    checks = checks_of(out)
    assert len(checks) == 1, report
    [items] = checks.values()
    # tasks-status-notifications is one SKIPPED check: the suite has not written it yet.
    allowed = {"SUCCESS", "SKIPPED"} if scenario == "tasks-status-notifications" else {"SUCCESS"}
    assert items, report
    assert {check.get("status") for check in items} <= allowed, report


#: The Skills extension (SEP-2640) server scenarios of suite 0.2.0-alpha.12 (issue 25):
#: every check must pass, none skip (the server declares the extension, directoryRead too).
SKILLS_SERVER_SCENARIOS = [
    "sep-2640-skills-directory",
    "sep-2640-skills-enumeration",
    "sep-2640-skills-manifest",
]


@pytest.mark.parametrize("scenario", SKILLS_SERVER_SCENARIOS)
@pytest.mark.parametrize("spec_version", ["2026-07-28", "2025-11-25"])
def test_everything_server_passes_the_skills_scenarios(
    scenario: str, spec_version: str, suite_2026: None, server_url: str, tmp_path: Path
) -> None:
    out = tmp_path / "results"
    _text, report = run_server_suite(
        server_url, out, "--scenario", scenario, "--spec-version", spec_version, "--force"
    )
    [items] = checks_of(out).values()
    # The cache attributes exist from 2026-07-28 only: at 2025-11-25 those two skip.
    allowed = {"SUCCESS", "SKIPPED"} if spec_version == "2025-11-25" else {"SUCCESS"}
    assert items, report
    assert {check.get("status") for check in items} <= allowed, report
    skipped = [check["id"] for check in items if check.get("status") == "SKIPPED"]
    assert set(skipped) <= {
        "sep-2640-skills-list-cache-attributes",
        "sep-2640-skills-get-cache-attributes",
    }, report


def test_the_2026_expected_failures_name_their_issue() -> None:
    lines = [
        line
        for line in EXPECTED_FAILURES_2026.read_text().splitlines()
        if line.lstrip().startswith("- ")
    ]
    assert all(re.search(r"issue #1[23]\b", line) for line in lines), lines


@pytest.mark.parametrize("scenario", CLIENT_SCENARIOS)
def test_conformance_client_passes(scenario: str, client_suite: SuiteRun, tmp_path: Path) -> None:
    if scenario in read_expected_failures()["client"]:
        return
    check_suite_result(suite_result(client_suite, scenario, None, None, tmp_path), scenario)


@pytest.mark.parametrize("scenario", CLIENT_SCENARIOS_2026)
def test_conformance_client_passes_at_2026(scenario: str, client_suite_2026: SuiteRun) -> None:
    """examples/conformance_client.py in mode auto against the 2026-07-28 mock servers."""
    check_suite_result(client_suite_2026, scenario)


#: The Skills extension (SEP-2640) client scenarios of suite 0.2.0-alpha.12 (issue 25).
SKILLS_CLIENT_SCENARIOS = [
    "sep-2640-client-no-prefetch",
    "sep-2640-client-verify-digest",
    "sep-2640-client-verify-size",
    "sep-2640-client-verify-frontmatter",
]


@pytest.mark.parametrize("scenario", SKILLS_CLIENT_SCENARIOS)
def test_conformance_client_passes_the_skills_scenarios(
    scenario: str, suite_2026: None, tmp_path: Path
) -> None:
    """Listing reads no file; a tampered SKILL.md is read, refused, and nothing after it."""
    out = tmp_path / "results"
    done = run_suite(
        "client",
        "--command",
        f"{sys.executable} {CLIENT}",
        "--scenario",
        scenario,
        "-o",
        str(out),
        timeout=CLIENT_SCENARIO_TIMEOUT,
        version=SUITE_2026,
    )
    text = ANSI.sub("", done.stderr)
    report = f"exit {done.returncode}\n{text[-6000:]}\n{done.stdout[-2000:]}"
    assert done.returncode == 0, report
    [items] = checks_of(out).values()
    assert items, report
    assert {check.get("status") for check in items} == {"SUCCESS"}, report


#: Authorization scenarios (examples/conformance_auth.py): every one of suite 0.1.16, and
#: suite 0.2.0-alpha.12's at --spec-version 2025-11-25 plus its extension scenarios.
AUTH_SCENARIOS = [
    "auth/metadata-default",
    "auth/metadata-var1",
    "auth/metadata-var2",
    "auth/metadata-var3",
    "auth/basic-cimd",
    "auth/scope-from-www-authenticate",
    "auth/scope-from-scopes-supported",
    "auth/scope-omitted-when-undefined",
    "auth/scope-step-up",
    "auth/scope-retry-limit",
    "auth/token-endpoint-auth-basic",
    "auth/token-endpoint-auth-post",
    "auth/token-endpoint-auth-none",
    "auth/pre-registration",
]
AUTH_SCENARIOS_0_1_16 = [
    *AUTH_SCENARIOS,
    "auth/2025-03-26-oauth-metadata-backcompat",
    "auth/2025-03-26-oauth-endpoint-fallback",
    "auth/resource-mismatch",
    "auth/offline-access-scope",
    "auth/offline-access-not-supported",
    "auth/client-credentials-jwt",
    "auth/client-credentials-basic",
    "auth/cross-app-access-complete-flow",
]
AUTH_SCENARIOS_ALPHA = [
    *((name, "2025-11-25") for name in AUTH_SCENARIOS),
    # With these five, every client scenario of suite 0.2.0-alpha.12 at 2025-11-25 (19).
    *((name, "2025-11-25") for name in (*CLIENT_SCENARIOS, "json-schema-2020-12-preservation")),
    ("auth/client-credentials-jwt", None),
    ("auth/client-credentials-basic", None),
    ("auth/enterprise-managed-authorization", None),
    # The DPoP (SEP-1932) and workload identity (SEP-1933) extension scenarios.
    ("auth/dpop", None),
    ("auth/dpop-nonce", None),
    ("auth/wif-jwt-bearer", None),
]
AUTH_ALPHA_AT_2025_11_25 = [name for name, version in AUTH_SCENARIOS_ALPHA if version]
AUTH_ALPHA_EXTENSIONS = [name for name, version in AUTH_SCENARIOS_ALPHA if not version]
#: Suite 0.2.0-alpha.12's authorization scenarios at --spec-version 2026-07-28.
AUTH_SCENARIOS_2026 = [
    *AUTH_SCENARIOS,
    "auth/resource-mismatch",
    "auth/offline-access-scope",
    "auth/offline-access-not-supported",
    "auth/authorization-server-migration",
    "auth/iss-supported",
    "auth/iss-not-advertised",
    "auth/iss-supported-missing",
    "auth/iss-wrong-issuer",
    "auth/iss-unexpected",
    "auth/iss-normalized",
    "auth/metadata-issuer-mismatch",
]
#: Scenarios where the client must give up (the suite allows it to exit non-zero).
AUTH_REFUSALS = {"auth/scope-retry-limit", "auth/resource-mismatch"}


def _check_auth_run(done: subprocess.CompletedProcess[str], out: Path, scenario: str) -> None:
    text = ANSI.sub("", done.stderr)
    report = f"exit {done.returncode}\n{text[-6000:]}\n{done.stdout[-2000:]}"
    assert done.returncode == 0, report
    assert "OVERALL: PASSED" in text, report
    # "auth/x" makes the result folder auth/x-<time>/: one level deeper.
    checks = {
        path.parent.name: json.loads(path.read_text(encoding="utf-8"))
        for path in out.rglob("checks.json")
    }
    assert len(checks) == 1, report
    assert bad_checks(checks, []) == [], report
    [items] = checks.values()
    assert any(check.get("status") == "SUCCESS" for check in items), report
    [stdout] = list(out.rglob("stdout.txt"))
    [stderr] = list(out.rglob("stderr.txt"))
    if scenario in AUTH_REFUSALS:
        assert "failed: " in stderr.read_text(encoding="utf-8"), report
    else:
        assert f"{scenario}: done" in stdout.read_text(encoding="utf-8"), report


@pytest.mark.parametrize("scenario", AUTH_SCENARIOS_0_1_16)
def test_conformance_client_passes_auth(scenario: str, client_suite: SuiteRun) -> None:
    check_suite_result(client_suite, scenario)


def test_one_client_suite_run_covers_every_scenario_listed(client_suite: SuiteRun) -> None:
    check_suite_run(client_suite, {*CLIENT_SCENARIOS, *AUTH_SCENARIOS_0_1_16})


@pytest.mark.parametrize("scenario", AUTH_ALPHA_AT_2025_11_25)
def test_conformance_client_passes_auth_alpha(
    scenario: str, client_suite_2025: SuiteRun, tmp_path: Path
) -> None:
    run = suite_result(client_suite_2025, scenario, SUITE_2026, "2025-11-25", tmp_path)
    check_suite_result(run, scenario)


def test_one_client_suite_run_covers_the_alpha_at_2025_11_25(client_suite_2025: SuiteRun) -> None:
    check_suite_run(client_suite_2025, set(AUTH_ALPHA_AT_2025_11_25))


@pytest.mark.parametrize("scenario", AUTH_ALPHA_EXTENSIONS)
def test_conformance_client_passes_auth_alpha_extension(
    scenario: str, suite_2026: None, tmp_path: Path
) -> None:
    """The extension scenarios, which no --spec-version selects: one run each."""
    out = tmp_path / "results"
    done = run_suite(
        "client",
        "--command",
        f"{sys.executable} {CLIENT}",
        "--scenario",
        scenario,
        "-o",
        str(out),
        timeout=CLIENT_SCENARIO_TIMEOUT,
        version=SUITE_2026,
    )
    _check_auth_run(done, out, scenario)


@pytest.mark.parametrize("scenario", AUTH_SCENARIOS_2026)
def test_conformance_client_passes_auth_at_2026(scenario: str, client_suite_2026: SuiteRun) -> None:
    check_suite_result(client_suite_2026, scenario, may_refuse=True)


def test_one_client_suite_run_covers_the_2026_scenarios(client_suite_2026: SuiteRun) -> None:
    check_suite_run(client_suite_2026, {*CLIENT_SCENARIOS_2026, *AUTH_SCENARIOS_2026})


def test_expected_failures_file_is_empty() -> None:
    """Work in progress may list scenarios; the finished state lists none."""
    assert read_expected_failures() == {"server": [], "client": []}


def test_expected_failures_reader_reads_lists(tmp_path: Path) -> None:
    path = tmp_path / "baseline.yml"
    path.write_text("# note\nserver:\n  - ping  # flaky\n  - tools-list\nclient: []\n")
    assert read_expected_failures(path) == {"server": ["ping", "tools-list"], "client": []}
    path.write_text("server: [ping]\n")
    with pytest.raises(ValueError, match="entries"):
        read_expected_failures(path)


def test_conformance_client_refuses_an_unknown_scenario() -> None:
    # The client refuses to guess: without a known scenario it exits 2 and says why.
    env = {k: v for k, v in os.environ.items() if k != "MCP_CONFORMANCE_SCENARIO"}
    done = subprocess.run(
        [sys.executable, str(CLIENT), "http://127.0.0.1:9/mcp"],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
        check=False,
    )
    assert done.returncode == 2
    assert "unknown scenario" in done.stderr


@pytest.mark.parametrize(("ci", "outcome"), [("true", "failed"), ("", "skipped")])
def test_a_missing_npm_fails_under_ci_and_skips_elsewhere(
    ci: str, outcome: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(shutil, "which", lambda name: None)
    monkeypatch.setenv("CI", ci)
    expected = pytest.fail.Exception if outcome == "failed" else pytest.skip.Exception
    with pytest.raises(expected, match="npm is not installed"):
        install_suite(None)
