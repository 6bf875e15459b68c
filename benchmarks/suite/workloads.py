"""The workloads: what each one measures, its sizes, and how one run of it goes.

A run returns ``{"metrics": {key: number-or-None}, "raw": <the generator's full result>}``;
each workload's :class:`Column` list names the metrics the report shows, the first one
being the workload's headline figure.
"""

from __future__ import annotations

import contextlib
import os
import statistics
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, fields, replace
from typing import Any, Literal

from benchmarks import loadgen_http, loadgen_stdio
from benchmarks.loadgen_stdio import (
    DEFAULT_PROTOCOL_VERSION,
    BadResponse,
    LoadgenError,
    StdioServer,
)
from benchmarks.suite import storm
from benchmarks.suite.impls import Impl
from benchmarks.suite.procs import StartFailed, Unavailable, http_server
from benchmarks.suite.ts_sdk import NotInstalled


class Skip(Exception):
    """This implementation does not take part in this workload; the message says why."""


class RunFailed(Exception):
    """One run failed; the message says why (the server's stderr tail included)."""


@dataclass(frozen=True)
class Sizes:
    """Counts for every workload; :data:`QUICK` and :data:`FULL` are the presets."""

    reps: int
    warmup: int
    seq_calls: int
    pipe_calls: int
    pipe_in_flight: int
    http_calls: int
    http_sessions: int
    cold_spawns: int
    idle_sessions: int
    codec_count: int
    codec_repeats: int
    list_tools: int
    list_page: int
    list_listings: int
    storm_calls: int
    storm_in_flight: int

    def scaled(self, factor: float) -> Sizes:
        """Every call/message/listing/session count times ``factor`` (at least 1); the
        structure (in flight, sessions, tools, page size, repetitions) is unchanged."""
        scalable = {
            "warmup",
            "seq_calls",
            "pipe_calls",
            "http_calls",
            "idle_sessions",
            "codec_count",
            "list_listings",
            "storm_calls",
        }
        return replace(
            self,
            **{
                f.name: max(1, round(getattr(self, f.name) * factor))
                for f in fields(self)
                if f.name in scalable
            },
        )


QUICK = Sizes(
    reps=2,
    warmup=50,
    seq_calls=400,
    pipe_calls=2000,
    pipe_in_flight=100,
    http_calls=600,
    http_sessions=16,
    cold_spawns=1,
    idle_sessions=100,
    codec_count=300,
    codec_repeats=3,
    list_tools=500,
    list_page=50,
    list_listings=5,
    storm_calls=600,
    storm_in_flight=64,
)

FULL = Sizes(
    reps=3,
    warmup=200,
    seq_calls=3000,
    pipe_calls=20000,
    pipe_in_flight=100,
    http_calls=5000,
    http_sessions=16,
    cold_spawns=3,
    idle_sessions=1000,
    codec_count=2000,
    codec_repeats=5,
    list_tools=500,
    list_page=50,
    list_listings=50,
    storm_calls=10000,
    storm_in_flight=64,
)


@dataclass(frozen=True)
class Column:
    """One reported metric. ``better`` is "lower", "higher" or "" (information only)."""

    key: str
    label: str
    unit: str
    better: Literal["lower", "higher", ""] = ""
    digits: int = 0


Runner = Callable[[Impl, Sizes], dict[str, Any]]


@dataclass(frozen=True)
class Workload:
    name: str
    title: str
    columns: tuple[Column, ...]
    run: Runner
    #: Which implementations take part: "any" command, "conventional" commands only,
    #: "http" (conventional commands serving HTTP, and URLs), "http-spawned"
    #: (conventional commands only: needs the pid), or "codec" (in-process, own rows).
    scope: Literal["any", "conventional", "http", "http-spawned", "codec"]
    #: Options the server is started with (and ``--check``-ed with).
    options: Callable[[Sizes], tuple[str, ...]] = lambda sizes: ()

    @property
    def primary(self) -> Column:
        return self.columns[0]


# ----------------------------------------------------------------------------- helpers


@contextlib.contextmanager
def _stderr_log() -> Iterator[tuple[int, Callable[[], str]]]:
    """A file for a server's stderr (never a pipe that could fill) and a reader of its tail."""
    with tempfile.TemporaryFile() as log:

        def tail() -> str:
            log.seek(0, os.SEEK_END)
            size = log.tell()
            log.seek(max(0, size - 1500))
            return log.read().decode("utf-8", "replace").strip()

        yield log.fileno(), tail


def _guard(call: Callable[[int], dict[str, Any]]) -> dict[str, Any]:
    with _stderr_log() as (fd, tail):
        try:
            return call(fd)
        except Unavailable as exc:
            raise Skip(str(exc)) from None
        except (LoadgenError, StartFailed, OSError, ValueError) as exc:
            text = tail()
            if "exit status 3" in str(exc) and text:
                raise Skip(text.splitlines()[-1]) from None
            raise RunFailed(f"{type(exc).__name__}: {exc}" + (f"\n{text}" if text else "")) from exc


def _argv(impl: Impl, *options: str) -> list[str]:
    try:
        command = impl.command()
    except NotInstalled as exc:
        raise Skip(str(exc)) from None
    if command is None:
        raise Skip("not a stdio server")
    return [*command, *options]


def _pick(raw: dict[str, Any], **paths: str) -> dict[str, Any]:
    """Flatten ``raw`` into metrics: ``name="a.b"`` reads ``raw["a"]["b"]`` (None if absent)."""
    out: dict[str, Any] = {}
    for name, path in paths.items():
        value: Any = raw
        for part in path.split("."):
            value = value.get(part) if isinstance(value, dict) else None
        out[name] = value
    return out


# ----------------------------------------------------------------------------- stdio


#: The revision of the ``-2026`` stdio workloads: no handshake, a ``_meta`` envelope on
#: every request (a server that does not serve it answers the first call with an error).
MODERN = "2026-07-28"


def _stdio_era(call: Callable[[int], dict[str, Any]], protocol_version: str | None) -> Any:
    """``call`` under :func:`_guard`; a 2026 run that the server refuses is a skip."""
    try:
        return _guard(call)
    except RunFailed as exc:
        if protocol_version is not None and "error response to id" in str(exc):
            raise Skip(f"serves no {protocol_version} requests over stdio") from None
        raise


def run_seq(impl: Impl, sizes: Sizes, protocol_version: str | None = None) -> dict[str, Any]:
    version = protocol_version or DEFAULT_PROTOCOL_VERSION
    raw = _stdio_era(
        lambda fd: loadgen_stdio.run_sequential(
            _argv(impl), sizes.seq_calls, warmup=sizes.warmup, stderr=fd, protocol_version=version
        ),
        protocol_version,
    )
    metrics = _pick(
        raw,
        server_cpu_us="server_cpu_us_per_call",
        p50_us="latency_us.p50",
        p99_us="latency_us.p99",
        calls_per_s="calls_per_s",
        gen_cpu_us="gen_cpu_us_per_call",
    )
    return {"metrics": metrics, "raw": raw}


def run_pipe(impl: Impl, sizes: Sizes, protocol_version: str | None = None) -> dict[str, Any]:
    version = protocol_version or DEFAULT_PROTOCOL_VERSION
    raw = _stdio_era(
        lambda fd: loadgen_stdio.run_pipelined(
            _argv(impl),
            sizes.pipe_calls,
            sizes.pipe_in_flight,
            warmup=sizes.warmup,
            stderr=fd,
            protocol_version=version,
        ),
        protocol_version,
    )
    metrics = _pick(
        raw,
        calls_per_s="calls_per_s",
        p50_ms="latency_us.p50",
        p99_ms="latency_us.p99",
        server_cpu_us="server_cpu_us_per_call",
        gen_cpu_us="gen_cpu_us_per_call",
    )
    for key in ("p50_ms", "p99_ms"):
        metrics[key] = metrics[key] / 1000.0 if metrics[key] is not None else None
    return {"metrics": metrics, "raw": raw}


def run_cold(impl: Impl, sizes: Sizes) -> dict[str, Any]:
    # Like benchmarks.cold_start: trimcp starts from compiled bytecode and a filled cache
    # of generated code, as an installed trimcp does (the SDK has its .pyc from pip).
    from benchmarks.cold_start import compile_trimcp

    compile_trimcp()

    def call(fd: int) -> dict[str, Any]:
        return loadgen_stdio.cold_start(_argv(impl), sizes.cold_spawns, stderr=fd)

    raw = _guard(call)
    metrics = _pick(raw, init_ms="initialize_ms.median", first_call_ms="first_call_ms.median")
    return {"metrics": metrics, "raw": raw}


def _list_options(paged: bool) -> Callable[[Sizes], tuple[str, ...]]:
    def options(sizes: Sizes) -> tuple[str, ...]:
        base = ("--tools", str(sizes.list_tools))
        return (*base, "--page-size", str(sizes.list_page)) if paged else base

    return options


def _listing(server: StdioServer, next_id: int) -> tuple[int, int, int]:
    """One full listing, following cursors; returns (tools, pages, next free id)."""
    cursor: str | None = None
    tools = pages = 0
    while True:
        params = {"cursor": cursor} if cursor is not None else {}
        result = server.request(next_id, "tools/list", params)
        next_id += 1
        pages += 1
        tools += len(result.get("tools", []))
        cursor = result.get("nextCursor")
        if not cursor:
            return tools, pages, next_id
        if pages > 100_000:
            raise loadgen_stdio.BadResponse("tools/list cursors never end")


def _run_list(impl: Impl, sizes: Sizes, paged: bool) -> dict[str, Any]:
    argv = _argv(impl, *_list_options(paged)(sizes))
    listings = sizes.list_listings

    def call(fd: int) -> dict[str, Any]:
        with StdioServer(argv, stderr=fd) as server:
            server.initialize()
            next_id = 1
            for _ in range(3):  # warm-up
                tools, pages, next_id = _listing(server, next_id)
            # Every server lists echo, sleep and stats besides the fillers.
            if tools < sizes.list_tools:
                raise loadgen_stdio.BadResponse(
                    f"listed {tools} tools, wanted >= {sizes.list_tools}"
                )
            if paged and pages < 2:
                raise loadgen_stdio.BadResponse("asked for pages but got one page")
            latencies: list[float] = []
            cpu0 = server.cpu()
            gen0 = time.process_time()
            for _ in range(listings):
                start = time.perf_counter()
                _, pages, next_id = _listing(server, next_id)
                latencies.append((time.perf_counter() - start) * 1000.0)
            gen1 = time.process_time()
            cpu1 = server.cpu()
            cpu = (cpu1 - cpu0).total if cpu0 is not None and cpu1 is not None else None
            return {
                "mode": "list",
                "argv": argv,
                "listings": listings,
                "tools": tools,
                "pages": pages,
                "listing_ms": statistics.median(latencies),
                "listing_ms_samples": latencies,
                "server_cpu_ms_per_listing": cpu * 1000.0 / listings if cpu is not None else None,
                "gen_cpu_ms_per_listing": (gen1 - gen0) * 1000.0 / listings,
            }

    raw = _guard(call)
    metrics = _pick(
        raw,
        listing_ms="listing_ms",
        server_cpu_ms="server_cpu_ms_per_listing",
        pages="pages",
        tools="tools",
        gen_cpu_ms="gen_cpu_ms_per_listing",
    )
    return {"metrics": metrics, "raw": raw}


def run_storm(impl: Impl, sizes: Sizes) -> dict[str, Any]:
    raw = _guard(
        lambda fd: storm.cancel_storm(
            _argv(impl), sizes.storm_calls, in_flight=sizes.storm_in_flight, stderr=fd
        )
    )
    metrics = _pick(
        raw,
        leaked="leaked",
        duplicates="duplicate_replies",
        replies_to_cancelled="replies_to_cancelled",
        handlers_started="server_stats.started",
        calls_per_s="calls_per_s",
        server_cpu_us="server_cpu_us_per_call",
    )
    return {"metrics": metrics, "raw": raw}


# ----------------------------------------------------------------------------- HTTP


def _http_options(json_response: bool) -> Callable[[Sizes], tuple[str, ...]]:
    return lambda sizes: ("--json-response",) if json_response else ()


@contextlib.contextmanager
def _http_target(impl: Impl, options: tuple[str, ...]) -> Iterator[tuple[str, int | None]]:
    if impl.url is not None:
        yield impl.url, None
        return
    with http_server(_argv(impl, *options)) as server:
        yield server.url, server.pid


def _run_http(
    impl: Impl, sizes: Sizes, json_response: bool, protocol_version: str | None = None
) -> dict[str, Any]:
    options = _http_options(json_response)(sizes)
    version = protocol_version or DEFAULT_PROTOCOL_VERSION

    def call(fd: int) -> dict[str, Any]:
        with _http_target(impl, options) as (url, pid):
            try:
                return loadgen_http.run_calls(
                    url,
                    sizes.http_calls,
                    sessions=sizes.http_sessions,
                    warmup=max(1, sizes.warmup // sizes.http_sessions),
                    pid=pid,
                    protocol_version=version,
                )
            except BadResponse as exc:
                if protocol_version is not None and "HTTP 400" in str(exc):
                    raise Skip(f"serves no {protocol_version} requests") from None
                raise

    raw = _guard(call)
    metrics = _pick(
        raw,
        calls_per_s="calls_per_s",
        p50_ms="latency_us.p50",
        p99_ms="latency_us.p99",
        server_cpu_us="server_cpu_us_per_call",
        gen_cpu_us="gen_cpu_us_per_call",
    )
    for key in ("p50_ms", "p99_ms"):
        metrics[key] = metrics[key] / 1000.0 if metrics[key] is not None else None
    answers = raw.get("answers", {})
    metrics["answered"] = "/".join(kind for kind in ("sse", "json") if answers.get(kind))
    return {"metrics": metrics, "raw": raw}


def run_idle(impl: Impl, sizes: Sizes) -> dict[str, Any]:
    def call(fd: int) -> dict[str, Any]:
        with _http_target(impl, ()) as (url, pid):
            if pid is None:
                raise Skip("needs the server's pid (a server the suite starts)")
            return loadgen_http.idle_sessions(url, sizes.idle_sessions, pid=pid)

    raw = _guard(call)
    if raw.get("stateless"):
        # No session id came back (the TypeScript SDK v2's createMcpHandler): nothing is
        # kept between requests, so there is no per-session memory to measure.
        raise Skip("keeps no sessions (serves 2025 requests statelessly)")
    metrics = _pick(raw, kib_per_session="kib_per_session", sessions_per_s="sessions_per_s")
    return {"metrics": metrics, "raw": raw}


# ----------------------------------------------------------------------------- codec


def run_codec(sizes: Sizes) -> dict[str, dict[str, Any]]:
    """One codec run in this process; returns a run per pseudo-implementation
    ("trimcp" and, when importable, "sdk")."""
    from benchmarks import codec

    raw = codec.run(sizes.codec_count, sizes.codec_repeats)
    out: dict[str, dict[str, Any]] = {}
    for impl in raw["total_us"]:
        cases = {case: values[impl]["median"] for case, values in raw["cases"].items()}
        metrics = {
            "call_us": cases["call-request-in"] + cases["call-result-out"],
            "list50_out_us": cases["list50-result-out"],
            "list50_in_us": cases["list50-result-in"],
            "call_result_in_us": cases["call-result-in"],
        }
        out[impl] = {"metrics": metrics, "raw": {"cases": cases, "count": raw["count"]}}
    return out


def _codec_unused(impl: Impl, sizes: Sizes) -> dict[str, Any]:
    raise Skip("the codec workload runs in-process")  # the runner calls run_codec instead


_SEQ_COLUMNS = (
    Column("server_cpu_us", "server CPU", "µs/call", "lower"),
    Column("p50_us", "p50", "µs", "lower"),
    Column("p99_us", "p99", "µs", "lower"),
    Column("calls_per_s", "calls/s", "calls/s", "higher"),
    Column("gen_cpu_us", "generator CPU", "µs/call"),
)

_PIPE_COLUMNS = (
    Column("calls_per_s", "calls/s", "calls/s", "higher"),
    Column("p50_ms", "p50", "ms", "lower", 2),
    Column("p99_ms", "p99", "ms", "lower", 2),
    Column("server_cpu_us", "server CPU", "µs/call", "lower"),
    Column("gen_cpu_us", "generator CPU", "µs/call"),
)

_HTTP_COLUMNS = (
    Column("calls_per_s", "calls/s", "calls/s", "higher"),
    Column("p50_ms", "p50", "ms", "lower", 2),
    Column("p99_ms", "p99", "ms", "lower", 2),
    Column("server_cpu_us", "server CPU", "µs/call", "lower"),
    Column("gen_cpu_us", "generator CPU", "µs/call"),
    Column("answered", "answered", ""),
)

WORKLOADS: dict[str, Workload] = {
    w.name: w
    for w in (
        Workload("seq", "stdio, sequential tools/call", _SEQ_COLUMNS, run_seq, "any"),
        Workload("pipe", "stdio, 100 calls in flight", _PIPE_COLUMNS, run_pipe, "any"),
        Workload(
            "seq-2026",
            "stdio 2026-07-28, sequential tools/call (no initialize)",
            _SEQ_COLUMNS,
            lambda impl, sizes: run_seq(impl, sizes, MODERN),
            "any",
        ),
        Workload(
            "pipe-2026",
            "stdio 2026-07-28, 100 calls in flight (no initialize)",
            _PIPE_COLUMNS,
            lambda impl, sizes: run_pipe(impl, sizes, MODERN),
            "any",
        ),
        Workload(
            "http-sse",
            "Streamable HTTP, 16 sessions, SSE answers",
            _HTTP_COLUMNS,
            lambda impl, sizes: _run_http(impl, sizes, json_response=False),
            "http",
            _http_options(False),
        ),
        Workload(
            "http-2026",
            "Streamable HTTP 2026-07-28, 16 clients, stateless (no session, no initialize)",
            _HTTP_COLUMNS,
            lambda impl, sizes: _run_http(
                impl, sizes, json_response=False, protocol_version=MODERN
            ),
            "http",
            _http_options(False),
        ),
        Workload(
            "http-json",
            "Streamable HTTP, 16 sessions, JSON answers",
            _HTTP_COLUMNS,
            lambda impl, sizes: _run_http(impl, sizes, json_response=True),
            "http-spawned",
            _http_options(True),
        ),
        Workload(
            "cold",
            "cold start over stdio (spawn -> initialize answer)",
            (
                Column("init_ms", "initialize", "ms", "lower", 1),
                Column("first_call_ms", "first call", "ms", "lower", 1),
            ),
            run_cold,
            "any",
        ),
        Workload(
            "http-idle",
            "memory per idle Streamable HTTP session",
            (
                Column("kib_per_session", "memory", "KiB/session", "lower", 1),
                Column("sessions_per_s", "sessions opened", "/s", "higher"),
            ),
            run_idle,
            "http-spawned",
            lambda sizes: (),
        ),
        Workload(
            "codec",
            "codec, µs per message (in-process)",
            (
                Column("call_us", "tools/call in+out", "µs", "lower", 1),
                Column("list50_out_us", "tools/list(50) out", "µs", "lower", 1),
                Column("list50_in_us", "tools/list(50) in", "µs", "lower", 1),
                Column("call_result_in_us", "call result in", "µs", "lower", 1),
            ),
            _codec_unused,
            "codec",
        ),
        Workload(
            "list",
            "tools/list with 500 tools, one page",
            (
                Column("listing_ms", "full listing", "ms", "lower", 2),
                Column("server_cpu_ms", "server CPU", "ms/listing", "lower", 2),
                Column("pages", "pages", ""),
                Column("tools", "tools", ""),
            ),
            lambda impl, sizes: _run_list(impl, sizes, paged=False),
            "conventional",
            _list_options(False),
        ),
        Workload(
            "list-paged",
            "tools/list with 500 tools, 50 per page",
            (
                Column("listing_ms", "full listing", "ms", "lower", 2),
                Column("server_cpu_ms", "server CPU", "ms/listing", "lower", 2),
                Column("pages", "pages", ""),
                Column("tools", "tools", ""),
            ),
            lambda impl, sizes: _run_list(impl, sizes, paged=True),
            "conventional",
            _list_options(True),
        ),
        Workload(
            "storm",
            "cancellation storm (every call cancelled at a random point)",
            (
                Column("leaked", "leaked handlers", "", "lower"),
                Column("duplicates", "duplicate replies", "", "lower"),
                Column("replies_to_cancelled", "replies to cancelled", ""),
                Column("handlers_started", "handlers started", ""),
                Column("calls_per_s", "calls/s", "calls/s", "higher"),
                Column("server_cpu_us", "server CPU", "µs/call", "lower"),
            ),
            run_storm,
            "conventional",
        ),
    )
}
