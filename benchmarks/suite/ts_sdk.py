"""The official TypeScript SDK's servers (``ts-v1``, ``ts-v2``): where their pinned
packages come from and the command that runs them.

The packages are the trees the interop tests already keep locked, so the benchmarks run
exactly the versions the tests pin: ``ts-v1`` loads ``@modelcontextprotocol/sdk`` as
``tests/interop/ts_everything/package-lock.json`` records it (the SDK v1 the everything
server is built on), ``ts-v2`` loads ``@modelcontextprotocol/server`` as
``tests/interop/ts_v2/package-lock.json`` records it. On first use that folder's
``setup.sh`` installs the tree from its lock (``npm ci``) into the checkout's git-ignored
``.cache/``, never globally; afterwards it finds the tree and does no npm work. It prints
the node to use and the ``node_modules`` folder, which the server program
(``benchmarks/servers/ts_v1_server.cjs`` / ``ts_v2_server.cjs``) is given as
``--modules``.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SERVERS = REPO / "benchmarks" / "servers"
INTEROP = REPO / "tests" / "interop"

#: Bound on one ``setup.sh`` run: a cold install fetches about 110 packages.
SETUP_TIMEOUT = 600.0
#: Bound on ``node --version``.
VERSION_TIMEOUT = 30.0


class NotInstalled(Exception):
    """The SDK cannot be installed or found here; the message says why and what to do."""


@dataclass(frozen=True)
class Installed:
    """What :meth:`TsSdk.install` found: the server's command and the versions it runs."""

    command: tuple[str, ...]
    versions: dict[str, str]


@dataclass(frozen=True)
class TsSdk:
    """One major version of the TypeScript SDK and how the suite runs its server."""

    #: The implementation's name in the suite.
    name: str
    #: The npm package the server program loads (its version is the pin reported).
    package: str
    #: The tests' setup script that installs the locked tree.
    setup: Path
    #: The names of the assignments ``setup`` prints: the node, the ``node_modules`` folder.
    node_var: str
    modules_var: str
    #: The benchmark server program.
    server: Path

    @property
    def lock(self) -> Path:
        return self.setup.parent / "package-lock.json"

    def pinned_version(self) -> str | None:
        """The version of :attr:`package` the lock file pins (None when unreadable)."""
        try:
            lock = json.loads(self.lock.read_text(encoding="utf-8"))
            version = lock["packages"][f"node_modules/{self.package}"]["version"]
        except (OSError, ValueError, KeyError, TypeError):
            return None
        return version if isinstance(version, str) else None

    def install(self) -> Installed:
        """The server's command (node, program, ``--modules DIR``) and versions, installing
        the pinned tree first when it is not there yet (up to :data:`SETUP_TIMEOUT`; later
        calls do no npm work). Raises :class:`NotInstalled` with the reason."""
        where = self.setup.relative_to(REPO)
        if shutil.which("npm") is None:
            raise NotInstalled(
                "needs node/npm: npm is not on PATH (the TypeScript SDK is installed with "
                f"npm into .cache/ on first use, by {where})"
            )
        if not self.setup.is_file():
            raise NotInstalled(f"{where} is missing: run the benchmarks from a trimcp checkout")
        try:
            done = subprocess.run(
                [str(self.setup), "--quiet"],
                capture_output=True,
                text=True,
                timeout=SETUP_TIMEOUT,
                check=False,
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise NotInstalled(f"{where} could not run: {exc}") from None
        if done.returncode != 0:
            lines = done.stderr.strip().splitlines()
            raise NotInstalled(
                f"{where} failed with exit status {done.returncode}: "
                + (lines[-1] if lines else "no message")
            )
        values = dict(line.split("=", 1) for line in done.stdout.splitlines() if "=" in line)
        node, modules = values.get(self.node_var), values.get(self.modules_var)
        if not node or not modules:
            raise NotInstalled(f"{where} printed no {self.node_var} / {self.modules_var}")
        versions = {self.package: _package_version(Path(modules), self.package) or "?"}
        versions["node"] = node_version(node) or "?"
        return Installed(command=(node, str(self.server), "--modules", modules), versions=versions)


V1 = TsSdk(
    name="ts-v1",
    package="@modelcontextprotocol/sdk",
    setup=INTEROP / "ts_everything" / "setup.sh",
    node_var="TS_EVERYTHING_NODE",
    modules_var="TS_EVERYTHING_NODE_MODULES",
    server=SERVERS / "ts_v1_server.cjs",
)

V2 = TsSdk(
    name="ts-v2",
    package="@modelcontextprotocol/server",
    setup=INTEROP / "ts_v2" / "setup.sh",
    node_var="TS_V2_NODE",
    modules_var="TS_V2_NODE_PATH",
    server=SERVERS / "ts_v2_server.cjs",
)


def _package_version(modules: Path, package: str) -> str | None:
    try:
        manifest = json.loads((modules / package / "package.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    version = manifest.get("version") if isinstance(manifest, dict) else None
    return version if isinstance(version, str) else None


def node_version(node: str) -> str | None:
    """``node --version`` of the node a command runs (None when it cannot tell)."""
    try:
        done = subprocess.run(
            [node, "--version"],
            capture_output=True,
            text=True,
            timeout=VERSION_TIMEOUT,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    if done.returncode != 0:
        return None
    return done.stdout.strip().removeprefix("v") or None
