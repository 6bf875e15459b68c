"""An MCP App: a small visitor dashboard whose page calls the server's tools through the host.

The tool ``visits`` answers with today's count (text for any host, structured data for
the page) and names the app page ``ui://dashboard/visits``; a host with MCP Apps
(``io.modelcontextprotocol/ui``) renders that page in a sandboxed frame. The page shows
the count and a button; the button calls ``record_visit`` through the host bridge
(``mcpApp.callTool``), a tool only the page may call (``visibility=["app"]``: hosts keep it
from the model).

    python examples/apps_dashboard.py                                   # serve over stdio
    python examples/apps_dashboard.py --transport http --port 8000      # Streamable HTTP
    python examples/apps_dashboard.py --demo      # a Trio "host" in memory, no browser

Over HTTP, ``--port 0`` picks a free port; the URL is printed. The demo does what a host
does before rendering: it finds the tool's page, reads it with its security metadata, and
relays the call the page's button makes.
"""

from __future__ import annotations

import argparse
import functools
import sys
from typing import TypedDict

import trio

from trimcp import Server
from trimcp.client import connect_memory
from trimcp.client.apps import tool_ui
from trimcp.server.apps import ToolUi, app_page
from trimcp.transports.http_server import serve_http

PAGE = "ui://dashboard/visits"

app = Server("visits-dashboard", version="1.0.0")


class Visits(TypedDict):
    """Today's visitor count."""

    visits: int


class Counter:
    """The count the tools share (one per process: this is a demo)."""

    def __init__(self) -> None:
        self.value = 0


counter = Counter()

STYLE = """
body { font-family: var(--font-sans, system-ui, sans-serif); margin: 1rem; }
#count { font-size: 2.5rem; font-weight: bold; margin: 0.25rem 0; }
#status { color: #666; min-height: 1.2em; }
"""

BODY = """
<h1>Visitors today</h1>
<p id="count">…</p>
<button id="record">Record a visit</button>
<p id="status"></p>
"""

# The page's own code: show a result's structured count; the button asks the host to
# call record_visit on this server and shows what it returned.
SCRIPT = """
const show = (result) => {
  const data = result && result.structuredContent;
  if (data && typeof data.visits === "number") {
    document.getElementById("count").textContent = "Visits: " + data.visits;
  }
};
mcpApp.on("toolresult", show);
mcpApp.callTool("visits", {}).then(show);
document.getElementById("record").addEventListener("click", async () => {
  const status = document.getElementById("status");
  status.textContent = "Recording…";
  try {
    const result = await mcpApp.callTool("record_visit", {});
    show(result);
    status.textContent = "Recorded.";
  } catch (error) {
    status.textContent = "Failed: " + error.message;
  }
});
"""


@app.ui_resource(PAGE, title="Visitors dashboard", prefers_border=True)
def dashboard_page() -> str:
    """The dashboard's page: the count and a button, with no outside origins."""
    return app_page(title="Visitors dashboard", style=STYLE, body=BODY, script=SCRIPT)


@app.tool(ui=PAGE)
def visits() -> Visits:
    """How many visitors came today (a host with MCP Apps shows it on the dashboard)."""
    return {"visits": counter.value}


@app.tool(ui=ToolUi(PAGE, visibility=["app"]))
def record_visit() -> Visits:
    """Count one more visitor (called by the dashboard page, not by the model)."""
    counter.value += 1
    return {"visits": counter.value}


async def demo() -> None:
    """What a host does, without the browser: find the page, read it, relay the button."""
    async with connect_memory(app) as client:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
        page = await client.ui_resource(tools["visits"])
        print(f"tool 'visits' renders {page.uri} ({len(page.html)} bytes of HTML)")
        print(f"frame policy: {page.csp_header}")
        # The page's button: the host checks that the page may call the tool, then calls it.
        ui = tool_ui(tools["record_visit"])
        if ui is None or not ui.app_callable:
            raise SystemExit("record_visit should be callable by the page")
        print(f"record_visit: for the model too? {ui.model_visible}")
        result = await client.call_tool("record_visit")
        print(f"after the button: {result.structured_content}")


async def serve(host: str, port: int) -> None:
    """Serve over Streamable HTTP (until interrupted); print the URL once listening."""
    async with trio.open_nursery() as nursery:
        bound = await nursery.start(functools.partial(serve_http, app, host=host, port=port))
        print(f"http://{host}:{bound}/mcp", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--demo", action="store_true", help="run a host in memory")
    parser.add_argument("--transport", choices=["stdio", "http"], default="stdio")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000)
    args = parser.parse_args()
    if args.demo:
        trio.run(demo)
    elif args.transport == "http":
        trio.run(serve, args.host, args.port)
    else:
        app.run()


if __name__ == "__main__":
    sys.exit(main())
