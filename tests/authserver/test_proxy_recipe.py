"""The recipe of docs/authorization.md ("On loopback, with oidc-provider as the identity
provider"), run as written: oidc-provider with registration off and trimcp's client
pre-registered, examples/oauth_proxy_server.py, and the CLI logging in through trimcp's
consent page and the provider's login, with ports moved to free ones and a scripted user."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from pathlib import Path

from tests.auth.conftest import OidcProvider
from tests.authserver.harness import free_port
from tests.cli.support import ROOT, read_line

DOC = ROOT / "docs" / "authorization.md"
BROWSER = Path(__file__).parent.parent / "auth" / "scripted_browser.py"
BOUND = 120.0


def recipe() -> list[str]:
    text = DOC.read_text()
    section = text.split("### On loopback, with oidc-provider as the identity provider", 1)[1]
    section = section.split("\n### ", 1)[0]
    return re.findall(r"^```bash\n(.*?)^```", section, re.DOTALL | re.MULTILINE)


def test_the_recipe_has_its_three_steps() -> None:
    steps = recipe()
    assert len(steps) == 3
    assert "REGISTRATION=off" in steps[0]
    assert "trimcp run examples/oauth_proxy_server.py --transport http --port 8000" in steps[1]
    assert "trimcp call --url http://127.0.0.1:8000/mcp --auth whoami" in steps[2]


def test_the_proxy_recipe_works(oidc_provider: OidcProvider, tmp_path: Path) -> None:
    # (oidc_provider: installs oidc-provider, or skips where npm is missing.)
    issuer_port, server_port = free_port(), free_port()
    steps = [
        step.replace("3000", str(issuer_port)).replace("8000", str(server_port))
        for step in recipe()
    ]
    bin_dir = str(Path(sys.executable).parent)
    env = {
        **os.environ,
        "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
        "BROWSER": f"{sys.executable} {BROWSER} %s",
        "BROWSER_LOGIN": "erin",
        "HOME": str(tmp_path),
        "XDG_CACHE_HOME": str(tmp_path / "cache"),
    }

    def background(script: str) -> subprocess.Popen[str]:
        return subprocess.Popen(
            ["bash", "-euc", script],
            cwd=ROOT,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            stdin=subprocess.DEVNULL,
            text=True,
            start_new_session=True,
        )

    provider = background(steps[0])
    server = None
    try:
        assert provider.stdout is not None
        assert f'"port":{issuer_port}' in read_line(provider.stdout, BOUND)
        server = background(steps[1])
        assert server.stderr is not None
        assert "trimcp: serving 'whoami'" in read_line(server.stderr, BOUND)
        line = read_line(server.stderr, BOUND)
        assert f"from http://127.0.0.1:{server_port} (this server; users log in at" in line, line
        called = subprocess.run(
            ["bash", "-euc", steps[2]],
            cwd=ROOT,
            env=env,
            capture_output=True,
            stdin=subprocess.DEVNULL,
            text=True,
            timeout=BOUND,
            check=False,
        )
        assert called.returncode == 0, called.stderr
        issuer = f"http://127.0.0.1:{issuer_port}"
        assert re.fullmatch(rf"\(user erin at {issuer}\) via c-\S+\n", called.stdout), called.stdout
    finally:
        for process in (server, provider):
            if process is not None and process.poll() is None:
                os.killpg(process.pid, signal.SIGTERM)
                try:
                    process.wait(30)
                except subprocess.TimeoutExpired:
                    os.killpg(process.pid, signal.SIGKILL)
                    process.wait()
            if process is not None:
                for stream in (process.stdout, process.stderr):
                    if stream is not None:
                        stream.close()
    if server is not None:
        assert server.returncode == 0
