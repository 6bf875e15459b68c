"""Tests for the raw stdio load generator: statistics, response checks, failure modes,
and a smoke run against the official-SDK peer server (tiny counts, no timing asserts)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:
    # `benchmarks` is a top-level directory, not part of the installed package; running
    # plain `pytest` (rather than `python -m pytest` from the repo root) needs this.
    sys.path.insert(0, str(REPO))

from benchmarks import loadgen_stdio as lg  # noqa: E402
from benchmarks.procstats import (  # noqa: E402
    CpuTimes,
    ProcStatsUnavailable,
    read_cpu,
    read_tree_cpu,
)

PEER = [sys.executable, str(REPO / "tests" / "peers" / "sdk_stdio_server.py")]

# Tiny fake servers for failure modes: each reads requests line by line.
_FAKE_PRELUDE = "import json, sys\n"
_INIT_REPLY = (
    "def reply(msg, **extra):\n"
    "    out = {'jsonrpc': '2.0', 'id': msg['id'], **extra}\n"
    "    sys.stdout.write(json.dumps(out) + '\\n'); sys.stdout.flush()\n"
    "for line in sys.stdin:\n"
    "    msg = json.loads(line)\n"
    "    if msg.get('method') == 'initialize':\n"
    "        reply(msg, result={'protocolVersion': '2025-11-25', 'capabilities': {},\n"
    "                           'serverInfo': {'name': 'fake', 'version': '0'}})\n"
    "        continue\n"
    "    if 'id' not in msg:\n"
    "        continue\n"
)


def _fake(body: str) -> list[str]:
    return [sys.executable, "-c", _FAKE_PRELUDE + _INIT_REPLY + body]


# ----------------------------------------------------------------------------- statistics


def test_percentile_interpolates_linearly() -> None:
    values = [1.0, 2.0, 3.0, 4.0]
    assert lg.percentile(values, 0) == 1.0
    assert lg.percentile(values, 100) == 4.0
    assert lg.percentile(values, 50) == 2.5
    assert lg.percentile(values, 99) == pytest.approx(3.97)
    assert lg.percentile([7.0], 99) == 7.0


def test_percentile_of_one_to_hundred_matches_rank() -> None:
    values = [float(v) for v in range(1, 101)]
    assert lg.percentile(values, 50) == pytest.approx(50.5)
    assert lg.percentile(values, 99) == pytest.approx(99.01)


@pytest.mark.parametrize(("values", "q"), [([], 50), ([1.0], -1), ([1.0], 100.5)])
def test_percentile_rejects_bad_input(values: list[float], q: float) -> None:
    with pytest.raises(ValueError, match=r"percentile (of an empty|must be within)"):
        lg.percentile(values, q)


def test_summarize_latencies_converts_ns_to_us_and_sorts() -> None:
    summary = lg.summarize_latencies([3000, 1000, 2000, 4000])
    assert summary["count"] == 4
    assert summary["min"] == 1.0
    assert summary["max"] == 4.0
    assert summary["mean"] == 2.5
    assert summary["p50"] == 2.5
    assert summary["p50"] <= summary["p90"] <= summary["p99"] <= summary["max"]
    with pytest.raises(ValueError, match="no latencies"):
        lg.summarize_latencies([])


def test_aggregate_per_call_numbers() -> None:
    out = lg.aggregate(
        [1_000_000] * 4,  # 4 calls of 1 ms
        wall_ns=2_000_000_000,
        server_cpu=CpuTimes(user=0.03, system=0.01),
        gen_cpu_s=0.002,
    )
    assert out["calls"] == 4
    assert out["calls_per_s"] == pytest.approx(2.0)
    assert out["server_cpu_us_per_call"] == pytest.approx(10_000.0)
    assert out["server_cpu_user_s"] == pytest.approx(0.03)
    assert out["gen_cpu_us_per_call"] == pytest.approx(500.0)
    assert out["latency_us"]["p99"] == pytest.approx(1000.0)


def test_aggregate_without_proc_reports_none() -> None:
    out = lg.aggregate([5], wall_ns=10, server_cpu=None, gen_cpu_s=0.0)
    assert out["server_cpu_us_per_call"] is None
    with pytest.raises(ValueError, match="at least one call"):
        lg.aggregate([], wall_ns=10, server_cpu=None, gen_cpu_s=0.0)


def test_cpu_times_arithmetic() -> None:
    delta = CpuTimes(user=1.5, system=0.5) - CpuTimes(user=1.0, system=0.25)
    assert delta == CpuTimes(user=0.5, system=0.25)
    assert delta.total == pytest.approx(0.75)


# ----------------------------------------------------------------------------- procstats


def test_procstats_reads_this_process() -> None:
    mine = read_cpu(os.getpid())
    assert mine.user >= 0
    assert mine.system >= 0
    assert read_tree_cpu(os.getpid()).total >= mine.total


def test_procstats_missing_process_raises() -> None:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    with pytest.raises(ProcStatsUnavailable):
        read_cpu(proc.pid)


# ----------------------------------------------------------------------------- checks


def test_check_response_accepts_matching_result() -> None:
    assert lg.check_response({"jsonrpc": "2.0", "id": 3, "result": {"x": 1}}, 3) == {"x": 1}


@pytest.mark.parametrize(
    "msg",
    [
        {"jsonrpc": "2.0", "id": 4, "result": {}},
        {"jsonrpc": "2.0", "id": 3, "error": {"code": -32602, "message": "bad"}},
        {"jsonrpc": "2.0", "id": 3},
    ],
)
def test_check_response_rejects_wrong_id_error_or_missing_result(msg: dict[str, object]) -> None:
    with pytest.raises(lg.BadResponse):
        lg.check_response(msg, 3)


def test_error_response_fails_the_run() -> None:
    argv = _fake("    reply(msg, error={'code': -32601, 'message': 'Method not found'})\n")
    with pytest.raises(lg.BadResponse, match="-32601"):
        lg.run_sequential(argv, 3, warmup=0, timeout=10)


def test_wrong_id_fails_the_pipelined_run() -> None:
    argv = _fake("    msg['id'] += 1000\n    reply(msg, result={'content': []})\n")
    with pytest.raises(lg.BadResponse, match="unknown or repeated id"):
        lg.run_pipelined(argv, 4, 2, warmup=0, timeout=10)


def test_wrong_echo_fails_the_run() -> None:
    argv = _fake("    reply(msg, result={'content': [{'type': 'text', 'text': 'nope'}]})\n")
    with pytest.raises(lg.BadResponse, match="wrong echo"):
        lg.run_sequential(argv, 1, warmup=0, timeout=10)


def test_server_exit_is_reported() -> None:
    argv = [sys.executable, "-c", "import sys; sys.stdin.readline()"]
    with pytest.raises(lg.ServerExited):
        lg.run_sequential(argv, 1, warmup=0, timeout=10)


def test_hung_server_times_out() -> None:
    # Answers initialize, then never answers a call: the bounded wait must fire.
    argv = _fake("    pass\n")
    with pytest.raises(lg.ServerTimeout):
        lg.run_sequential(argv, 1, warmup=0, timeout=0.5)


def test_notifications_are_skipped_and_counted() -> None:
    body = (
        "    note = {'jsonrpc': '2.0', 'method': 'notifications/message', 'params': {}}\n"
        "    sys.stdout.write(json.dumps(note) + '\\n')\n"
        "    text = msg['params']['arguments']['text']\n"
        "    reply(msg, result={'content': [{'type': 'text', 'text': text}]})\n"
    )
    out = lg.run_sequential(_fake(body), 3, warmup=0, timeout=10)
    assert out["server_notifications"] == 3


# ----------------------------------------------------------------------------- smoke runs


def _assert_sane(out: dict[str, Any], n: int) -> None:
    assert out["calls"] == n
    lat = out["latency_us"]
    assert isinstance(lat, dict)
    assert 0 < lat["p50"] <= lat["p99"] <= lat["max"]
    assert out["calls_per_s"] > 0
    assert out["gen_cpu_us_per_call"] >= 0
    # /proc ticks are 10 ms, so 20 calls may legitimately read as zero server CPU.
    assert out["server_cpu_us_per_call"] is not None
    assert out["server_cpu_us_per_call"] >= 0
    assert out["server_info"] == {"name": "sdk-stdio-peer", "version": "0.1.0"}


def test_sequential_smoke_against_sdk_peer() -> None:
    out = lg.run_sequential(PEER, 20, warmup=2)
    _assert_sane(out, 20)
    assert out["in_flight"] == 1


def test_pipelined_smoke_against_sdk_peer() -> None:
    out = lg.run_pipelined(PEER, 20, 5, warmup=2)
    _assert_sane(out, 20)
    assert out["in_flight"] == 5


def test_cold_start_smoke_against_sdk_peer() -> None:
    out = lg.cold_start(PEER, 1)
    init, first = out["initialize_ms"], out["first_call_ms"]
    assert 0 < init["min"] <= init["max"]
    assert first["min"] >= init["min"]


def test_cli_prints_json(capsys: pytest.CaptureFixture[str]) -> None:
    status = lg.main(
        ["--mode", "pipe", "-n", "20", "--in-flight", "4", "--warmup", "1", "--", *PEER]
    )
    assert status == 0
    out = json.loads(capsys.readouterr().out)
    _assert_sane(out, 20)


def test_cli_reports_failure_with_status_1(capsys: pytest.CaptureFixture[str]) -> None:
    argv = [sys.executable, "-c", "pass"]
    assert lg.main(["--mode", "seq", "-n", "1", "--warmup", "0", "--", *argv]) == 1
    assert "ServerExited" in capsys.readouterr().err
