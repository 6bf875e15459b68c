"""examples/roots_server.py: files only inside the client's roots, refreshed when the client
says its roots changed. The tools walk directories in worker threads, so these tests run
on the real clock (an autojump clock would jump while a thread works); every wait is
bounded."""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Any

import pytest
import trio

from tests.examples.helpers import load_example, run_example
from trimcp.client import connect_memory
from trimcp.types import LoggingMessageNotificationParams, Root, TextContent

roots_server = load_example("roots_server")
BOUND = 30.0


def tree(base: Path) -> tuple[Path, Path]:
    one, two = base / "one", base / "two"
    (one / "pkg").mkdir(parents=True)
    two.mkdir()
    (one / "a.py").write_text("A = 1\n")
    (one / "pkg" / "b.py").write_text("B = 2\n")
    (one / "notes.txt").write_text("notes\n")
    (two / "c.txt").write_text("see\n")
    (base / "secret.txt").write_text("outside every root\n")
    return one, two


def listing(result: Any) -> list[dict[str, Any]]:
    entries: list[dict[str, Any]] = result.structured_content["result"]
    return entries


def text(result: Any) -> str:
    [block] = result.content
    assert isinstance(block, TextContent)
    return block.text


async def test_lists_and_reads_inside_the_roots_only(tmp_path: Path) -> None:
    one, two = tree(tmp_path)
    roots = [
        Root(uri=one.as_uri(), name="one"),
        Root(uri=two.as_uri(), name="two"),
        Root(uri="https://example.com/not-a-directory"),
    ]
    with trio.fail_after(BOUND):
        async with connect_memory(roots_server.app, roots=roots) as client:
            known = await client.call_tool("roots")
            assert [r["name"] for r in known.structured_content["result"]] == ["one", "two"]

            everything = listing(await client.call_tool("list_files"))
            assert [(e["root"], e["files"], e["truncated"]) for e in everything] == [
                (one.as_uri(), ["a.py", "notes.txt", "pkg/b.py"], False),
                (two.as_uri(), ["c.txt"], False),
            ]
            python = listing(await client.call_tool("list_files", {"pattern": "*.py"}))
            assert python[0]["files"] == ["a.py", "pkg/b.py"]
            capped = listing(await client.call_tool("list_files", {"limit": 1}))
            assert capped[0] == {"root": one.as_uri(), "files": ["a.py"], "truncated": True}

            read = await client.call_tool("read_file", {"root": one.as_uri(), "path": "pkg/b.py"})
            assert text(read) == "B = 2\n"
            for path in ["../secret.txt", str(tmp_path / "secret.txt"), "pkg/../../secret.txt"]:
                refused = await client.call_tool("read_file", {"root": one.as_uri(), "path": path})
                assert refused.is_error
                assert "outside the root" in text(refused)
            missing = await client.call_tool("read_file", {"root": one.as_uri(), "path": "no"})
            assert missing.is_error
            assert "Cannot read 'no'" in text(missing)
            stranger = await client.call_tool(
                "read_file", {"root": tmp_path.as_uri(), "path": "secret.txt"}
            )
            assert stranger.is_error
            assert "not one of the client's roots" in text(stranger)


async def test_symlink_out_of_a_root_is_refused(tmp_path: Path) -> None:
    one, _ = tree(tmp_path)
    (one / "link.txt").symlink_to(tmp_path / "secret.txt")
    with trio.fail_after(BOUND):
        async with connect_memory(roots_server.app, roots=[Root(uri=one.as_uri())]) as client:
            refused = await client.call_tool(
                "read_file", {"root": one.as_uri(), "path": "link.txt"}
            )
    assert refused.is_error
    assert "outside the root" in text(refused)


async def test_roots_change_is_fetched_and_announced(tmp_path: Path) -> None:
    one, two = tree(tmp_path)
    logs: list[LoggingMessageNotificationParams] = []
    announced = trio.Event()

    def on_log(params: LoggingMessageNotificationParams) -> None:
        logs.append(params)
        announced.set()

    with trio.fail_after(BOUND):
        async with connect_memory(
            roots_server.app, roots=[Root(uri=one.as_uri())], on_log_message=on_log
        ) as client:
            before = listing(await client.call_tool("list_files"))
            assert [e["root"] for e in before] == [one.as_uri()]
            await client.set_roots([Root(uri=two.as_uri())])
            await announced.wait()
            assert logs[0].logger == "roots"
            assert logs[0].data == {"roots": [two.as_uri()]}
            after = listing(await client.call_tool("list_files"))
            assert [(e["root"], e["files"]) for e in after] == [(two.as_uri(), ["c.txt"])]


async def test_a_client_without_roots_gets_a_tool_error() -> None:
    with trio.fail_after(BOUND):
        async with connect_memory(roots_server.app) as client:
            result = await client.call_tool("list_files")
    assert result.is_error
    assert "roots" in text(result)


@pytest.mark.parametrize("argv", [["--demo"]])
def test_demo_transcript(argv: list[str]) -> None:
    assert run_example("roots_server", *argv) == [
        "first: ['README.md', 'src/main.py']",
        "README.md: '# first'",
        "escape refused: True",
        "server log: now using ['second']",
        "second: ['notes.txt']",
    ]


async def test_read_file_refuses_a_fifo_and_devices_without_blocking(tmp_path: Path) -> None:
    # Issue 16: read_file on a FIFO inside a root blocked a worker thread forever (opening
    # a FIFO for reading waits for a writer).
    one, _ = tree(tmp_path)
    os.mkfifo(one / "pipe")
    (one / "tty").symlink_to("/dev/zero")  # resolves outside the root: refused as such
    with trio.fail_after(BOUND):
        async with connect_memory(roots_server.app, roots=[Root(uri=one.as_uri())]) as client:
            fifo = await client.call_tool("read_file", {"root": one.as_uri(), "path": "pipe"})
            assert fifo.is_error
            assert text(fifo) == "'pipe' is not a regular file"
            device = await client.call_tool("read_file", {"root": one.as_uri(), "path": "tty"})
            assert device.is_error
            assert text(device) == "'tty' is outside the root"
            folder = await client.call_tool("read_file", {"root": one.as_uri(), "path": "pkg"})
            assert folder.is_error
            assert text(folder) == "'pkg' is not a regular file"


async def test_read_file_returns_at_most_max_read_bytes(tmp_path: Path) -> None:
    one, _ = tree(tmp_path)
    (one / "big.txt").write_text("x" * (roots_server.MAX_READ * 3))
    with trio.fail_after(BOUND):
        async with connect_memory(roots_server.app, roots=[Root(uri=one.as_uri())]) as client:
            big = await client.call_tool("read_file", {"root": one.as_uri(), "path": "big.txt"})
    assert not big.is_error
    assert len(text(big)) == roots_server.MAX_READ


async def test_a_read_that_hangs_is_abandoned_after_the_timeout(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    one, _ = tree(tmp_path)
    release = threading.Event()

    def stalled(top: str, relative: str) -> str:
        release.wait(BOUND)  # a stalled filesystem
        return ""

    monkeypatch.setattr(roots_server, "_read_inside", stalled)
    monkeypatch.setattr(roots_server, "READ_TIMEOUT", 0.2)
    try:
        with trio.fail_after(BOUND):
            async with connect_memory(roots_server.app, roots=[Root(uri=one.as_uri())]) as c:
                hung = await c.call_tool("read_file", {"root": one.as_uri(), "path": "a.py"})
    finally:
        release.set()
    assert hung.is_error
    assert text(hung) == "Reading 'a.py' took longer than 0.2 s"
