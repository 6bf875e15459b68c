"""``python -m benchmarks``: every workload against every implementation, in one command.

Runs are interleaved: for each workload, repetition ``r`` runs the implementations in an
order rotated by ``r`` (A B C, B C A, ...), so slow drift of the machine spreads over all of
them. Before each run the suite measures how many cores are busy with other work and
warns when that exceeds ``--max-busy``. Results go to ``--out`` (default outside the
checkout: :func:`default_out`) as JSON, markdown and (with matplotlib) PNG; a progress line
per run goes to stderr; the overview table to stdout.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import os
import platform
import sys
import time
from collections.abc import Sequence
from dataclasses import asdict
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TextIO

from benchmarks.suite import report
from benchmarks.suite.impls import Impl, builtin_impls, checkout_impl, command_impl, url_impl
from benchmarks.suite.procs import busy_cores, load_average
from benchmarks.suite.workloads import (
    FULL,
    QUICK,
    WORKLOADS,
    RunFailed,
    Sizes,
    Skip,
    Workload,
    run_codec,
)


def default_out() -> Path:
    """Where results go without ``--out``: ``$XDG_CACHE_HOME/trimcp/bench`` (``~/.cache``
    when unset), outside the checkout, so that a run leaves no untracked files in it. The
    committed reports in ``benchmarks/results/`` are written there with ``--out``."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "trimcp" / "bench"


DEFAULT_MAX_BUSY = 0.5


def _csv(value: str) -> list[str]:
    return [part.strip() for part in value.split(",") if part.strip()]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks",
        description="Benchmark trimcp against the official MCP SDKs (Python; TypeScript v1 and "
        "v2) and FastMCP.",
        epilog=f"workloads: {', '.join(WORKLOADS)}; implementations: {', '.join(builtin_impls())}",
    )
    parser.add_argument("--quick", action="store_true", help="small counts (about 2 minutes)")
    parser.add_argument("--only", type=_csv, metavar="WORKLOAD,...", help="run only these")
    parser.add_argument("--impl", type=_csv, metavar="NAME,...", help="built-ins to run")
    parser.add_argument(
        "--server-cmd",
        action="append",
        default=[],
        metavar="NAME=CMD",
        help="add a stdio server command with an echo(text) tool (stdio echo workloads)",
    )
    parser.add_argument(
        "--server-url",
        action="append",
        default=[],
        metavar="NAME=URL",
        help="add a running Streamable HTTP server with an echo(text) tool",
    )
    parser.add_argument(
        "--trimcp-from",
        action="append",
        default=[],
        metavar="NAME=DIR",
        help="add trimcp's low-level server with trimcp imported from another checkout DIR "
        "(A/B runs: every workload, interleaved with the rest)",
    )
    parser.add_argument("--reps", type=int, help="repetitions per implementation")
    parser.add_argument(
        "--scale", type=float, default=1.0, help="multiply every call/message count"
    )
    parser.add_argument(
        "--out",
        type=Path,
        default=None,
        metavar="DIR",
        help="where the results go (default $XDG_CACHE_HOME/trimcp/bench, i.e. "
        "~/.cache/trimcp/bench: outside the checkout); the path is printed at the end",
    )
    parser.add_argument(
        "--max-busy",
        type=float,
        default=DEFAULT_MAX_BUSY,
        help="warn when more cores than this are busy before a run",
    )
    parser.add_argument("--no-idle-check", action="store_true", help="skip the busy-core check")
    parser.add_argument("--list", action="store_true", help="list workloads and implementations")
    return parser


def parse_args(argv: Sequence[str]) -> argparse.Namespace:
    """Parse and validate; exits with status 2 (argparse) on a bad option or name."""
    parser = build_parser()
    opts = parser.parse_args(list(argv))
    if opts.only:
        unknown = [name for name in opts.only if name not in WORKLOADS]
        if unknown:
            parser.error(
                f"unknown workload(s): {', '.join(unknown)} (known: {', '.join(WORKLOADS)})"
            )
    try:
        extra = [command_impl(s) for s in opts.server_cmd] + [url_impl(s) for s in opts.server_url]
        extra += [checkout_impl(s) for s in opts.trimcp_from]
    except ValueError as exc:
        parser.error(str(exc))
    builtins = builtin_impls()
    names = [*builtins, *(impl.name for impl in extra)]
    if len(set(names)) != len(names):
        parser.error("implementation names must be unique (a custom name repeats another)")
    if opts.impl:
        unknown = [name for name in opts.impl if name not in names]
        if unknown:
            parser.error(
                f"unknown implementation(s): {', '.join(unknown)} (known: {', '.join(names)})"
            )
    if opts.reps is not None and opts.reps < 1:
        parser.error("--reps must be at least 1")
    if not opts.scale > 0:
        parser.error("--scale must be positive")
    selected = [builtins[n] for n in builtins if not opts.impl or n in opts.impl]
    selected += extra  # asked for by name on the command line: always run
    opts.impls = selected
    opts.workloads = [WORKLOADS[n] for n in (opts.only or WORKLOADS)]
    sizes = (QUICK if opts.quick else FULL).scaled(opts.scale)
    if opts.reps is not None:
        sizes = Sizes(**{**asdict(sizes), "reps": opts.reps})
    opts.sizes = sizes
    if opts.out is None:
        opts.out = default_out()
    return opts


def participates(impl: Impl, workload: Workload) -> str | None:
    """None when ``impl`` takes part in ``workload``, else why not."""
    scope = workload.scope
    if scope == "any":
        return None if impl.spawns else "needs a stdio server command"
    if scope == "conventional":
        return None if impl.conventional else "needs a benchmark server (stats/sleep/--tools)"
    if scope == "http":
        return None if impl.conventional or impl.url else "needs an HTTP-capable server"
    if scope == "http-spawned":
        return None if impl.conventional else "needs an HTTP server the suite starts"
    return "in-process workload"


def _check_options(workload: Workload, sizes: Sizes) -> tuple[str, ...]:
    """The options that decide whether a conventional server can run ``workload``: by
    the convention, only HTTP and pagination support may be missing (``--tools`` and
    ``--json-response`` always work), so at most three ``--check`` runs per server."""
    options = workload.options(sizes)
    relevant: tuple[str, ...] = ("--http", "0") if workload.scope.startswith("http") else ()
    if "--page-size" in options:
        at = options.index("--page-size")
        relevant += options[at : at + 2]
    return relevant


class Progress:
    """One line per run on stderr: what runs, then its headline figure and duration."""

    def __init__(self, total: int, stream: TextIO = sys.stderr) -> None:
        self.total = total
        self.done = 0
        self.stream = stream

    def start(self, workload: str, impl: str, rep: int, reps: int) -> float:
        self.done += 1
        self.stream.write(
            f"[{self.done:>3}/{self.total}] {workload:<10} {impl:<14} rep {rep + 1}/{reps} ... "
        )
        self.stream.flush()
        return time.monotonic()

    def finish(self, started: float, outcome: str) -> None:
        self.stream.write(f"{outcome} ({time.monotonic() - started:.1f}s)\n")
        self.stream.flush()

    def note(self, text: str) -> None:
        self.stream.write(text + "\n")
        self.stream.flush()


def _versions() -> dict[str, str]:
    out = {}
    for dist in ("trimcp", "mcp", "fastmcp", "pydantic", "cattrs", "trio", "anyio"):
        try:
            out[dist] = importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            continue
    return out


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _entry() -> dict[str, Any]:
    return {"runs": [], "errors": [], "skipped": None, "summary": None}


def _headline(workload: Workload, result: dict[str, Any]) -> str:
    col = workload.primary
    return f"{report.fmt_number(result['metrics'].get(col.key), col.digits)} {col.unit}".strip()


def run_suite(opts: argparse.Namespace, progress: Progress | None = None) -> dict[str, Any]:
    """Run every selected workload; returns the results document (see ``report``)."""
    sizes: Sizes = opts.sizes
    started = time.monotonic()
    results: dict[str, Any] = {
        "meta": {
            "mode": "quick" if opts.quick else "full",
            "started": datetime.now(UTC).isoformat(timespec="seconds"),
            "machine": _cpu_model(),
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
            "versions": _versions(),
            "sizes": asdict(sizes),
            "load_average_1m": load_average(),
            "impls": {impl.name: impl.note for impl in opts.impls},
        },
        "workloads": [],
    }
    plan: list[tuple[Workload, list[Impl]]] = []
    for workload in opts.workloads:
        if workload.scope == "codec":
            plan.append((workload, []))
            continue
        plan.append((workload, [i for i in opts.impls if participates(i, workload) is None]))
    total = sum(len(impls) * sizes.reps if impls else sizes.reps for _, impls in plan)
    progress = progress or Progress(total)
    busy_seen: list[float] = []
    warnings = 0

    def idle_check() -> float | None:
        nonlocal warnings
        if opts.no_idle_check:
            return None
        busy = busy_cores()
        if busy is not None:
            busy_seen.append(busy)
            if busy > opts.max_busy:
                warnings += 1
                progress.note(f"      warning: {busy:.2f} cores busy with other work")
        return busy

    for workload, impls in plan:
        doc: dict[str, Any] = {
            "name": workload.name,
            "title": workload.title,
            "columns": [asdict(c) for c in workload.columns],
            "impls": {},
        }
        results["workloads"].append(doc)
        entries: dict[str, dict[str, Any]] = doc["impls"]
        if workload.scope == "codec":
            for rep in range(sizes.reps):
                busy = idle_check()
                t0 = progress.start(workload.name, "trimcp+sdk", rep, sizes.reps)
                runs = run_codec(sizes)
                for name, run in runs.items():
                    entries.setdefault(name, _entry())["runs"].append(
                        {"rep": rep, "busy_cores": busy, **run}
                    )
                progress.finish(t0, _headline(workload, runs["trimcp"]) + " (trimcp)")
        else:
            for impl in opts.impls:
                entries[impl.name] = _entry()
                reason = participates(impl, workload) or impl.unavailable(
                    *_check_options(workload, sizes)
                )
                if reason:
                    entries[impl.name]["skipped"] = reason
            for rep in range(sizes.reps):
                shift = rep % len(impls) if impls else 0
                for impl in impls[shift:] + impls[:shift]:
                    entry = entries[impl.name]
                    if entry["skipped"]:
                        progress.done += 1
                        continue
                    busy = idle_check()
                    t0 = progress.start(workload.name, impl.name, rep, sizes.reps)
                    try:
                        run = workload.run(impl, sizes)
                    except Skip as exc:
                        entry["skipped"] = str(exc)
                        progress.finish(t0, f"skipped: {exc}")
                        continue
                    except RunFailed as exc:
                        entry["errors"].append(str(exc))
                        progress.finish(t0, f"FAILED: {str(exc).splitlines()[0]}")
                        continue
                    entry["runs"].append({"rep": rep, "busy_cores": busy, **run})
                    progress.finish(t0, _headline(workload, run))
        keys = [c.key for c in workload.columns]
        for entry in entries.values():
            if entry["runs"]:
                entry["summary"] = report.summarize_runs(entry["runs"], keys)
        report.add_advantages(doc)
    meta = results["meta"]
    for impl in opts.impls:  # the TypeScript SDK and its Node, once installed
        meta["versions"].update(impl.versions())
    meta["elapsed_s"] = time.monotonic() - started
    busy_summary = report.summarize(busy_seen)
    meta["busy_median"] = busy_summary["median"] if busy_summary else None
    meta["busy_max"] = busy_summary["max"] if busy_summary else None
    meta["busy_warnings"] = warnings
    return results


def write_outputs(results: dict[str, Any], out: Path) -> dict[str, Path | str]:
    """JSON, markdown and PNG under ``out``; returns the paths (or why the PNG is missing)."""
    out.mkdir(parents=True, exist_ok=True)
    stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
    base = out / f"bench-{results['meta']['mode']}-{stamp}"
    paths: dict[str, Path | str] = {
        "json": base.with_suffix(".json"),
        "markdown": base.with_suffix(".md"),
    }
    report.write_json(results, base.with_suffix(".json"))
    base.with_suffix(".md").write_text(report.render_markdown(results), encoding="utf-8")
    png = base.with_suffix(".png")
    why_not = report.render_png(results, png)
    paths["png"] = png if why_not is None else f"no chart: {why_not}"
    return paths


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``python -m benchmarks`` and ``trimcp bench``.

    Returns 0 when every run that was not skipped succeeded, 1 otherwise.
    """
    opts = parse_args(sys.argv[1:] if argv is None else argv)
    if opts.list:
        for workload in WORKLOADS.values():
            print(f"workload {workload.name:<11} {workload.title}")
        for impl in opts.impls:
            where = impl.url or " ".join(impl.argv or ())
            print(f"impl     {impl.name:<11} {impl.note or where}")
        return 0
    results = run_suite(opts)
    paths = write_outputs(results, opts.out)
    print(report.overview_table(results))
    print(f"results written to {opts.out}:", file=sys.stderr)
    for kind, path in paths.items():
        print(f"  {kind}: {path}", file=sys.stderr)
    failed = any(
        entry["errors"] for workload in results["workloads"] for entry in workload["impls"].values()
    )
    return 1 if failed else 0
