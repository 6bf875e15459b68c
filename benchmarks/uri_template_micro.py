"""Micro-benchmark of trimcp.server.uri_template: typical calls and adversarial URIs.

Prints the best of several runs: microseconds per call for parsing, expanding and matching
ordinary MCP resource templates, then milliseconds for each adversarial input of
``tests/server_units/test_uri_template_cost.py`` (64 KiB URIs, 50,000 repeated
separators), the inputs that make a backtracking regex matcher take seconds or worse.

Run from the repository root: .venv/bin/python -m benchmarks.uri_template_micro
"""

from __future__ import annotations

import time
from collections.abc import Callable
from functools import partial

from tests.server_units.test_uri_template_cost import ADVERSARIAL
from trimcp.server.uri_template import UriTemplate

REPEATS = 7


def _best_seconds(run: Callable[[], object], calls: int) -> float:
    best = float("inf")
    for _ in range(REPEATS):
        start = time.perf_counter()
        for _ in range(calls):
            run()
        best = min(best, time.perf_counter() - start)
    return best / calls


def typical() -> None:
    cases = [
        ("weather://{city}/now", "weather://paris/now", {"city": "paris"}),
        ("file:///{+path}", "file:///home/me/notes.txt", {"path": "home/me/notes.txt"}),
        (
            "db://{table}/rows{?limit,offset}",
            "db://users/rows?limit=10&offset=20",
            {"table": "users", "limit": "10", "offset": "20"},
        ),
        ("repo://{owner}/{name}{/path*}", "repo://a/b/src/x.py", {"owner": "a", "name": "b"}),
    ]
    print("typical calls (microseconds per call)")
    print(f"  {'template':36} {'parse':>7} {'expand':>7} {'match':>7}")
    for text, uri, values in cases:
        template = UriTemplate(text)
        parse = _best_seconds(partial(UriTemplate, text), 2000)
        expand = _best_seconds(partial(template.expand, values), 2000)
        match = _best_seconds(partial(template.match, uri), 2000)
        assert template.match(uri) is not None
        print(f"  {text:36} {parse * 1e6:7.2f} {expand * 1e6:7.2f} {match * 1e6:7.2f}")


def adversarial() -> None:
    print("adversarial inputs (milliseconds per match, best of runs)")
    worst = 0.0
    for text, uri, matches in ADVERSARIAL:
        template = UriTemplate(text)
        assert (template.match(uri) is not None) == matches
        seconds = _best_seconds(partial(template.match, uri), 5)
        worst = max(worst, seconds)
        label = text if len(text) <= 40 else text[:37] + "..."
        print(f"  {label:42} {len(uri):6d} chars {seconds * 1e3:8.3f} ms")
    print(f"worst: {worst * 1e3:.3f} ms")


if __name__ == "__main__":
    typical()
    adversarial()
