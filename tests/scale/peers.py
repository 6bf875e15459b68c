"""Real peers for the replica tests: redis-server, nginx and trimcp replicas, each a child
process on a loopback port, started and stopped by the tests (every wait bounded).

``tests/scale/setup.sh`` installs redis-server and nginx when missing (apt-get; CI runs as
root). Without them the tests skip, except under CI (see ``tests/ci.py``), where they fail.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, Literal

import pytest

from tests.ci import missing_peer

ROOT = Path(__file__).resolve().parents[2]
SETUP = Path(__file__).with_name("setup.sh")
START_TIMEOUT = 20.0
STOP_TIMEOUT = 20.0


def tools() -> dict[str, str]:
    """Paths of redis-server and nginx (installing them when missing and allowed)."""
    done = subprocess.run(
        [str(SETUP), "--quiet"], capture_output=True, text=True, timeout=600, check=False
    )
    if done.returncode != 0:
        message = f"tests/scale/setup.sh failed: {done.stderr.strip()}"
        missing_peer(message, "CI must provide redis-server and nginx")
    return dict(line.split("=", 1) for line in done.stdout.split())


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_for_port(port: int, process: subprocess.Popen[bytes], what: str) -> None:
    """Bounded wait until something accepts on ``port`` (or ``process`` died)."""
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"{what} exited with {process.returncode} before listening")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.02)  # an external process starting: nothing to wait on but the port
    raise RuntimeError(f"{what} did not listen on port {port} within {START_TIMEOUT}s")


def stop(process: subprocess.Popen[bytes], sig: int = signal.SIGTERM) -> None:
    if process.poll() is None:
        process.send_signal(sig)
        try:
            process.wait(STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(STOP_TIMEOUT)


class RedisServer:
    """A throwaway redis-server (no persistence) that can be stopped and started again;
    with ``password``, one that refuses clients without it (``requirepass``)."""

    def __init__(self, binary: str, workdir: Path, password: str | None = None) -> None:
        self.binary = binary
        self.workdir = workdir
        self.port = free_port()
        self.password = password
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        secret = "" if self.password is None else f":{self.password}@"
        return f"redis://{secret}127.0.0.1:{self.port}/0"

    def start(self) -> None:
        self.process = subprocess.Popen(
            [
                self.binary,
                "--port",
                str(self.port),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
                "--dir",
                str(self.workdir),
                "--loglevel",
                "warning",
                *(() if self.password is None else ("--requirepass", self.password)),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        wait_for_port(self.port, self.process, "redis-server")

    def stop(self) -> None:
        if self.process is not None:
            stop(self.process)
            self.process = None


NGINX_CONF = """\
worker_processes 1;
daemon off;
pid {dir}/nginx.pid;
error_log {dir}/error.log warn;
events {{ worker_connections 1024; }}
http {{
    log_format upstreams '$request_method $status $upstream_addr $upstream_status '
                         '$request_time $http_mcp_session_id';
    access_log {dir}/access.log upstreams;
    client_body_temp_path {dir}/body;
    proxy_temp_path {dir}/proxy;
    fastcgi_temp_path {dir}/fastcgi;
    uwsgi_temp_path {dir}/uwsgi;
    scgi_temp_path {dir}/scgi;
{include}
    server {{
        listen 127.0.0.1:{port};
        include {site};
    }}
}}
"""


class Nginx:
    """nginx in the foreground, balancing round-robin over ``upstreams`` (no stickiness),
    with the site settings shipped in examples/deploy/nginx-mcp-location.conf. ``port``:
    where it listens (default: a free port; give one when the replicas must know their
    public URL before nginx starts, as a protected server's resource URL)."""

    def __init__(
        self, binary: str, workdir: Path, upstreams: list[int], port: int | None = None
    ) -> None:
        self.port = free_port() if port is None else port
        #: One line per finished request (see NGINX_CONF's ``upstreams`` format).
        self.access_log = workdir / "access.log"
        servers = "".join(f"        server 127.0.0.1:{p} max_fails=0;\n" for p in upstreams)
        include = f"    upstream trimcp {{\n{servers}        keepalive 16;\n    }}\n"
        conf = workdir / "nginx.conf"
        conf.write_text(
            NGINX_CONF.format(
                dir=workdir,
                port=self.port,
                include=include,
                site=ROOT / "examples" / "deploy" / "nginx-mcp-location.conf",
            )
        )
        self.process = subprocess.Popen(
            [binary, "-c", str(conf), "-p", str(workdir), "-e", str(workdir / "error.log")],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        wait_for_port(self.port, self.process, "nginx")

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/mcp"

    def stop(self) -> None:
        stop(self.process, signal.SIGQUIT)


REPLICA_APP = Path(__file__).with_name("replica_app.py")


EVERYTHING_SERVER = ROOT / "examples" / "everything_server.py"


class Replica:
    """One ``trimcp run tests/scale/replica_app.py`` process on its own port (``script``:
    ``python APP --transport http ...``, an app with its own command line, such as
    examples/everything_server.py)."""

    def __init__(
        self,
        store_url: str | None,
        *extra: str,
        port: int | None = None,
        app: Path = REPLICA_APP,
        env: Mapping[str, str] | None = None,
        script: bool = False,
    ) -> None:
        self.port = free_port() if port is None else port
        self.store_url = store_url
        self.extra = extra
        self.app = app
        self.env = dict(env or {})
        self.script = script
        command = [str(app)] if script else ["-m", "trimcp", "run", str(app)]
        args = [
            sys.executable,
            *command,
            "--transport",
            "http",
            "--port",
            str(self.port),
            *extra,
        ]
        if store_url is not None:
            args += ["--store", store_url]
        env = {**os.environ, **self.env, "PYTHONPATH": str(ROOT)}
        handle, name = tempfile.mkstemp(prefix=f"replica-{self.port}-", suffix=".log")
        os.close(handle)
        self.log = Path(name)
        with self.log.open("wb") as log:
            self.process = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=log, env=env)
        wait_for_port(self.port, self.process, "trimcp replica")

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/mcp"

    def output(self) -> str:
        """What the replica wrote to stderr so far."""
        return self.log.read_text(errors="replace")

    def kill(self) -> None:
        stop(self.process, signal.SIGKILL)
        self.log.unlink(missing_ok=True)

    def respawn(self) -> Replica:
        """A fresh replica on this one's port (after it stopped)."""
        return Replica(
            self.store_url,
            *self.extra,
            port=self.port,
            app=self.app,
            env=self.env,
            script=self.script,
        )

    def stop(self) -> None:
        stop(self.process)
        self.log.unlink(missing_ok=True)


class Cluster:
    """Replicas of one app on one Redis store, behind round-robin nginx (no stickiness)."""

    def __init__(
        self, redis: RedisServer, replicas: list[Replica], nginx: Nginx, marks: Path
    ) -> None:
        self.redis = redis
        self.replicas = replicas
        self.nginx = nginx
        #: Where the apps leave their marks (``BUS_MARKS``/``SCALE_MARKS``).
        self.marks = marks

    def logs(self) -> str:
        """The end of each replica's stderr, for an assertion message."""
        return "\n".join(f"--- replica {r.port}:\n{r.output()[-2000:]}" for r in self.replicas)

    async def runner_of(self, tag: str) -> int:
        """The index of the replica that started job ``tag`` (the app leaves
        ``<marks>/<tag>.pid`` as it starts; another process writes it, so this polls,
        bounded)."""
        import trio

        mark = self.marks / f"{tag}.pid"
        text = ""
        for _ in range(1000):
            # Until it holds a whole pid: the apps rename their marks into place, but a
            # reader must not trust every writer to (an empty file broke a CI run).
            text = mark.read_text() if mark.exists() else ""
            if text.strip().isdigit():
                break
            await trio.sleep(0.02)
        else:
            raise AssertionError(f"no replica left a whole {mark.name} within 20 s: {text!r}")
        pid = int(text)
        return next(n for n, r in enumerate(self.replicas) if r.process.pid == pid)


@contextlib.contextmanager
def open_cluster(
    nginx_binary: str,
    redis: RedisServer,
    workdir: Path,
    *,
    count: int = 3,
    app: Path = REPLICA_APP,
    marks: Path | None = None,
    marks_variable: str = "SCALE_MARKS",
    script: bool = False,
    extra: tuple[str, ...] = (),
) -> Iterator[Cluster]:
    """Start ``count`` replicas of ``app`` on ``redis`` and nginx in front of them (its
    files in ``workdir``; the apps' marks in ``marks``, by default ``workdir/marks``);
    stop them all on the way out, whatever happened. ``script``, ``extra``: as
    :class:`Replica` takes them."""
    if marks is None:
        marks = workdir / "marks"
        marks.mkdir(exist_ok=True)
    env = {marks_variable: str(marks)}
    replicas: list[Replica] = []
    nginx: Nginx | None = None
    try:
        replicas = [
            Replica(redis.url, *extra, app=app, env=env, script=script) for _ in range(count)
        ]
        nginx = Nginx(nginx_binary, workdir, [r.port for r in replicas])
        yield Cluster(redis, replicas, nginx, marks)
    finally:
        if nginx is not None:
            nginx.stop()
        for replica in replicas:
            replica.stop()


BUS_APP = Path(__file__).with_name("bus_app.py")


def cluster_fixture(
    *,
    count: int = 3,
    app: Path = REPLICA_APP,
    marks_variable: str = "SCALE_MARKS",
    scope: Literal["module", "function"] = "module",
    script: bool = False,
    extra: tuple[str, ...] = (),
) -> Any:
    """A pytest fixture opening a :func:`open_cluster` for each module (or each test):
    ``cluster = cluster_fixture(app=BUS_APP, marks_variable="BUS_MARKS")``."""

    @pytest.fixture(scope=scope)
    def cluster(
        scale_tools: dict[str, str],
        redis_server: RedisServer,
        tmp_path_factory: pytest.TempPathFactory,
    ) -> Iterator[Cluster]:
        workdir = tmp_path_factory.mktemp("cluster")
        with open_cluster(
            scale_tools["SCALE_NGINX"],
            redis_server,
            workdir,
            count=count,
            app=app,
            marks_variable=marks_variable,
            script=script,
            extra=extra,
        ) as opened:
            yield opened

    return cluster
