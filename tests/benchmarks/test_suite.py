"""Tests for the benchmark suite: options, aggregation (medians, advantages), table
rendering, the HTTP generator's parsers, the storm's tally, and a smoke run of
``--quick`` against trimcp alone with tiny counts. No timing assertions."""

from __future__ import annotations

import json
import socket
import sys
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:
    # `benchmarks` is a top-level directory, not part of the installed package.
    sys.path.insert(0, str(REPO))

from benchmarks import loadgen_http as lh  # noqa: E402
from benchmarks.loadgen_stdio import BadResponse, ServerExited  # noqa: E402
from benchmarks.suite import report, runner  # noqa: E402
from benchmarks.suite.impls import (  # noqa: E402
    Impl,
    checkout_impl,
    command_impl,
    parse_named,
    url_impl,
)
from benchmarks.suite.procs import busy_cores, free_port  # noqa: E402
from benchmarks.suite.storm import _Tally  # noqa: E402
from benchmarks.suite.workloads import FULL, QUICK, WORKLOADS, RunFailed, Skip  # noqa: E402

# ----------------------------------------------------------------------------- options


def test_defaults_run_everything_at_full_size() -> None:
    opts = runner.parse_args([])
    assert [w.name for w in opts.workloads] == list(WORKLOADS)
    assert [i.name for i in opts.impls][:4] == [
        "trimcp",
        "trimcp-app",
        "sdk-lowlevel",
        "sdk-highlevel",
    ]
    assert opts.sizes == FULL
    assert not opts.quick


def test_quick_only_impl_reps_and_scale() -> None:
    opts = runner.parse_args(
        ["--quick", "--only", "seq, storm", "--impl", "trimcp", "--reps", "4", "--scale", "0.5"]
    )
    assert [w.name for w in opts.workloads] == ["seq", "storm"]
    assert [i.name for i in opts.impls] == ["trimcp"]
    assert opts.sizes.reps == 4
    assert opts.sizes.seq_calls == round(QUICK.seq_calls * 0.5)
    # Structure is not scaled: in-flight counts, sessions, tools and page size stay.
    assert opts.sizes.pipe_in_flight == QUICK.pipe_in_flight
    assert opts.sizes.http_sessions == 16
    assert opts.sizes.list_tools == 500


def test_scaling_never_reaches_zero() -> None:
    tiny = QUICK.scaled(1e-9)
    assert tiny.seq_calls == tiny.storm_calls == tiny.codec_count == 1
    assert tiny.reps == QUICK.reps


def test_custom_servers_join_even_with_impl_filter() -> None:
    opts = runner.parse_args(
        [
            "--impl",
            "trimcp",
            "--server-cmd",
            "mine=python my_server.py --fast",
            "--server-url",
            "remote=http://127.0.0.1:9/mcp",
        ]
    )
    names = [i.name for i in opts.impls]
    assert names == ["trimcp", "mine", "remote"]
    mine = opts.impls[1]
    assert mine.argv == ("python", "my_server.py", "--fast")
    assert not mine.conventional
    assert opts.impls[2].url == "http://127.0.0.1:9/mcp"


@pytest.mark.parametrize(
    "argv",
    [
        ["--only", "nope"],
        ["--impl", "nope"],
        ["--server-cmd", "no-equals-sign"],
        ["--server-cmd", "bad name=cmd"],
        ["--server-url", "x=https://example.com/mcp"],
        ["--server-cmd", "trimcp=python other.py"],
        ["--reps", "0"],
        ["--scale", "0"],
    ],
)
def test_bad_options_exit_with_usage_error(
    argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as info:
        runner.parse_args(argv)
    assert info.value.code == 2
    assert "error" in capsys.readouterr().err


def test_parse_named_and_impl_builders() -> None:
    assert parse_named(" a = b c ", "CMD") == ("a", "b c")
    assert command_impl("x=srv --opt 'two words'").argv == ("srv", "--opt", "two words")
    assert url_impl("y=http://h:1/mcp").url == "http://h:1/mcp"
    with pytest.raises(ValueError, match="expected NAME=CMD"):
        command_impl("x=   ")


def test_participation_rules() -> None:
    conventional = Impl("c", ("srv",), conventional=True)
    plain = Impl("p", ("srv",))
    remote = Impl("u", url="http://127.0.0.1:1/mcp")
    expect = {
        "seq": (True, True, False),
        "list": (True, False, False),
        "storm": (True, False, False),
        "http-sse": (True, False, True),
        "http-json": (True, False, False),
        "http-idle": (True, False, False),
    }
    for name, wanted in expect.items():
        got = tuple(
            runner.participates(impl, WORKLOADS[name]) is None
            for impl in (conventional, plain, remote)
        )
        assert got == wanted, name


def test_unavailable_reports_missing_module_without_spawning() -> None:
    impl = Impl("x", ("/nonexistent/server",), conventional=True, requires="no_such_module_xyz")
    reason = impl.unavailable()
    assert reason is not None
    assert "no_such_module_xyz" in reason


def test_unavailable_reads_the_check_exit_status(tmp_path: Path) -> None:
    script = tmp_path / "srv.py"
    script.write_text(
        "import sys\n"
        "if '--tools' in sys.argv:\n"
        "    print('cannot do tools', file=sys.stderr); sys.exit(3)\n"
    )
    impl = Impl("x", (sys.executable, str(script)), conventional=True)
    assert impl.unavailable() is None
    assert impl.unavailable("--tools", "5") == "cannot do tools"


# ----------------------------------------------------------------------------- aggregation


def test_summarize_median_min_max_and_junk() -> None:
    assert report.summarize([3.0, 1.0, 2.0, 10.0]) == {
        "median": 2.5,
        "min": 1.0,
        "max": 10.0,
        "n": 4,
    }
    assert report.summarize([None, float("nan"), True, 5]) == {
        "median": 5.0,
        "min": 5.0,
        "max": 5.0,
        "n": 1,
    }
    assert report.summarize([]) is None
    assert report.summarize([None]) is None


def test_summarize_runs_numbers_and_text() -> None:
    runs = [
        {"metrics": {"calls_per_s": 10.0, "answered": "sse"}},
        {"metrics": {"calls_per_s": 30.0, "answered": "sse"}},
        {"metrics": {"calls_per_s": 20.0, "answered": "json"}},
    ]
    summary = report.summarize_runs(runs, ["calls_per_s", "answered", "missing"])
    assert summary["calls_per_s"]["median"] == 20.0
    assert summary["answered"] == "sse/json"
    assert summary["missing"] is None


@pytest.mark.parametrize(
    ("better", "ours", "theirs", "expected"),
    [
        ("lower", 100.0, 500.0, 5.0),  # they use 5x the CPU
        ("lower", 100.0, 50.0, 0.5),  # we use twice theirs
        ("higher", 3000.0, 1000.0, 3.0),  # we do 3x the calls/s
        ("higher", 1000.0, 3000.0, 1 / 3),
        ("", 1.0, 2.0, None),
        ("lower", 0.0, 2.0, None),
        ("lower", 1.0, None, None),
    ],
)
def test_advantage_direction(
    better: str, ours: float, theirs: float | None, expected: float | None
) -> None:
    got = report.advantage(better, ours, theirs)
    if expected is None:
        assert got is None
    else:
        assert got == pytest.approx(expected)


def _workload_doc(impls: dict[str, Any]) -> dict[str, Any]:
    return {
        "name": "pipe",
        "title": "stdio, 100 calls in flight",
        "columns": [
            {
                "key": "calls_per_s",
                "label": "calls/s",
                "unit": "calls/s",
                "better": "higher",
                "digits": 0,
            },
            {"key": "p99_ms", "label": "p99", "unit": "ms", "better": "lower", "digits": 2},
        ],
        "impls": impls,
    }


def _entry(values: list[tuple[float, float]]) -> dict[str, Any]:
    runs = [{"metrics": {"calls_per_s": c, "p99_ms": p}} for c, p in values]
    return {
        "runs": runs,
        "errors": [],
        "skipped": None,
        "summary": report.summarize_runs(runs, ["calls_per_s", "p99_ms"]),
    }


def _results(doc: dict[str, Any]) -> dict[str, Any]:
    return {
        "meta": {
            "mode": "quick",
            "started": "now",
            "elapsed_s": 1.0,
            "machine": "test cpu",
            "cpus": 2,
            "python": "3.11",
            "versions": {"trimcp": "0"},
            "sizes": {"reps": 2},
            "busy_median": 0.1,
            "busy_max": 0.2,
            "busy_warnings": 0,
        },
        "workloads": [doc],
    }


def test_advantages_and_tables() -> None:
    doc = _workload_doc(
        {
            "trimcp": _entry([(30000.0, 5.0), (32000.0, 7.0)]),
            "sdk-lowlevel": _entry([(1500.0, 80.0), (1000.0, 100.0)]),
            "fastmcp": {"runs": [], "errors": [], "skipped": "not installed", "summary": None},
            "broken": {
                "runs": [],
                "errors": ["RunFailed: boom\nstderr tail"],
                "skipped": None,
                "summary": None,
            },
        }
    )
    report.add_advantages(doc)
    assert doc["baseline"] == "trimcp"
    sdk = doc["impls"]["sdk-lowlevel"]["advantage"]
    assert sdk["calls_per_s"] == pytest.approx(31000 / 1250)
    assert sdk["p99_ms"] == pytest.approx(90 / 6)

    table = report.workload_table(doc)
    assert "| trimcp | 31,000 (30,000-32,000) | 6.00 | baseline |" in table
    assert "| sdk-lowlevel | 1,250 (1,000-1,500) | 90.00 | 24.8x |" in table
    assert "- fastmcp: skipped: not installed" in table
    assert "- broken: run failed: RunFailed: boom" in table

    overview = report.overview_table(_results(doc))
    assert "| stdio, 100 calls in flight | calls/s (calls/s, higher is better) |" in overview
    assert "1,250 (24.8x)" in overview
    assert "skipped" in overview
    assert "failed" in overview

    markdown = report.render_markdown(_results(doc))
    assert markdown.startswith("# trimcp benchmark results (quick run)")
    assert "## stdio, 100 calls in flight (`pipe`)" in markdown


def test_baseline_falls_back_to_first_implementation() -> None:
    doc = _workload_doc({"a": _entry([(10.0, 1.0)]), "b": _entry([(20.0, 1.0)])})
    report.add_advantages(doc)
    assert doc["baseline"] == "a"
    assert doc["impls"]["b"]["advantage"]["calls_per_s"] == pytest.approx(0.5)


def test_number_formatting() -> None:
    assert report.fmt_number(None) == "-"
    assert report.fmt_number(1234567.0) == "1,234,567"
    assert report.fmt_number(3.14159) == "3.1"
    assert report.fmt_number(0.123) == "0.12"
    assert report.fmt_number(0.0) == "0"
    assert report.fmt_number(11.0) == "11"
    assert report.fmt_number(3.0) == "3"
    assert report.fmt_number(3.0, 2) == "3.00"
    assert report.fmt_number(2.5, 2) == "2.50"
    assert report.fmt_ratio(5.234) == "5.23x"
    assert report.fmt_ratio(26.34) == "26.3x"
    assert report.fmt_ratio(None) == "-"


def test_table_cells_escape_pipes() -> None:
    doc = _workload_doc({"trimcp": _entry([(1.0, 1.0)])})
    doc["impls"]["trimcp"]["summary"]["calls_per_s"] = "a|b"
    assert "a\\|b" in report.workload_table(doc)


# ----------------------------------------------------------------------------- HTTP parsing


def _response(headers: dict[str, str], body: bytes, status: int = 200) -> lh.HttpResponse:
    return lh.HttpResponse(status, headers, body)


def test_parse_answer_sse_skips_priming_and_notifications() -> None:
    body = (
        b"id: 1\ndata: \n\n"
        b'event: message\ndata: {"jsonrpc":"2.0","method":"notifications/progress","params":{}}\n\n'
        b'event: message\r\ndata: {"jsonrpc":"2.0","id":7,\r\ndata: "result":{"ok":true}}\r\n\r\n'
    )
    result, kind = lh.parse_answer(_response({"content-type": "text/event-stream"}, body), 7)
    assert (result, kind) == ({"ok": True}, "sse")


def test_parse_answer_json_and_failures() -> None:
    ok = _response(
        {"content-type": "application/json; charset=utf-8"}, b'{"jsonrpc":"2.0","id":3,"result":{}}'
    )
    assert lh.parse_answer(ok, 3) == ({}, "json")
    with pytest.raises(BadResponse, match="no answer to id 4"):
        lh.parse_answer(ok, 4)
    error = _response(
        {"content-type": "application/json"},
        b'{"jsonrpc":"2.0","id":3,"error":{"code":-32602,"message":"bad"}}',
    )
    with pytest.raises(BadResponse, match="error answer"):
        lh.parse_answer(error, 3)
    with pytest.raises(BadResponse, match="HTTP 404"):
        lh.parse_answer(_response({}, b"nope", status=404), 3)
    with pytest.raises(BadResponse, match="content type"):
        lh.parse_answer(_response({"content-type": "text/plain"}, b"hi"), 3)


_CHUNKED = (
    b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
    b"5\r\nhello\r\n"
    b"7;ext=1\r\n, world\r\n"
    b"0\r\n\r\n"
)
_LENGTH = b"HTTP/1.1 202 Accepted\r\nContent-Length: 3\r\nX-A: b\r\n\r\nabc"


def _feed(pieces: list[bytes]) -> list[lh.HttpResponse]:
    ours, theirs = socket.socketpair()
    conn = lh.HttpConnection("127.0.0.1", 0, timeout=5.0)
    conn.sock = ours
    ours.setblocking(False)
    got: list[lh.HttpResponse] = []
    try:
        for piece in pieces:
            theirs.sendall(piece)
            while True:
                response = conn.on_readable()
                if response is None:
                    break
                got.append(response)
                if not conn._rbuf:
                    break
    finally:
        theirs.close()
        conn.close()
    return got


@pytest.mark.parametrize("split", ["whole", "bytewise"])
def test_http_parser_chunked_then_content_length(split: str) -> None:
    stream = _CHUNKED + _LENGTH
    pieces = [stream] if split == "whole" else [stream[i : i + 1] for i in range(len(stream))]
    first, second = _feed(pieces)
    assert first.status == 200
    assert first.body == b"hello, world"
    assert first.headers["content-type"] == "text/event-stream"
    assert second.status == 202
    assert second.body == b"abc"
    assert second.headers["x-a"] == "b"


def test_http_parser_rejects_garbage_and_reports_eof() -> None:
    with pytest.raises(BadResponse, match="status line"):
        _feed([b"SMTP ready\r\n\r\n"])
    ours, theirs = socket.socketpair()
    conn = lh.HttpConnection("127.0.0.1", 0, timeout=5.0)
    conn.sock = ours
    theirs.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc")
    theirs.close()
    assert conn.on_readable() is None
    with pytest.raises(ServerExited):
        conn.on_readable()


def test_roundtrip_against_a_tiny_server() -> None:
    with socket.create_server(("127.0.0.1", 0)) as server:
        port = server.getsockname()[1]
        conn = lh.HttpConnection("127.0.0.1", port, timeout=5.0)
        conn.start(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")  # connects now
        peer, _ = server.accept()
        with peer:
            peer.sendall(_LENGTH)
            response = conn.roundtrip(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
            assert response.body == b"abc"
            assert peer.recv(4096).startswith(b"GET / HTTP/1.1")
        conn.close()


# ----------------------------------------------------------------------------- storm, procs


def test_storm_tally_classifies_replies() -> None:
    tally = _Tally()
    tally.cancelled.update({2, 3})
    replies: list[dict[str, Any]] = [
        {"id": 1, "result": {}},  # answered before its cancel went out
        {"id": 2, "result": {}},  # answered although cancelled (a race)
        {"id": 3, "error": {"code": -32800}},
        {"id": 3, "result": {}},  # a second reply for the same id
        {"id": None, "error": {}},
    ]
    for msg in replies:
        tally.reply(msg)
    assert tally.before_cancel == 1
    assert tally.to_cancelled == 2
    assert tally.errors == 1
    assert tally.duplicates == 1
    assert tally.unknown == 1


def test_procs_helpers() -> None:
    busy = busy_cores(0.05)
    assert busy is None or busy >= 0.0
    assert 0 < free_port() < 65536


# ----------------------------------------------------------------------------- smoke


def test_quick_smoke_run_against_trimcp_alone(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    status = runner.main(
        [
            "--quick",
            "--impl",
            "trimcp",
            "--scale",
            "0.02",
            "--reps",
            "1",
            "--no-idle-check",
            "--out",
            str(tmp_path),
        ]
    )
    out, err = capsys.readouterr()
    assert status == 0, err
    assert "| workload | headline metric |" in out
    assert f"results written to {tmp_path}" in err
    (json_file,) = tmp_path.glob("bench-quick-*.json")
    (md_file,) = tmp_path.glob("bench-quick-*.md")
    results = json.loads(json_file.read_text())
    by_name = {w["name"]: w for w in results["workloads"]}
    assert set(by_name) == set(WORKLOADS)
    for name in ("seq", "pipe", "cold", "list", "list-paged", "storm"):
        summary = by_name[name]["impls"]["trimcp"]["summary"]
        assert summary, name
    assert by_name["storm"]["impls"]["trimcp"]["summary"]["leaked"]["max"] == 0
    assert by_name["storm"]["impls"]["trimcp"]["summary"]["duplicates"]["max"] == 0
    assert by_name["list-paged"]["impls"]["trimcp"]["summary"]["pages"]["median"] >= 10
    assert "trimcp" in by_name["codec"]["impls"]
    for name in ("http-sse", "http-json", "http-idle"):
        entry = by_name[name]["impls"]["trimcp"]
        assert entry["summary"] or entry["skipped"], name  # HTTP rows skip only when unavailable
    if by_name["http-sse"]["impls"]["trimcp"]["summary"]:
        assert by_name["http-sse"]["impls"]["trimcp"]["summary"]["answered"] == "sse"
        assert by_name["http-json"]["impls"]["trimcp"]["summary"]["answered"] == "json"
    assert "## stdio, sequential tools/call (`seq`)" in md_file.read_text()


def test_results_go_outside_the_checkout_unless_told(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without ``--out`` a run writes under ``$XDG_CACHE_HOME/trimcp/bench`` (``~/.cache``
    without it), never into the checkout, where its files were left untracked (issue 35)."""
    checkout = Path(runner.__file__).resolve().parents[2]
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    assert runner.parse_args([]).out == tmp_path / "cache" / "trimcp" / "bench"
    monkeypatch.delenv("XDG_CACHE_HOME")
    default = runner.parse_args([]).out
    assert default == Path.home() / ".cache" / "trimcp" / "bench"
    assert checkout not in default.parents
    assert runner.parse_args(["--out", str(tmp_path)]).out == tmp_path


def test_trimcp_from_another_checkout_runs_its_server_with_that_trimcp(tmp_path: Path) -> None:
    opts = runner.parse_args(["--impl", "trimcp", "--trimcp-from", f"before={REPO}"])
    assert [i.name for i in opts.impls] == ["trimcp", "before"]
    before = opts.impls[1]
    assert before.conventional
    assert before.argv is not None
    assert before.argv[:2] == ("env", f"PYTHONPATH={REPO}")
    assert before.argv[-3].endswith("trimcp_server.py")
    assert before.argv[-2:] == ("--api", "lowlevel")
    with pytest.raises(ValueError, match="not a trimcp checkout"):
        checkout_impl(f"x={tmp_path}")


def test_the_bound_and_the_2026_stdio_workloads_smoke(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # The floor implementation answers every echo workload, and the 2026 stdio workloads
    # run trimcp with no initialize (every answer is checked by the generators).
    status = runner.main(
        [
            "--quick",
            "--impl",
            "bound,trimcp",
            "--only",
            "seq-2026,pipe-2026,http-sse,http-json,http-2026,http-idle,storm,list-paged",
            "--scale",
            "0.02",
            "--reps",
            "1",
            "--no-idle-check",
            "--out",
            str(tmp_path),
        ]
    )
    _, err = capsys.readouterr()
    assert status == 0, err
    (json_file,) = tmp_path.glob("bench-quick-*.json")
    by_name = {w["name"]: w for w in json.loads(json_file.read_text())["workloads"]}
    for name, workload in by_name.items():
        assert workload["impls"]["bound"]["summary"], name
    for name in ("seq-2026", "pipe-2026"):
        raw = by_name[name]["impls"]["trimcp"]["runs"][0]["raw"]
        assert raw["protocol_version"] == "2026-07-28", name
    assert by_name["storm"]["impls"]["bound"]["summary"]["leaked"]["max"] == 0
    assert by_name["list-paged"]["impls"]["bound"]["summary"]["pages"]["median"] >= 10


def test_a_server_refusing_2026_requests_over_stdio_is_skipped() -> None:
    # A session-era-only server answers the first call (it had no initialize) with an error.
    refusing = (
        "import json, sys\n"
        "for line in sys.stdin:\n"
        "    msg = json.loads(line)\n"
        "    error = {'code': -32600, 'message': 'not initialized'}\n"
        "    print(json.dumps({'jsonrpc': '2.0', 'id': msg['id'], 'error': error}), flush=True)\n"
    )
    impl = Impl("old", (sys.executable, "-c", refusing))
    tiny = QUICK.scaled(0.01)
    with pytest.raises(Skip, match="serves no 2026-07-28 requests over stdio"):
        WORKLOADS["seq-2026"].run(impl, tiny)
    with pytest.raises(RunFailed, match="error response to id"):
        WORKLOADS["seq"].run(impl, tiny)  # in the session era it is a failure
