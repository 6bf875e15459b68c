"""The judge of tests/scale/test_failures.py, on made-up reports: which ends it allows."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.scale import test_failures as failures


def _report(last: dict[str, object]) -> list[dict[str, object]]:
    calls: list[dict[str, object]] = [
        {"tag": f"t{n}", "ends": 1, "progress": [1.0, 2.0, 3.0, 4.0, 5.0, 6.0],
         "result": f"done t{n}", "started_at": 100.0, "seconds": 0.4}
        for n in range(failures.CALLS - 1)
    ]  # fmt: skip
    return [*calls, {"tag": "last", "ends": 1, "started_at": 200.0, "seconds": 2.5, **last}]


EXHAUSTED: dict[str, object] = {
    "progress": [1.0, 2.0, 3.0, 4.0, 5.0, 6.0],
    "error": failures.EXHAUSTED,
}


@pytest.mark.parametrize(
    ("kill_times", "counted_as"),
    [
        ([200.3, 201.3, 202.4], "exhausted"),  # its stream cut, then both resumes
        ([200.3, 201.3], "other"),  # one resume cut: the next one must have worked
        ([199.0, 200.3, 201.3, 203.0], "other"),  # kills outside its life do not count
        ([], "other"),  # trimcp refused its resumes: no kill explains it
    ],
)
def test_a_call_may_end_exhausted_only_through_three_kills(
    kill_times: list[float], counted_as: str
) -> None:
    ends = failures.check_every_call_ended_once(_report(EXHAUSTED), kill_times)
    assert ends[counted_as] == 1
    assert ends["answered"] == failures.CALLS - 1


def test_a_cut_call_is_counted_as_cut() -> None:
    error = (
        "MCPError: replica 0123456789ab that was running this request stopped (it stopped "
        "saying it is alive); the request may or may not have taken effect; retry it if "
        "it is safe to"
    )
    ends = failures.check_every_call_ended_once(_report({"progress": [1.0], "error": error}))
    assert ends["cut"] == 1


def test_resumes_answered_with_an_error_status_are_listed(tmp_path: Path) -> None:
    log = tmp_path / "access.log"
    log.write_text(
        "GET 200 127.0.0.1:1 200 0.2 s 1.0 a_1-0 0.000\n"
        "GET 200 127.0.0.1:1, 127.0.0.1:2 502, 200 0.2 s 1.0 a_1-0 -, 0.000\n"
        "POST 502 127.0.0.1:1 502 0.0 s 1.0 - -\n"
        "GET 400 127.0.0.1:2 400 0.0 s 1.0 a_2-0 0.000\n"
    )
    assert failures.refused_resumes(log) == ["GET 400 127.0.0.1:2 400 0.0 s 1.0 a_2-0 0.000"]
