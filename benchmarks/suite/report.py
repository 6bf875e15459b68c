"""Aggregation and rendering: medians with min/max per metric, the trimcp advantage, the
markdown tables, the JSON file and (when matplotlib is importable) a PNG chart.

The *trimcp advantage* of an implementation on a metric is how many times better trimcp
is: ``theirs / ours`` for lower-is-better metrics (CPU, latency, memory), ``ours /
theirs`` for higher-is-better ones (calls/s). Above 1 trimcp is ahead, below 1 behind.
It is None when either side is missing or zero.
"""

from __future__ import annotations

import json
import math
import statistics
from collections.abc import Sequence
from pathlib import Path
from typing import Any

BASELINE = "trimcp"


def summarize(values: Sequence[Any]) -> dict[str, float] | None:
    """Median, min, max and count of the numbers in ``values`` (None when there are none)."""
    numbers = [
        float(v)
        for v in values
        if isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v)
    ]
    if not numbers:
        return None
    return {
        "median": statistics.median(numbers),
        "min": min(numbers),
        "max": max(numbers),
        "n": len(numbers),
    }


def summarize_runs(runs: Sequence[dict[str, Any]], keys: Sequence[str]) -> dict[str, Any]:
    """Per metric key: a :func:`summarize` of the runs' numbers, or for text metrics the
    distinct values joined with ``/``."""
    out: dict[str, Any] = {}
    for key in keys:
        values = [run["metrics"].get(key) for run in runs]
        texts = [v for v in values if isinstance(v, str) and v]
        if texts:
            out[key] = "/".join(dict.fromkeys(texts))
        else:
            out[key] = summarize(values)
    return out


def advantage(better: str, ours: float | None, theirs: float | None) -> float | None:
    """How many times better ``ours`` (trimcp) is than ``theirs``; see the module doc."""
    if ours is None or theirs is None or ours == 0 or theirs == 0 or not better:
        return None
    return theirs / ours if better == "lower" else ours / theirs


def _median(summary: Any) -> float | None:
    return summary["median"] if isinstance(summary, dict) else None


def add_advantages(workload: dict[str, Any]) -> None:
    """Fill ``advantage`` (per metric) for every implementation of one workload result,
    against :data:`BASELINE` (or the first implementation when trimcp did not run)."""
    impls: dict[str, Any] = workload["impls"]
    ran = [name for name, entry in impls.items() if entry.get("summary")]
    if not ran:
        return
    base = BASELINE if BASELINE in ran else ran[0]
    workload["baseline"] = base
    base_summary = impls[base]["summary"]
    for entry in impls.values():
        summary = entry.get("summary") or {}
        entry["advantage"] = {
            col["key"]: advantage(
                col["better"],
                _median(base_summary.get(col["key"])),
                _median(summary.get(col["key"])),
            )
            for col in workload["columns"]
        }


# ----------------------------------------------------------------------------- text


def fmt_number(value: float | None, digits: int = 0) -> str:
    """A number for a table: thousands separators, ``digits`` decimals, "-" for None.

    Small values keep a few significant digits even when ``digits`` is 0.
    """
    if value is None:
        return "-"
    if float(value).is_integer() and digits == 0:
        return f"{value:,.0f}"
    if digits == 0 and value != 0 and abs(value) < 10:
        digits = 2 if abs(value) < 1 else 1
    return f"{value:,.{digits}f}"


def fmt_ratio(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value:.2f}x" if value < 10 else f"{value:.1f}x"


def fmt_summary(summary: Any, digits: int, *, spread: bool) -> str:
    if isinstance(summary, str):
        return summary
    if not isinstance(summary, dict):
        return "-"
    text = fmt_number(summary["median"], digits)
    if spread and summary["n"] > 1 and summary["min"] != summary["max"]:
        text += f" ({fmt_number(summary['min'], digits)}-{fmt_number(summary['max'], digits)})"
    return text


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def overview_table(results: dict[str, Any]) -> str:
    """One row per workload: its headline metric for each implementation, with the
    trimcp advantage in parentheses."""
    names: list[str] = []
    for workload in results["workloads"]:
        for name in workload["impls"]:
            if name not in names:
                names.append(name)
    header = ["workload", "headline metric", *names]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for workload in results["workloads"]:
        col = workload["columns"][0]
        qualifiers = [q for q in (col["unit"], col["better"] and f"{col['better']} is better") if q]
        metric = f"{col['label']} ({', '.join(qualifiers)})" if qualifiers else col["label"]
        row = [workload["title"], metric]
        for name in names:
            entry = workload["impls"].get(name)
            if entry is None:
                row.append("")
                continue
            summary = (entry.get("summary") or {}).get(col["key"])
            if summary is None:
                row.append("skipped" if entry.get("skipped") else "failed")
                continue
            text = fmt_number(_median(summary), col["digits"])
            ratio = (entry.get("advantage") or {}).get(col["key"])
            if name != workload.get("baseline") and ratio is not None:
                text += f" ({fmt_ratio(ratio)})"
            row.append(text)
        lines.append("| " + " | ".join(_cell(c) for c in row) + " |")
    return "\n".join(lines)


def workload_table(workload: dict[str, Any]) -> str:
    """All metrics of one workload: median (min-max) per implementation, the trimcp
    advantage on the headline metric, and skip/failure notes below the table."""
    columns = workload["columns"]
    header = ["implementation"]
    header += [f"{c['label']} ({c['unit']})" if c["unit"] else c["label"] for c in columns]
    header.append("trimcp advantage")
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    notes: list[str] = []
    for name, entry in workload["impls"].items():
        if entry.get("skipped"):
            notes.append(f"- {name}: skipped: {entry['skipped']}")
            continue
        for error in entry.get("errors", []):
            notes.append(f"- {name}: run failed: {error.splitlines()[0] if error else '?'}")
        summary = entry.get("summary")
        if not summary:
            continue
        row = [name]
        for i, col in enumerate(columns):
            row.append(fmt_summary(summary.get(col["key"]), col["digits"], spread=i == 0))
        ratio = (entry.get("advantage") or {}).get(columns[0]["key"])
        row.append("baseline" if name == workload.get("baseline") else fmt_ratio(ratio))
        lines.append("| " + " | ".join(_cell(c) for c in row) + " |")
    if notes:
        lines += ["", *notes]
    return "\n".join(lines)


def render_markdown(results: dict[str, Any]) -> str:
    meta = results["meta"]
    out = [
        f"# trimcp benchmark results ({meta['mode']} run)",
        "",
        f"- when: {meta['started']}; took {meta.get('elapsed_s', 0):.0f} s",
        f"- machine: {meta['machine']}; {meta['cpus']} CPUs; Python {meta['python']}",
        f"- versions: {', '.join(f'{k} {v}' for k, v in meta['versions'].items())}",
        f"- repetitions: {meta['sizes']['reps']}, implementations interleaved; "
        "medians, (min-max) on the headline metric",
        f"- busy cores before runs (other load): median {fmt_number(meta.get('busy_median'), 2)}, "
        f"max {fmt_number(meta.get('busy_max'), 2)}"
        + (
            f" — WARNING: {meta['busy_warnings']} runs started on a busy machine"
            if meta.get("busy_warnings")
            else ""
        ),
        "- trimcp advantage: how many times better trimcp is on that metric (>1: ahead)",
        "",
        "## Overview",
        "",
        overview_table(results),
    ]
    for workload in results["workloads"]:
        out += ["", f"## {workload['title']} (`{workload['name']}`)", "", workload_table(workload)]
    return "\n".join(out) + "\n"


# ----------------------------------------------------------------------------- files


def write_json(results: dict[str, Any], path: Path) -> None:
    path.write_text(json.dumps(results, indent=1, default=str) + "\n", encoding="utf-8")


def render_png(results: dict[str, Any], path: Path) -> str | None:
    """Bar charts of each workload's headline metric (median, min-max whiskers).

    Returns None when written, else why not (matplotlib missing, nothing to plot).
    """
    try:
        import matplotlib  # type: ignore[import-not-found,unused-ignore]

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt  # type: ignore[import-not-found,unused-ignore]
    except ImportError:
        return "matplotlib is not installed (pip install 'trimcp[bench]')"
    plotted = [
        w
        for w in results["workloads"]
        if any((e.get("summary") or {}).get(w["columns"][0]["key"]) for e in w["impls"].values())
    ]
    if not plotted:
        return "nothing to plot"
    cols = 2
    rows = math.ceil(len(plotted) / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(12, 3.2 * rows), squeeze=False)
    for ax, workload in zip(axes.flat, plotted, strict=False):
        col = workload["columns"][0]
        names, medians, lows, highs = [], [], [], []
        for name, entry in workload["impls"].items():
            summary = (entry.get("summary") or {}).get(col["key"])
            if isinstance(summary, dict):
                names.append(name)
                medians.append(summary["median"])
                lows.append(summary["median"] - summary["min"])
                highs.append(summary["max"] - summary["median"])
        colors = ["tab:green" if n.startswith(BASELINE) else "tab:gray" for n in names]
        ax.barh(names, medians, xerr=[lows, highs], color=colors)
        ax.invert_yaxis()
        ax.set_title(f"{workload['title']}", fontsize=9)
        ax.set_xlabel(f"{col['label']} ({col['unit']}; {col['better']} is better)", fontsize=8)
        ax.tick_params(labelsize=8)
    for ax in list(axes.flat)[len(plotted) :]:
        ax.axis("off")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return None
