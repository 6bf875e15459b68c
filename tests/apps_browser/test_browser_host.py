"""The example MCP App (examples/apps_dashboard.py) in a real browser: headless Chromium
loads a host page built on the official ``@modelcontextprotocol/ext-apps`` AppBridge and
the TypeScript SDK's client (``host.js``, bundled by ``setup.sh``). The host reads the
``visits`` tool's ``ui://`` page from trimcp over Streamable HTTP, renders it in a sandboxed
iframe, and relays the tool calls the page makes through the bridge. The test clicks the
page's button (a real mouse event, through the DevTools protocol) and reads what the page
shows after ``record_visit``; a screenshot is saved and its path printed.

Processes: the example server, a page server (hypercorn, in this test) that serves the host
page and relays ``/mcp`` to the example (same origin, as a host's own backend would), and
Chromium. All on 127.0.0.1, the whole run bounded by ``TEST_BOUND``; no sleeps: every wait
wakes on a line printed, a DevTools event, or a promise in the page.
"""

from __future__ import annotations

import base64
import functools
import json
import math
import subprocess
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import trio
from hypercorn.config import Config
from hypercorn.trio import serve
from trio_websocket import open_websocket_url

from tests.apps_browser.cdp import MAX_MESSAGE, Cdp
from tests.apps_browser.conftest import AppsBrowser
from tests.interop.ts_everything.conftest import Inbox, read_lines, stop_process_group
from trimcp.client import connect_http
from trimcp.http.client import ConnectionPool
from trimcp.http.url import Endpoint, parse_url

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "apps_dashboard.py"

TEST_BOUND = 120.0  # the whole run: three processes, one page, one click
START_TIMEOUT = 30.0  # a process printing its address
RELAY_TIMEOUT = 15.0  # one relayed MCP request
MAX_BODY = 4 * 1024 * 1024

CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",  # the test may run as root, where Chromium's own sandbox cannot start
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--remote-debugging-port=0",
    "--window-size=900,800",
]

# The relay passes on what Streamable HTTP needs, nothing else (no cookies, no Origin: the
# relay is the host's backend, the MCP server's client).
REQUEST_HEADERS = ("content-type", "accept", "mcp-session-id", "mcp-protocol-version")
RESPONSE_HEADERS = ("content-type", "mcp-session-id", "mcp-protocol-version")

Scope = dict[str, Any]
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]
App = Callable[[Scope, Receive, Send], Awaitable[None]]


# --- the example server --------------------------------------------------------------------


@asynccontextmanager
async def run_example() -> AsyncIterator[str]:
    """examples/apps_dashboard.py over Streamable HTTP on a free port; its MCP URL."""
    process = await trio.lowlevel.open_process(
        [sys.executable, str(EXAMPLE), "--transport", "http", "--port", "0"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        assert process.stdout is not None
        output: Inbox[str] = Inbox()
        async with trio.open_nursery() as nursery:
            nursery.start_soon(read_lines, process.stdout, output)
            url = await output.wait_for(lambda line: line.startswith("http://"), START_TIMEOUT)
            yield url
            nursery.cancel_scope.cancel()
    finally:
        with trio.CancelScope(shield=True):
            await stop_process_group(process)


# --- the page server: the host page, and /mcp relayed to the example --------------------------


async def respond(send: Send, status: int, body: bytes, headers: list[tuple[bytes, bytes]]) -> None:
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


async def relay(
    scope: Scope, receive: Receive, send: Send, pool: ConnectionPool, upstream: Endpoint
) -> None:
    if scope["method"] not in ("POST", "DELETE"):
        # No standalone SSE stream through this relay: the client goes on without one.
        await respond(send, 405, b"", [(b"allow", b"POST, DELETE")])
        return
    body = b""
    while True:
        message = await receive()
        body += message.get("body", b"")
        if not message.get("more_body", False):
            break
    headers = {
        name.decode("latin-1"): value.decode("latin-1")
        for name, value in scope["headers"]
        if name.decode("latin-1").lower() in REQUEST_HEADERS
    }
    async with pool.request(
        scope["method"], upstream, headers, body, head_timeout=RELAY_TIMEOUT
    ) as response:
        # Whole: a POST's event stream ends with its response.
        payload = await response.read_all(MAX_BODY, RELAY_TIMEOUT)
    back = [
        (name.encode("latin-1"), value.encode("latin-1"))
        for name, value in response.headers.items()
        if name in RESPONSE_HEADERS
    ]
    await respond(send, response.status, payload, back)


def site_app(site: Path, pool: ConnectionPool, upstream: Endpoint) -> App:
    files = {
        "/host.html": (site / "host.html", b"text/html; charset=utf-8"),
        "/host.bundle.js": (site / "host.bundle.js", b"text/javascript; charset=utf-8"),
    }

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            while (await receive())["type"] != "lifespan.shutdown":
                await send({"type": "lifespan.startup.complete"})
            await send({"type": "lifespan.shutdown.complete"})
            return
        path = scope["path"]
        if path == "/mcp":
            await relay(scope, receive, send, pool, upstream)
        elif path in files:
            file, content_type = files[path]
            await respond(send, 200, file.read_bytes(), [(b"content-type", content_type)])
        else:
            await respond(send, 404, b"not found", [(b"content-type", b"text/plain")])

    return app


@asynccontextmanager
async def serve_site(site: Path, mcp_url: str) -> AsyncIterator[str]:
    """The page server on a free port; its base URL."""
    pool = ConnectionPool(ssl_context=None, connect_timeout=RELAY_TIMEOUT, max_idle=4)
    config = Config()
    config.bind = ["127.0.0.1:0"]
    config.accesslog = None
    try:
        async with trio.open_nursery() as nursery:
            # Plain ASGI dicts (as trimcp's hypercorn engine passes its app: Any).
            app: Any = site_app(site, pool, parse_url(mcp_url))
            binds: list[str] = await nursery.start(
                functools.partial(serve, app, config, mode="asgi")
            )
            yield binds[0]
            nursery.cancel_scope.cancel()
    finally:
        with trio.CancelScope(shield=True):
            await pool.aclose()


# --- Chromium ----------------------------------------------------------------------------------


@asynccontextmanager
async def run_chromium(chromium: str, profile: Path) -> AsyncIterator[Cdp]:
    """Headless Chromium with a fresh profile; a DevTools connection to it."""
    process = await trio.lowlevel.open_process(
        [chromium, *CHROMIUM_FLAGS, f"--user-data-dir={profile}", "about:blank"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    try:
        assert process.stderr is not None
        output: Inbox[str] = Inbox()
        async with trio.open_nursery() as nursery:
            nursery.start_soon(read_lines, process.stderr, output)
            prefix = "DevTools listening on "
            line = await output.wait_for(lambda seen: seen.startswith(prefix), START_TIMEOUT)
            async with (
                open_websocket_url(line[len(prefix) :], max_message_size=MAX_MESSAGE) as ws,
                trio.open_nursery() as reader,
            ):
                cdp = Cdp(ws)
                reader.start_soon(cdp.run)
                yield cdp
                reader.cancel_scope.cancel()
            nursery.cancel_scope.cancel()
    finally:
        with trio.CancelScope(shield=True):
            await stop_process_group(process)


# --- the page ------------------------------------------------------------------------------

# Resolves once the host page has finished (data-state "ready") or failed.
HOST_SETTLED = """new Promise((resolve) => {
  const settled = () => document.body.dataset.state !== "loading";
  if (settled()) { resolve(document.body.dataset.state); return; }
  new MutationObserver(() => settled() && resolve(document.body.dataset.state))
    .observe(document.body, { attributes: true });
})"""


def shows(element_id: str, text: str) -> str:
    """A promise that resolves once the element's text is ``text``."""
    return f"""new Promise((resolve) => {{
  const element = document.getElementById({json.dumps(element_id)});
  const check = () => element.textContent === {json.dumps(text)} && resolve(element.textContent);
  const options = {{ childList: true, characterData: true, subtree: true }};
  new MutationObserver(check).observe(element, options);
  check();
}})"""


def center_of(element_id: str) -> str:
    return f"""(() => {{
  const box = document.getElementById({json.dumps(element_id)}).getBoundingClientRect();
  return [box.left + box.width / 2, box.top + box.height / 2];
}})()"""


FRAME_ORIGIN = """(() => {
  const frame = document.getElementById("app");
  const box = frame.getBoundingClientRect();
  return [box.left + frame.clientLeft, box.top + frame.clientTop];
})()"""


async def open_page(cdp: Cdp, url: str) -> tuple[str, str]:
    """A new tab at ``url``, loaded; its DevTools session and main frame id."""
    target = (await cdp.send("Target.createTarget", {"url": "about:blank"}))["targetId"]
    attached = await cdp.send("Target.attachToTarget", {"targetId": target, "flatten": True})
    page: str = attached["sessionId"]
    # The app's frame may live in a process of its own (a sandboxed, opaque-origin frame):
    # attach to such frames too, so it can be reached either way.
    await cdp.send(
        "Target.setAutoAttach",
        {"autoAttach": True, "waitForDebuggerOnStart": False, "flatten": True},
        session=page,
    )
    await cdp.send("Runtime.enable", session=page)
    await cdp.send("Page.enable", session=page)
    navigated = await cdp.send("Page.navigate", {"url": url}, session=page)
    assert "errorText" not in navigated, navigated
    await cdp.event("Page.loadEventFired", lambda event: event.get("sessionId") == page)
    frame: str = navigated["frameId"]
    return page, frame


async def app_frame(cdp: Cdp, page: str, main_frame: str) -> tuple[str, int | None]:
    """Where to evaluate in the app's frame, once the host has it running: the frame's own
    session (when Chromium put it in a process of its own), else the page's session with
    the frame's live execution context (its initial about:blank context is destroyed when
    the page's HTML replaces it)."""
    found: list[tuple[str, int | None]] = []

    def locate() -> bool:
        live: dict[int, None] = {}
        for event in cdp.events.items:
            if event.get("sessionId") != page:
                continue
            params = event["params"]
            if event["method"] == "Target.attachedToTarget":
                if params["targetInfo"]["type"] == "iframe":
                    found[:] = [(params["sessionId"], None)]
                    return True
            elif event["method"] == "Runtime.executionContextCreated":
                aux = params["context"].get("auxData", {})
                if aux.get("isDefault") and aux.get("frameId") != main_frame:
                    live[params["context"]["id"]] = None
            elif event["method"] == "Runtime.executionContextDestroyed":
                live.pop(params["executionContextId"], None)
        if live:
            found[:] = [(page, list(live)[-1])]
        return bool(live)

    await cdp.events.wait_until(locate, timeout=math.inf)
    return found[0]


async def test_the_dashboard_renders_and_records_a_visit_through_the_host(
    apps_browser: AppsBrowser, tmp_path: Path
) -> None:
    with trio.fail_after(TEST_BOUND):
        async with (
            run_example() as mcp_url,
            serve_site(apps_browser.site, mcp_url) as site_url,
            run_chromium(apps_browser.chromium, tmp_path / "profile") as cdp,
        ):
            page, main_frame = await open_page(cdp, f"{site_url}/host.html")
            state = await cdp.evaluate(HOST_SETTLED, session=page)
            error = await cdp.evaluate('document.getElementById("error").textContent', session=page)
            assert state == "ready", error

            frame, context = await app_frame(cdp, page, main_frame)
            # The tool result the host handed over through the bridge.
            assert await cdp.evaluate(shows("count", "Visits: 0"), session=frame, context=context)

            # A real click on the page's button, at its place in the host's viewport.
            left, top = await cdp.evaluate(FRAME_ORIGIN, session=page)
            x, y = await cdp.evaluate(center_of("record"), session=frame, context=context)
            for kind in ("mousePressed", "mouseReleased"):
                await cdp.send(
                    "Input.dispatchMouseEvent",
                    {"type": kind, "x": left + x, "y": top + y, "button": "left", "clickCount": 1},
                    session=page,
                )

            # The page called record_visit through the bridge and shows what came back.
            await cdp.evaluate(shows("status", "Recorded."), session=frame, context=context)
            count = await cdp.evaluate(
                'document.getElementById("count").textContent', session=frame, context=context
            )
            assert count == "Visits: 1"
            log = await cdp.evaluate(
                '[...document.querySelectorAll("#log li")].map((item) => item.textContent)',
                session=page,
            )
            assert 'relayed record_visit -> {"visits":1}' in log, log

            shot = await cdp.send("Page.captureScreenshot", {"format": "png"}, session=page)
            path = tmp_path / "apps_dashboard.png"
            path.write_bytes(base64.b64decode(shot["data"]))
            print(f"screenshot: {path}")

            # The server counted the visit (not only the page).
            async with connect_http(mcp_url) as client:
                result = await client.call_tool("visits")
            assert result.structured_content == {"visits": 1}
