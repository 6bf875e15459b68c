"""Authorization on every way of running a server: a server that declares ``auth=`` is
served protected by ``app.run(transport="http")``, ``trimcp run`` (also ``--workers``,
``--store``), and ``--auth-*`` / ``TRIMCP_AUTH_*`` protect one that declares none; the
startup lines say how it is protected, Ctrl-C stops it cleanly, and nothing serves a
protected server open (websocket refuses; an open server on a public address warns)."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from tests.cli.support import ROOT, cli, read_line, spawn, stop

EXAMPLE = str(ROOT / "examples" / "oauth_server.py")
#: An issuer nobody listens on: a request without a token is refused before keys matter.
NOWHERE = "http://127.0.0.1:9"
INITIALIZE = json.dumps(
    {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "probe", "version": "1"},
        },
    }
).encode()

#: A protected server whose verifier accepts one token (no provider needed).
PROTECTED = """\
from trimcp import AuthInfo, ProtectedResource, Server

async def verify(token):
    if token != "let-me-in":
        return None
    return AuthInfo(subject="alice", client_id="c", scopes=["mcp"], audience=[RESOURCE])

RESOURCE = "http://127.0.0.1:{port}/mcp"
app = Server("guarded", auth=ProtectedResource(
    resource=RESOURCE, authorization_servers=["{issuer}"], verifier=verify,
    required_scopes=["mcp"]))

@app.tool()
def hello() -> str:
    return "hi"
"""
OPEN = (
    "from trimcp import Server\napp = Server('open')\n"
    "@app.tool()\ndef hello() -> str:\n    return 'hi'\n"
)


def post(url: str, token: str | None = None) -> tuple[int, dict[str, str], bytes]:
    """POST an initialize to ``url``; (status, headers, body), whatever the status."""
    headers = {"content-type": "application/json", "accept": "application/json, text/event-stream"}
    if token is not None:
        headers["authorization"] = f"Bearer {token}"
    request = urllib.request.Request(url, data=INITIALIZE, headers=headers, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=30) as answer:
            return answer.status, dict(answer.headers), answer.read()
    except urllib.error.HTTPError as refused:
        return refused.code, dict(refused.headers), refused.read()


def get_json(url: str) -> object:
    with urllib.request.urlopen(url, timeout=30) as answer:
        assert answer.status == 200
        return json.loads(answer.read())


def assert_refuses_anonymous(url: str, resource: str) -> None:
    status, headers, _ = post(url)
    assert status == 401
    metadata_url = resource.replace("/mcp", "/.well-known/oauth-protected-resource/mcp")
    assert f'resource_metadata="{metadata_url}"' in headers["www-authenticate"]
    document = get_json(metadata_url)
    assert isinstance(document, dict)
    assert document["resource"] == resource


def startup_url(process: subprocess.Popen[str]) -> str:
    assert process.stderr is not None
    line = read_line(process.stderr)
    found = re.search(r"at (http://127\.0\.0\.1:\d+/\S*) ", line)
    assert found, line
    return found.group(1)


def finish(process: subprocess.Popen[str], how: signal.Signals = signal.SIGINT) -> str:
    """Stop ``process`` with ``how``; its exit code must be 0; the rest of its stderr."""
    try:
        process.send_signal(how)
        assert stop(process) == 0
        assert process.stderr is not None
        return process.stderr.read()
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        for stream in (process.stdout, process.stderr):
            if stream is not None:
                stream.close()


@pytest.fixture
def protected_file(tmp_path: Path, free_port: int) -> tuple[str, int]:
    path = tmp_path / "guarded.py"
    path.write_text(PROTECTED.format(port=free_port, issuer=NOWHERE))
    return str(path), free_port


def test_the_example_with_two_workers_refuses_anonymous_calls(free_port: int) -> None:
    resource = f"http://127.0.0.1:{free_port}/mcp"
    server = spawn(
        *("run", EXAMPLE, "--transport", "http", "--workers", "2", "--port", str(free_port)),
        env={"ISSUER": NOWHERE, "RESOURCE": resource},
    )
    try:
        assert server.stderr is not None
        lines: list[str] = []
        while len(lines) < 40 and not (
            any("with 2 workers" in line for line in lines)
            and sum("] trimcp: authorization: OAuth access tokens" in line for line in lines) == 2
        ):  # the supervisor's startup line, and each worker saying how it is protected
            lines.append(read_line(server.stderr))
        assert any("with 2 workers" in line for line in lines), lines
        for _ in range(4):  # connections land on either worker: every one refuses
            assert_refuses_anonymous(resource, resource)
    finally:
        rest = finish(server)
    assert "Traceback" not in rest


def test_app_run_serves_its_declared_auth_and_stops_cleanly(
    protected_file: tuple[str, int],
) -> None:
    path, port = protected_file
    script = Path(path).with_name("self_run.py")
    script.write_text(Path(path).read_text() + f"app.run(transport='http', port={port})\n")
    server = subprocess.Popen(
        [sys.executable, str(script)], stderr=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        url = startup_url(server)
        assert_refuses_anonymous(url, url)
        assert post(url, "let-me-in")[0] == 200
        called = cli("call", "hello", "--url", url, "--header", "Authorization: Bearer let-me-in")
        assert (called.returncode, called.stdout) == (0, "hi\n"), called.stderr
    finally:
        rest = finish(server)
    # A clean stop: one line, no exception group, exit 0 (above).
    assert rest.splitlines()[-1:] == [
        "trimcp: SIGINT: stopping; open sessions get up to 12 s to finish (Ctrl-C again "
        "stops at once)",
    ], rest
    assert "Traceback" not in rest
    assert "ExceptionGroup" not in rest


@pytest.mark.parametrize("extra", [[], ["--store", "memory://"], ["--stateless"]])
def test_trimcp_run_serves_the_declared_auth(
    protected_file: tuple[str, int], extra: list[str]
) -> None:
    path, port = protected_file
    server = spawn("run", path, "--transport", "http", "--port", str(port), *extra)
    try:
        url = startup_url(server)
        assert_refuses_anonymous(url, url)
        assert post(url, "wrong")[0] == 401
        assert post(url, "let-me-in")[0] == 200
    finally:
        rest = finish(server, signal.SIGTERM)
    assert "Traceback" not in rest


def test_auth_settings_protect_a_server_that_declares_none(tmp_path: Path, free_port: int) -> None:
    path = tmp_path / "open.py"
    path.write_text(OPEN)
    server = spawn(
        *("run", str(path), "--transport", "http", "--port", str(free_port)),
        *("--auth-issuer", NOWHERE, "--auth-scope", "mcp"),
        env={"TRIMCP_AUTH_SCOPES": "ignored-the-flag-wins"},
    )
    try:
        url = startup_url(server)
        assert server.stderr is not None
        line = read_line(server.stderr)
        # The resource defaults to the loopback URL served; the flag's scopes win.
        assert line == (
            f"trimcp: authorization: OAuth access tokens from {NOWHERE} for {url} "
            "(scopes required: mcp); anonymous requests get 401\n"
        )
        status, headers, _ = post(url)
        assert status == 401
        assert 'scope="mcp"' in headers["www-authenticate"]
        assert_refuses_anonymous(url, url)
    finally:
        finish(server)


def test_auth_dpop_require_serves_only_dpop_bound_tokens(tmp_path: Path, free_port: int) -> None:
    path = tmp_path / "open.py"
    path.write_text(OPEN)
    server = spawn(
        *("run", str(path), "--transport", "http", "--port", str(free_port)),
        *("--auth-issuer", NOWHERE),
        env={"TRIMCP_AUTH_DPOP": "require"},
    )
    try:
        url = startup_url(server)
        assert server.stderr is not None
        line = read_line(server.stderr)
        assert line.startswith(
            "trimcp: authorization: DPoP-bound OAuth access tokens (a fresh proof with every "
            f"request) from {NOWHERE} for {url}"
        ), line
        status, headers, _ = post(url)
        assert status == 401
        assert headers["www-authenticate"].startswith("DPoP ")  # no Bearer challenge
        document = get_json(url.replace("/mcp", "/.well-known/oauth-protected-resource/mcp"))
        assert isinstance(document, dict)
        assert document["dpop_bound_access_tokens_required"] is True
        status, headers, body = post(url, "some-token")  # a Bearer token: refused unread
        assert status == 401
        assert b"accepts only DPoP-bound tokens" in body
        assert 'DPoP error="invalid_token"' in headers["www-authenticate"]
    finally:
        finish(server)


def test_dpop_with_workers_on_the_memory_store_warns_about_replays(
    tmp_path: Path, free_port: int
) -> None:
    # Each worker's replay cache is its own: a proof replayed to another worker is taken.
    path = tmp_path / "open.py"
    path.write_text(OPEN)
    server = spawn(
        *("run", str(path), "--transport", "http", "--workers", "2", "--port", str(free_port)),
        *("--auth-issuer", NOWHERE, "--auth-dpop", "accept"),
    )
    try:
        assert server.stderr is not None
        lines = [read_line(server.stderr)]
        while "with 2 workers" not in lines[-1] and len(lines) < 40:
            lines.append(read_line(server.stderr))
        warned = [line for line in lines if "DPoP proofs are remembered by each worker" in line]
        assert len(warned) == 1, lines
        assert "--store redis://" in warned[0]
    finally:
        finish(server)


@pytest.mark.parametrize(
    ("env", "flags", "says"),
    [
        ({"TRIMCP_AUTH_DPOP": "sometimes"}, ("--auth-issuer", NOWHERE), "unknown DPoP mode"),
        ({}, ("--auth-dpop", "require"), "need --auth-issuer"),
    ],
)
def test_auth_dpop_settings_that_cannot_work_are_refused(
    tmp_path: Path, env: dict[str, str], flags: tuple[str, ...], says: str
) -> None:
    path = tmp_path / "open.py"
    path.write_text(OPEN)
    completed = cli("run", str(path), "--transport", "http", "--port", "0", *flags, env=env)
    assert completed.returncode == 1
    assert says in completed.stderr
    assert "Traceback" not in completed.stderr


def test_declared_auth_and_auth_settings_together_are_refused(
    protected_file: tuple[str, int],
) -> None:
    path, _ = protected_file
    completed = cli(
        *("run", path, "--transport", "http", "--port", "0"),
        env={"TRIMCP_AUTH_ISSUER": NOWHERE},
    )
    assert completed.returncode == 1
    assert "'guarded' 0.1.0 declares its authorization in code" in completed.stderr
    assert "Traceback" not in completed.stderr


def test_a_protected_server_is_never_served_over_websocket(
    protected_file: tuple[str, int],
) -> None:
    path, _ = protected_file
    completed = cli("run", path, "--transport", "websocket", "--port", "0")
    assert completed.returncode == 1
    assert "cannot apply: it would be served open" in completed.stderr
    assert "--transport http" in completed.stderr


def test_stdio_says_that_authorization_applies_over_http_only(
    protected_file: tuple[str, int],
) -> None:
    path, _ = protected_file
    called = cli("call", "hello", "--", sys.executable, "-m", "trimcp", "run", path)
    assert (called.returncode, called.stdout) == (0, "hi\n"), called.stderr
    served = subprocess.run(  # the client leaves at once (EOF): the lines stay
        [sys.executable, "-m", "trimcp", "run", path],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert served.returncode == 0, served.stderr
    assert "trimcp: authorization applies over HTTP only" in served.stderr


def test_an_open_server_on_a_public_address_says_so(tmp_path: Path) -> None:
    path = tmp_path / "open.py"
    path.write_text(OPEN)
    server = spawn(
        *("run", str(path), "--transport", "http", "--host", "0.0.0.0", "--port", "0"),
        *("--allow-host", "*"),
    )
    try:
        assert server.stderr is not None
        lines = [read_line(server.stderr) for _ in range(3)]
    finally:
        finish(server)
    assert any("warning: NO AUTHORIZATION: anyone who can reach" in line for line in lines), lines
