"""The conformance legs beyond the main ones: suite 0.2.0-alpha.12's other server runs,
its client scenarios at the older revisions, and the serving modes.

Each leg is one suite process against one ``examples/everything_server.py`` (started with
the leg's flags), and must end with every scenario passing and no check FAILURE or
WARNING; there is no expected-failures file. Server legs: ``--spec-version 2025-06-18``,
the default wire (``--suite all``: every era, the extensions included), ``--requirements
2025-11-25``, and the default wire again under ``--json-response``, ``--stateless`` and the
hypercorn engine. Client legs: ``--suite all`` at 2025-06-18 and at 2025-03-26 (the suite
runs those scenarios in parallel, each against its own mock).

Under ``--stateless`` the scenarios in :data:`NOT_APPLICABLE` are left out, each for the
reason given there and in SCENARIOS.md; the leg checks that the suite still ran them, so the
list cannot go stale unnoticed.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest

from tests.conformance.test_conformance import (
    ANSI,
    CLIENT,
    CLIENT_SCENARIO_TIMEOUT,
    SCENARIO_LINE,
    SERVER_SUITE_TIMEOUT,
    SUITE_2026,
    bad_checks,
    checks_of,
    everything_server,
    install_suite,
    run_suite,
)

pytestmark = [pytest.mark.conformance]

#: Scenarios a ``--stateless`` server cannot serve, and why. Stateless, every POST runs in
#: a fresh session, so nothing ties the client's answer (its own POST) to the request that
#: asked; and there is no session id to resume or to hold several streams in.
_NO_SERVER_REQUESTS = (
    "the tool asks the client (sampling/elicitation) mid-call; stateless, the client's "
    "answer arrives in another fresh session, so 2025 servers cannot ask "
    "(at 2026-07-28 input_required does it, and passes)"
)
_NO_SESSION = "needs an Mcp-Session-Id (the suite warns without one); stateless has none"
NOT_APPLICABLE: dict[str, dict[str, str]] = {
    "stateless": {
        "tools-call-sampling": _NO_SERVER_REQUESTS,
        "tools-call-elicitation": _NO_SERVER_REQUESTS,
        "elicitation-sep1034-defaults": _NO_SERVER_REQUESTS,
        "elicitation-sep1330-enums": _NO_SERVER_REQUESTS,
        "server-sse-polling": _NO_SESSION,
        "server-sse-multiple-streams": _NO_SESSION,
    },
}

#: leg: (the server's flags, the suite's arguments, how many scenarios).
SERVER_LEGS: dict[str, tuple[tuple[str, ...], tuple[str, ...], int]] = {
    "2025-06-18": ((), ("--suite", "all", "--spec-version", "2025-06-18"), 27),
    "default-wire": ((), ("--suite", "all"), 65),
    "requirements-2025-11-25": ((), ("--requirements", "2025-11-25"), 33),
    "json-response": (("--json-response",), ("--suite", "all"), 65),
    "stateless": (("--stateless",), ("--suite", "all"), 65),
    "hypercorn": (("--engine", "hypercorn"), ("--suite", "all"), 65),
}

#: leg (--spec-version): the client scenarios suite 0.2.0-alpha.12 lists for it.
CLIENT_LEGS = {
    "2025-06-18": [
        "initialize",
        "tools_call",
        "auth/token-endpoint-auth-basic",
        "auth/token-endpoint-auth-post",
        "auth/token-endpoint-auth-none",
    ],
    "2025-03-26": [
        "auth/2025-03-26-oauth-metadata-backcompat",
        "auth/2025-03-26-oauth-endpoint-fallback",
    ],
}

CLIENT_TOTAL = re.compile(r"^Total: (\d+) passed, (\d+) failed, (\d+) warnings$", re.MULTILINE)


@pytest.fixture(scope="module")
def suite_2026() -> None:
    install_suite(SUITE_2026)


@pytest.mark.parametrize("leg", SERVER_LEGS)
def test_the_server_legs_pass(leg: str, suite_2026: None, tmp_path: Path) -> None:
    flags, args, count = SERVER_LEGS[leg]
    skipped = NOT_APPLICABLE.get(leg, {})
    out = tmp_path / "results"
    with everything_server(tmp_path, *flags) as url:
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
    scenarios = {name: mark for mark, name, _, _ in SCENARIO_LINE.findall(text)}
    assert len(scenarios) == count, report
    assert set(skipped) <= set(scenarios), report
    failing = [n for n, mark in scenarios.items() if mark != "✓" and n not in skipped]
    assert failing == [], report
    assert bad_checks(checks_of(out), list(skipped)) == [], report
    if not skipped:
        assert done.returncode == 0, report


@pytest.mark.parametrize("spec_version", CLIENT_LEGS)
def test_the_client_legs_pass(spec_version: str, suite_2026: None, tmp_path: Path) -> None:
    """examples/conformance_client.py through every scenario listed at ``spec_version``."""
    if " " in sys.executable or " " in str(CLIENT):
        pytest.fail("the suite splits --command on spaces; run from a path without any")
    expected = CLIENT_LEGS[spec_version]
    out = tmp_path / "results"
    done = run_suite(
        "client",
        "--command",
        f"{sys.executable} {CLIENT}",
        "--suite",
        "all",
        "--spec-version",
        spec_version,
        "-o",
        str(out),
        timeout=CLIENT_SCENARIO_TIMEOUT,
        version=SUITE_2026,
    )
    text = ANSI.sub("", done.stdout + done.stderr)
    report = f"exit {done.returncode}\n{text[-8000:]}"
    assert done.returncode == 0, report
    scenarios = {name: mark for mark, name, _, _ in SCENARIO_LINE.findall(text)}
    assert sorted(scenarios) == sorted(expected), report
    assert set(scenarios.values()) == {"✓"}, report
    [(_passed, failed, warnings)] = CLIENT_TOTAL.findall(text)
    assert (failed, warnings) == ("0", "0"), report
    # "auth/x" puts its results one folder deeper: auth/x-<time>/.
    folders = {path.parent for path in out.rglob("checks.json")}
    checks = {f.name: json.loads((f / "checks.json").read_text("utf-8")) for f in folders}
    assert len(checks) == len(expected), report
    assert bad_checks(checks, []) == [], report
    for scenario in expected:
        # The client ran to its end (its stdout is kept next to the checks).
        name = scenario.rpartition("/")[2]
        [folder] = [f for f in folders if re.fullmatch(re.escape(name) + r"-\d{4}-.*", f.name)]
        stdout = (folder / "stdout.txt").read_text(encoding="utf-8")
        assert f"{scenario}: done" in stdout, report
