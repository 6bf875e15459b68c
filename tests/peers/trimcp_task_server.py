"""A trimcp server over stdio with one task tool that reports progress, for the official
SDK's client (``sdk_task_progress_client.py``).

Tool: ``count(steps)`` (``taskSupport: optional``): ``steps`` times, sleeps 0.05 s and
reports ``ctx.report_progress(step, steps, "step <step>")``; answers "counted to <steps>".
"""

from __future__ import annotations

import trio

import trimcp
from trimcp.server.tasks import TaskOptions

app = trimcp.Server(
    "trimcp-task-peer", version="1.0.0", task_options=TaskOptions(poll_interval=0.05)
)


@app.tool(task_support="optional")
async def count(steps: int, ctx: trimcp.Context) -> str:
    """Count to ``steps``, reporting progress at each step."""
    for step in range(1, steps + 1):
        await trio.sleep(0.05)
        await ctx.report_progress(step, steps, f"step {step}")
    return f"counted to {steps}"


if __name__ == "__main__":
    app.run()
