"""The implementations the suite compares, and how to start each one.

A *conventional* server program follows the convention of the programs in
``benchmarks/servers/`` (``trimcp_server.py``, ``sdk_lowlevel_many.py``, ...): it serves
``echo``/``sleep``/``stats`` over stdio and accepts ``--tools N``, ``--page-size P``,
``--http PORT``, ``--json-response`` and ``--check`` (exit status 3 = not available, the
reason on stderr). Such a program can run every workload. Any other command (``--server-cmd``,
FastMCP's ``fastmcp_server.py``) only needs ``echo`` over stdio and runs the stdio echo
workloads; a URL (``--server-url``) runs the HTTP echo workloads against a server someone
else started. The TypeScript SDK's servers (``ts-v1``, ``ts-v2``) are conventional
programs whose command is known only once their pinned packages are installed: their
``setup`` (``benchmarks/suite/ts_sdk.py``) installs on first use and returns it.
"""

from __future__ import annotations

import importlib.util
import shlex
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from benchmarks.suite import ts_sdk
from benchmarks.suite.ts_sdk import Installed, NotInstalled

SERVERS = Path(__file__).resolve().parents[1] / "servers"

#: Exit status of a server program that is not available in this environment.
EXIT_UNAVAILABLE = 3

#: How long ``--check`` may take (it imports the server's framework).
CHECK_TIMEOUT = 60.0


@dataclass(frozen=True)
class Impl:
    """One implementation under test.

    Exactly one of ``argv`` (a server command, stdio by default), ``setup`` (a server
    installed on first use: returns its command) and ``url`` (a running Streamable HTTP
    endpoint) is set. ``conventional`` says the command follows the options convention
    above. ``requires`` names a module that must be importable (checked in this process)
    before anything is spawned.
    """

    name: str
    argv: tuple[str, ...] | None = None
    url: str | None = None
    conventional: bool = False
    requires: str | None = None
    note: str = ""
    #: Installs (on first use) and returns the command and the versions it runs; raises
    #: ``NotInstalled``. Called at most once per process: :meth:`command` keeps the outcome.
    setup: Callable[[], Installed] | None = None
    _checks: dict[tuple[str, ...], str | None] = field(
        default_factory=dict, compare=False, repr=False
    )
    _installed: list[Installed | NotInstalled] = field(
        default_factory=list, compare=False, repr=False
    )

    @property
    def spawns(self) -> bool:
        """Whether the suite starts this implementation as a process (not a URL)."""
        return self.argv is not None or self.setup is not None

    def command(self) -> tuple[str, ...] | None:
        """The command that starts the server: ``argv``, or what ``setup`` returns (run on
        the first call, which may install for minutes; later calls answer at once). None
        for a URL. Raises ``NotInstalled`` (on every call) when the setup failed."""
        if self.setup is None:
            return self.argv
        if not self._installed:
            try:
                self._installed.append(self.setup())
            except NotInstalled as exc:
                self._installed.append(exc)
        outcome = self._installed[0]
        if isinstance(outcome, NotInstalled):
            raise NotInstalled(str(outcome))
        return outcome.command

    def versions(self) -> dict[str, str]:
        """The versions the setup reported (empty without a setup or before it ran)."""
        outcome = self._installed[0] if self._installed else None
        return dict(outcome.versions) if isinstance(outcome, Installed) else {}

    def unavailable(self, *options: str) -> str | None:
        """Why this implementation cannot run with ``options``, or None if it can.

        For a conventional command this runs ``argv --check *options`` once per option
        set (cached); bounded by :data:`CHECK_TIMEOUT`. Only exit status 3 means
        unavailable: any other failure is left for the runs to report as errors.
        """
        if self.requires is not None and importlib.util.find_spec(self.requires) is None:
            return f"module {self.requires!r} is not installed (pip install 'trimcp[bench]')"
        try:
            argv = self.command()
        except NotInstalled as exc:
            return str(exc)
        if argv is None or not self.conventional:
            return None
        if options in self._checks:
            return self._checks[options]
        try:
            proc = subprocess.run(
                [*argv, "--check", *options],
                capture_output=True,
                text=True,
                timeout=CHECK_TIMEOUT,
                check=False,
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            reason: str | None = f"cannot run {argv[0]!r}: {exc}"
        else:
            if proc.returncode == EXIT_UNAVAILABLE:
                lines = proc.stderr.strip().splitlines()
                reason = lines[-1] if lines else "unavailable (--check exited with status 3)"
            else:
                # Available, or broken: a broken server must fail its runs loudly, not
                # vanish from the report as "skipped".
                reason = None
        self._checks[options] = reason
        return reason


def _script(name: str, *extra: str) -> tuple[str, ...]:
    return (sys.executable, str(SERVERS / name), *extra)


def _ts_impl(sdk: ts_sdk.TsSdk, what: str) -> Impl:
    return Impl(
        sdk.name,
        setup=sdk.install,
        conventional=True,
        note=f"TypeScript SDK {sdk.package} {sdk.pinned_version() or '(unpinned?)'} on Node, "
        f"{what} ({sdk.server.name}; pinned by {sdk.lock.relative_to(ts_sdk.REPO)}, "
        "installed into .cache/ on first use)",
    )


def builtin_impls() -> dict[str, Impl]:
    """The implementations the suite knows by name, in report order (trimcp first)."""
    impls = [
        Impl(
            "trimcp",
            _script("trimcp_server.py", "--api", "lowlevel"),
            conventional=True,
            note="trimcp LowLevelServer (benchmarks/servers/trimcp_server.py)",
        ),
        Impl(
            "trimcp-app",
            _script("trimcp_server.py", "--api", "app"),
            conventional=True,
            note="trimcp.Server decorator framework (trimcp_server.py --api app)",
        ),
        Impl(
            "sdk-lowlevel",
            _script("sdk_lowlevel_many.py"),
            conventional=True,
            requires="mcp",
            note="official SDK low-level Server (sdk_lowlevel_many.py)",
        ),
        Impl(
            "sdk-highlevel",
            _script("sdk_highlevel_many.py"),
            conventional=True,
            requires="mcp",
            note="official SDK MCPServer, async tools (sdk_highlevel_many.py)",
        ),
        Impl(
            "fastmcp",
            _script("fastmcp_server.py"),
            requires="fastmcp",
            note="standalone FastMCP (fastmcp_server.py), stdio echo workloads only",
        ),
        _ts_impl(ts_sdk.V1, "McpServer; HTTP: one StreamableHTTPServerTransport per session"),
        _ts_impl(ts_sdk.V2, "McpServer factory; HTTP: createMcpHandler (stateless, both eras)"),
        Impl(
            "bound",
            _script("bound.py"),
            conventional=True,
            note="the floor, not MCP: plain Trio, a task and cancel scope per request "
            "(stdio); h11 on Trio sockets (HTTP) (bound.py)",
        ),
    ]
    return {impl.name: impl for impl in impls}


def parse_named(spec: str, what: str) -> tuple[str, str]:
    """Split ``NAME=VALUE`` (as given to ``--server-cmd`` / ``--server-url``)."""
    name, sep, value = spec.partition("=")
    name, value = name.strip(), value.strip()
    if not sep or not name or not value:
        raise ValueError(f"expected NAME={what}, got {spec!r}")
    if not all(c.isalnum() or c in "-_." for c in name):
        raise ValueError(f"implementation names may hold letters, digits, '-', '_', '.': {name!r}")
    return name, value


def command_impl(spec: str) -> Impl:
    """An implementation from ``--server-cmd NAME=CMD`` (CMD split like a shell would)."""
    name, command = parse_named(spec, "CMD")
    argv = tuple(shlex.split(command))
    if not argv:
        raise ValueError(f"empty command for {name!r}")
    return Impl(name, argv, note=f"--server-cmd {command}")


def checkout_impl(spec: str) -> Impl:
    """An implementation from ``--trimcp-from NAME=DIR``: trimcp's low-level benchmark
    server (this checkout's ``trimcp_server.py``) importing trimcp from another checkout
    ``DIR``, for A/B runs of two versions in one interleaved suite."""
    name, where = parse_named(spec, "DIR")
    root = Path(where).expanduser().resolve()
    if not (root / "trimcp" / "__init__.py").is_file():
        raise ValueError(f"{where!r} is not a trimcp checkout (no trimcp/__init__.py in it)")
    server = _script("trimcp_server.py", "--api", "lowlevel")
    return Impl(
        name,
        ("env", f"PYTHONPATH={root}", *server),
        conventional=True,
        note=f"trimcp LowLevelServer with trimcp from {root}",
    )


def url_impl(spec: str) -> Impl:
    """An implementation from ``--server-url NAME=URL``."""
    name, url = parse_named(spec, "URL")
    if not url.startswith("http://"):
        raise ValueError(f"only http:// URLs are supported, got {url!r}")
    return Impl(name, url=url, note=f"--server-url {url}")
