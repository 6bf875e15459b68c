"""``--timeout`` bounds each request; a call's progress restarts it, but never past
``MAX_PROGRESS_TIMEOUT`` from the call's start (issue 35: it restarted without end and
without saying so). The CLI's own call path, in virtual time against an in-process
server."""

from __future__ import annotations

import argparse
from typing import Any

import pytest
import trio

from tests.cli.support import cli
from trimcp import Context, Server, connect_memory
from trimcp.cli.arguments import read_arguments
from trimcp.cli.client import MAX_PROGRESS_TIMEOUT, cmd_call, session_options
from trimcp.errors import RequestTimeout

app = Server("slow")


@app.tool()
async def busy(ctx: Context) -> str:
    """Reports progress every second, forever."""
    step = 0
    while True:
        step += 1
        await ctx.report_progress(step)
        await trio.sleep(1)


@app.tool()
async def silent() -> str:
    await trio.sleep(3600)
    return "late"


def call_args(tool: str, timeout: float) -> argparse.Namespace:
    return argparse.Namespace(
        tool=tool,
        read_arguments=read_arguments([], None),
        allow_unknown=False,
        quiet=True,
        json=False,
        task=False,
        timeout=timeout,
    )


@pytest.mark.parametrize(
    ("tool", "timeout", "ends_after"),
    [
        ("silent", 5.0, 5.0),
        ("busy", 5.0, MAX_PROGRESS_TIMEOUT),
        ("busy", 900.0, 900.0),  # a --timeout above the ceiling is its own ceiling
    ],
)
async def test_progress_extends_the_timeout_only_up_to_the_ceiling(
    autojump_clock: Any, tool: str, timeout: float, ends_after: float
) -> None:
    async with connect_memory(app, options=session_options(timeout)) as client:
        start = trio.current_time()
        with pytest.raises(RequestTimeout):
            await cmd_call(client, call_args(tool, timeout))
        assert trio.current_time() - start == pytest.approx(ends_after, abs=1.0)


def test_the_help_states_the_ceiling() -> None:
    shown = " ".join(cli("call", "--help").stdout.split())
    assert f"never past {MAX_PROGRESS_TIMEOUT:g} s from its start" in shown
