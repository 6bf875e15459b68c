"""A roots-aware file server: it lists and reads files only inside the client's roots.

MCP clients tell a server which directories it may work in ("roots", ``file://`` URIs);
this server asks for them (``roots/list``), keeps them per session, and refreshes them when
the client says they changed (``notifications/roots/list_changed``), telling the client
what it now sees through a log message.

Tools: ``roots()`` (the directories the server may use), ``list_files(pattern, limit)``
(files under every root, as paths relative to their root), ``read_file(root, path)``
(a regular text file, at most 64 KiB, refused outside the roots).

    python examples/roots_server.py          # serve over stdio
    python examples/roots_server.py --demo   # a client in memory with two temporary roots

The demo prints the files under one root, switches roots, and prints them again.
"""

from __future__ import annotations

import fnmatch
import os
import stat
import sys
import tempfile
import weakref
from pathlib import Path
from typing import Annotated
from urllib.parse import urlparse
from urllib.request import url2pathname

import attrs
import trio

from trimcp import Context, McpError, Server, Session, ToolError
from trimcp.client import connect_memory
from trimcp.types import ListRootsResult, LoggingMessageNotificationParams, Root, TextContent

#: How long a roots/list sent from the notification handler may take.
ROOTS_TIMEOUT = 10.0
#: Bytes read_file returns at most.
MAX_READ = 64 * 1024
#: Seconds read_file waits for its worker thread.
READ_TIMEOUT = 5.0

app = Server(
    "roots-explorer",
    version="1.0.0",
    instructions="Lists and reads files inside the client's roots only.",
)


@attrs.frozen
class Folder:
    """A root the client shared: its URI, its local path and its name."""

    uri: str
    path: str
    name: str | None = None


@attrs.frozen
class Listing:
    """Files found under one root, relative to it."""

    root: str
    files: list[str]
    truncated: bool


# The roots each session's client gave us, refreshed on roots/list_changed. Weak keys: a
# closed session's entry goes away with the session.
_roots: weakref.WeakKeyDictionary[Session, list[Folder]] = weakref.WeakKeyDictionary()


def _folders(roots: list[Root]) -> list[Folder]:
    """The local directories among ``roots`` (non-``file`` URIs are skipped)."""
    folders = []
    for root in roots:
        parsed = urlparse(root.uri)
        if parsed.scheme == "file" and parsed.netloc in ("", "localhost"):
            path = os.path.realpath(url2pathname(parsed.path))
            folders.append(Folder(uri=root.uri, path=path, name=root.name))
    return folders


async def _current_roots(ctx: Context) -> list[Folder]:
    folders = _roots.get(ctx.session)
    if folders is None:
        folders = _folders(await ctx.list_roots())
        _roots[ctx.session] = folders
    return folders


@app.tool()
async def roots(ctx: Context) -> list[Folder]:
    """The directories this server may use: the client's file:// roots."""
    return await _current_roots(ctx)


def _scan(top: str, pattern: str, limit: int) -> tuple[list[str], bool]:
    # Runs in a worker thread: directory walks block. Symlinks are not followed, so the
    # walk cannot leave the root.
    found: list[str] = []
    for directory, subdirs, files in os.walk(top):
        subdirs.sort()
        for name in sorted(files):
            relative = os.path.relpath(os.path.join(directory, name), top)
            if fnmatch.fnmatch(name, pattern):
                if len(found) == limit:
                    return found, True
                found.append(relative.replace(os.sep, "/"))
    return found, False


@app.tool()
async def list_files(
    ctx: Context,
    pattern: Annotated[str, "A glob on file names, e.g. *.py"] = "*",
    limit: Annotated[int, "At most this many files per root"] = 100,
) -> list[Listing]:
    """List the files under every root whose name matches ``pattern``."""
    listings = []
    for folder in await _current_roots(ctx):
        files, truncated = await trio.to_thread.run_sync(_scan, folder.path, pattern, limit)
        listings.append(Listing(root=folder.uri, files=files, truncated=truncated))
    return listings


def _read_inside(top: str, relative: str) -> str:
    # Runs in a worker thread. Only regular files: a FIFO would block the thread until a
    # writer came, a device could stream forever. The type is checked before opening (which
    # blocks on a FIFO without O_NONBLOCK) and again on what was opened (the path may have
    # been swapped in between); the read is bounded by MAX_READ.
    path = os.path.realpath(os.path.join(top, relative))
    if os.path.commonpath([path, top]) != top:
        raise ToolError(f"{relative!r} is outside the root")
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            raise ToolError(f"{relative!r} is not a regular file")
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
        with open(fd, "rb") as file:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                raise ToolError(f"{relative!r} is not a regular file")
            data = file.read(MAX_READ)
    except OSError as exc:
        raise ToolError(f"Cannot read {relative!r}: {exc.strerror}") from None
    return data.decode("utf-8", errors="replace")


@app.tool()
async def read_file(
    ctx: Context,
    root: Annotated[str, "The root's URI, as listed by roots()"],
    path: Annotated[str, "The file's path relative to that root"],
) -> str:
    """Read a text file inside one of the roots (at most 64 KiB; regular files only)."""
    for folder in await _current_roots(ctx):
        if folder.uri == root:
            # A read that hangs (a stalled network filesystem) is abandoned after
            # READ_TIMEOUT: the call answers, the thread finishes on its own.
            with trio.move_on_after(READ_TIMEOUT):
                return await trio.to_thread.run_sync(
                    _read_inside, folder.path, path, abandon_on_cancel=True
                )
            raise ToolError(f"Reading {path!r} took longer than {READ_TIMEOUT:g} s")
    raise ToolError(f"{root!r} is not one of the client's roots; call roots() first")


@app.notification_handler("notifications/roots/list_changed")
async def roots_changed(session: Session, params: object) -> None:
    """Fetch the new roots at once and tell the client what the server now sees."""
    _roots.pop(session, None)  # stale now; a tool call refetches them if we fail here
    try:
        result: ListRootsResult = await session.send_request("roots/list", timeout=ROOTS_TIMEOUT)
    except McpError:
        return  # the client did not answer in time, or refused: the next tool call retries
    folders = _folders(result.roots)
    _roots[session] = folders
    await app.send_log(session, "info", {"roots": [f.uri for f in folders]}, logger="roots")


# --- the demo: a client with roots, in memory ------------------------------------------------


def name_of(uri: str) -> str:
    return Path(url2pathname(urlparse(uri).path)).name


async def demo(base: Path) -> None:
    """Two roots under ``base``; list one, switch to the other, list again."""
    first, second = base / "first", base / "second"
    (first / "src").mkdir(parents=True)
    second.mkdir()
    (first / "README.md").write_text("# first\n")
    (first / "src" / "main.py").write_text("print('hello')\n")
    (second / "notes.txt").write_text("second root\n")
    changed = trio.Event()

    def on_log(params: LoggingMessageNotificationParams) -> None:
        print(f"server log: now using {[name_of(uri) for uri in params.data['roots']]}")
        changed.set()

    async with connect_memory(
        app, roots=[Root(uri=first.as_uri(), name="first")], on_log_message=on_log
    ) as client:
        listing = await client.call_tool("list_files")
        for entry in (listing.structured_content or {})["result"]:
            print(f"{name_of(entry['root'])}: {entry['files']}")
        readme = await client.call_tool("read_file", {"root": first.as_uri(), "path": "README.md"})
        [block] = readme.content
        assert isinstance(block, TextContent)
        print(f"README.md: {block.text.strip()!r}")
        escape = await client.call_tool("read_file", {"root": first.as_uri(), "path": "../x"})
        print(f"escape refused: {escape.is_error}")

        await client.set_roots([Root(uri=second.as_uri(), name="second")])
        with trio.fail_after(10):
            await changed.wait()
        listing = await client.call_tool("list_files", {"pattern": "*.txt"})
        for entry in (listing.structured_content or {})["result"]:
            print(f"{name_of(entry['root'])}: {entry['files']}")


def main() -> None:
    if "--demo" in sys.argv[1:]:
        with tempfile.TemporaryDirectory() as base:
            trio.run(demo, Path(base))
    else:
        app.run()


if __name__ == "__main__":
    main()
