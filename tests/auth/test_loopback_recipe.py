"""The loopback recipe of docs/authorization.md, run as written: its shell blocks (the
authorization server, the protected server, the CLI login, the Python client) in order,
with the ports moved to free ones and a scripted user in place of the browser."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from pathlib import Path

from tests.auth.conftest import OidcProvider
from tests.cli.support import ROOT, read_line

DOC = ROOT / "docs" / "authorization.md"
BROWSER = Path(__file__).with_name("scripted_browser.py")
BOUND = 120.0


def recipe() -> list[str]:
    """The ```bash blocks of the section "A working login on loopback", in order."""
    text = DOC.read_text()
    section = text.split("## A working login on loopback", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"^```bash\n(.*?)^```", section, re.DOTALL | re.MULTILINE)


def free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def test_the_recipe_has_its_four_steps() -> None:
    steps = recipe()
    assert len(steps) == 4
    assert "examples/oidc/provider.mjs" in steps[0]
    assert "trimcp run examples/oauth_server.py --transport http" in steps[1]
    assert "trimcp call --url http://127.0.0.1:8000/mcp --auth" in steps[2]
    assert "examples/oauth_client.py" in steps[3]


def test_the_loopback_recipe_works(oidc_provider: OidcProvider, tmp_path: Path) -> None:
    # (oidc_provider: installs oidc-provider, or skips where npm is missing.)
    issuer_port, server_port = free_port(), free_port()
    steps = [
        step.replace("3000", str(issuer_port)).replace("8000", str(server_port))
        for step in recipe()
    ]
    bin_dir = str(Path(sys.executable).parent)
    env = {
        **os.environ,
        "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}",  # trimcp, python
        "BROWSER": f"{sys.executable} {BROWSER} %s",
        "BROWSER_LOGIN": "dana",
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
            start_new_session=True,  # its children are stopped with it
        )

    def run(script: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["bash", "-euc", script],
            cwd=ROOT,
            env=env,
            capture_output=True,
            stdin=subprocess.DEVNULL,
            text=True,
            timeout=BOUND,
            check=False,
        )

    provider = background(steps[0])
    server = None
    try:
        assert provider.stdout is not None
        assert f'"port":{issuer_port}' in read_line(provider.stdout, BOUND)
        server = background(steps[1])
        assert server.stderr is not None
        assert "trimcp: serving 'notes'" in read_line(server.stderr, BOUND)
        assert "authorization: OAuth access tokens" in read_line(server.stderr, BOUND)
        called = run(steps[2])
        assert called.returncode == 0, called.stderr
        assert called.stdout == "1 notes for dana\n"
        client = run(steps[3])
        assert client.returncode == 0, client.stderr
        # delete_note needs notes:write, not asked for yet: hidden (hide_unauthorized).
        assert client.stdout == "tools you may call: ['add_note']\n2 notes for dana\n"
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
