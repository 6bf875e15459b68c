"""The example of docs/logging.md: log messages from a tool and from Python's ``logging``.

(Not named ``logging.py``: a script of that name would shadow the standard library.)

Run it as a stdio server (``python examples/docs/server_logging.py``), or watch a client receive
the messages in memory (``python examples/docs/server_logging.py --demo``).
"""

from __future__ import annotations

import logging
import sys

import trio

from trimcp.server import Context, Server
from trimcp.types import LoggingMessageNotificationParams

app = Server("importer")
app.bridge_stdlib_logging("importer")  # forward this logger's records to clients
log = logging.getLogger("importer")
log.setLevel(logging.DEBUG)


@app.tool()
async def import_rows(count: int, ctx: Context) -> str:
    """Import some rows, reporting as it goes."""
    await ctx.debug(f"starting an import of {count} rows")
    for row in range(count):
        log.info("imported row %d", row)
    await ctx.warning({"skipped": 0, "imported": count}, logger="importer.summary")
    return "done"


async def demo() -> None:
    from trimcp.client import connect_memory

    summary = trio.Event()

    def show(message: LoggingMessageNotificationParams) -> None:
        print(message.level, message.logger, message.data)
        if message.logger == "importer.summary":
            summary.set()

    async with connect_memory(app, on_log_message=show) as client:
        await client.set_logging_level("info")  # no debug messages from now on
        await client.call_tool("import_rows", {"count": 2})
        with trio.fail_after(5):  # notifications are handled in their own task
            await summary.wait()


if __name__ == "__main__":
    if "--demo" in sys.argv:
        trio.run(demo)
    else:
        app.run()
