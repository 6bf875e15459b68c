"""The held-out check: a REST API nobody wrote tools for, served by
``trimcp run --openapi SPEC --transport http --port N`` and driven by the official SDK's
client in auto mode (tests/peers/sdk_script_client.py): one tool per operation, path,
query and body arguments, API errors as tool errors with the API's message; with
``--tool-search`` the listing is two tools, plain words find the operation, and an
operation that is not listed is still callable by its name. Then what the command refuses
at start."""

from __future__ import annotations

import importlib
import json
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from examples.openapi.bookshelf import API_KEY, served_in_thread, spec
from tests.ci import missing_peer
from tests.cli.support import ROOT, cli, served
from trimcp.server.openapi.operations import METHODS, tool_name

PEER = ROOT / "tests" / "peers" / "sdk_script_client.py"


def sdk(url: str, *steps: list[Any]) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, str(PEER), "--url", url, json.dumps(list(steps))],
        capture_output=True,
        text=True,
        timeout=150,
        check=False,
    )
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
    report: dict[str, Any] = json.loads(done.stdout)
    return report


@contextmanager
def openapi_served(tmp_path: Path, *flags: str) -> Iterator[str]:
    """The bookshelf API in a thread, its document in a file, and ``trimcp run --openapi``
    over HTTP in front of it: the MCP endpoint's URL (the API key is in the environment:
    see the ``api_key`` fixture)."""
    path = tmp_path / "bookshelf.json"
    path.write_text(json.dumps(spec()))
    with served_in_thread() as api:
        yield from served(f"--openapi={path}", "--base-url", api, *flags)


@pytest.fixture(autouse=True)
def api_key(monkeypatch: pytest.MonkeyPatch) -> None:
    """The API's key, where ``trimcp run --openapi`` reads credentials (never argv)."""
    monkeypatch.setenv("TRIMCP_OPENAPI_HEADERS", f"X-Api-Key: {API_KEY}")


def every_operation() -> list[str]:
    """One name per operation of the document, read from it (not from trimcp)."""
    names = []
    for path, item in spec()["paths"].items():
        for method in METHODS:
            if method in item:
                names.append(tool_name(item[method], method, path))
    return names


def test_the_sdk_client_calls_every_kind_of_operation(tmp_path: Path) -> None:
    with openapi_served(tmp_path) as url:
        report = sdk(
            url,
            ["list"],
            ["call", "getBook", {"bookId": 2}],
            ["call", "listBooks", {"author": "Frank Herbert"}],
            ["call", "searchCatalog", {"q": "left hand"}],
            ["call", "createBook", {"title": "Solaris", "author": "Stanisław Lem"}],
            ["call", "getBook", {"bookId": 999}],
            ["call", "addReview", {"bookId": 1, "stars": 9}],
            ["call", "getLibraryStats", {}],
        )
    assert report["protocol_version"] == "2026-07-28"
    assert report["server_info"]["name"] == "Bookshelf"
    listed, book, by_author, search, created, missing, review, stats = report["steps"]
    assert [tool["name"] for tool in listed["tools"]] == every_operation()
    assert len(every_operation()) == 12
    assert book["structured"]["title"] == "The Left Hand of Darkness"  # a path argument
    assert [b["title"] for b in by_author["structured"]["result"]] == ["Dune"]  # a query one
    assert [b["id"] for b in search["structured"]["result"]] == [2]
    assert created["structured"] == {  # a body
        "id": 3,
        "title": "Solaris",
        "author": "Stanisław Lem",
        "tags": [],
        "year": None,
    }
    assert missing["is_error"] is True
    assert missing["text"] == "GET /books/{bookId} failed: HTTP 404 Not Found: no book with id 999"
    assert review["is_error"] is True
    assert review["text"].endswith("HTTP 400 Bad Request: stars must be 1 to 5")
    assert stats["structured"] == {"books": 3, "authors": 3}  # the key from the environment


def test_with_tool_search_the_listing_stays_small(tmp_path: Path) -> None:
    with openapi_served(tmp_path, "--tool-search") as url:
        report = sdk(
            url,
            ["list"],
            ["call", "search_tools", {"query": "remove a book from the shelf"}],
            ["call", "search_tools", {"query": "lend a book to a member", "limit": 1}],
            [
                "call",
                "call_tool",
                {"name": "borrowBook", "arguments": {"bookId": 1, "member": "ann"}},
            ],
            ["call", "getBook", {"bookId": 1}],  # not listed: callable by its name
            ["call", "call_tool", {"name": "getBook", "arguments": {"bookId": 42}}],
        )
    listed, remove, lend, borrowed, hidden, missing = report["steps"]
    assert [tool["name"] for tool in listed["tools"]] == ["search_tools", "call_tool"]
    assert remove["structured"]["tools"][0]["name"] == "delete_books_bookId"
    assert remove["structured"]["tools"][0]["inputSchema"]["required"] == ["bookId"]
    assert [tool["name"] for tool in lend["structured"]["tools"]] == ["borrowBook"]
    assert borrowed["structured"] == {"bookId": 1, "member": "ann"}
    assert hidden["structured"]["title"] == "Dune"
    assert missing["is_error"] is True
    assert missing["text"].endswith("HTTP 404 Not Found: no book with id 42")


# --- refused at start -------------------------------------------------------------------


def test_an_unsupported_operation_is_refused_at_start(tmp_path: Path) -> None:
    document = spec(base_url="http://127.0.0.1:9")
    document["paths"]["/covers"] = {
        "post": {
            "operationId": "uploadCover",
            "requestBody": {"content": {"multipart/form-data": {"schema": {"type": "object"}}}},
            "responses": {"201": {"description": "stored"}},
        }
    }
    path = tmp_path / "api.json"
    path.write_text(json.dumps(document))
    refused = cli("run", "--openapi", str(path))
    assert refused.returncode == 1
    assert "POST /covers: its request body is multipart/form-data; only JSON request bodies" in (
        refused.stderr
    )
    assert "--openapi-skip-unsupported" in refused.stderr
    skipped = cli("run", "--openapi", str(path), "--openapi-skip-unsupported", "--check")
    assert skipped.returncode == 0, skipped.stderr
    assert "trimcp: --openapi: skipped POST /covers" in skipped.stderr
    assert f"'Bookshelf' 2.1.0 loads from {path}" in skipped.stderr


def test_a_yaml_document_is_read(tmp_path: Path) -> None:
    try:
        # PyYAML is optional for users; the test extra brings it (via fastmcp).
        yaml = importlib.import_module("yaml")
    except ImportError:
        missing_peer("PyYAML is not installed", "the test extra installs it")
    path = tmp_path / "api.yaml"
    path.write_text(yaml.safe_dump(spec(base_url="http://127.0.0.1:9")))
    loaded = cli("run", "--openapi", str(path), "--check")
    assert loaded.returncode == 0, loaded.stderr


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["run"], "name the server to run: path/to/server.py[:app], or --openapi SPEC"),
        (["run", "x.py", "--openapi", "api.json"], "give a server to run (x.py) or --openapi"),
        (["run", "--openapi", "missing.json"], "--openapi missing.json: cannot read missing.json"),
        (
            ["run", "--openapi", "http://127.0.0.1:9/api.json"],
            "--openapi http://127.0.0.1:9/api.json: fetching http://127.0.0.1:9/api.json failed",
        ),
    ],
)
def test_what_the_command_refuses(argv: list[str], message: str) -> None:
    refused = cli(*argv)
    assert refused.returncode in (1, 2)
    assert message in refused.stderr
    assert "Traceback" not in refused.stderr
