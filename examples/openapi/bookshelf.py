"""Bookshelf: a small REST API nobody wrote MCP tools for, and its OpenAPI document, to
try ``trimcp run --openapi`` on (docs/openapi.md; the test suite serves it too).

    python examples/openapi/bookshelf.py --port 8080     # serves until Ctrl-C
    trimcp run --openapi examples/openapi/bookshelf.json --base-url http://127.0.0.1:8080

Books (list with filters, create, get, replace, delete), reviews, authors, loans, a
search, library statistics behind an API key (``X-Api-Key: s3cret-key``), and a few
routes for the tests (the request's headers echoed, a slow answer, a big one, a text
one, a redirect, a crash). Served on loopback with Trio and h11, no web framework, in
the caller's Trio run (:func:`serve`) or in a thread (:func:`served_in_thread`).
``bookshelf.json`` next to this file is ``spec(base_url="http://127.0.0.1:8080")``
written out.
"""

from __future__ import annotations

import contextlib
import json
import queue
import threading
from collections.abc import Iterator
from typing import Any
from urllib.parse import parse_qsl, unquote, urlsplit

import h11
import trio

API_KEY = "s3cret-key"

BOOK = {
    "type": "object",
    "properties": {
        "id": {"type": "integer", "readOnly": True},
        "title": {"type": "string", "description": "the book's title"},
        "author": {"type": "string"},
        "year": {"type": "integer", "nullable": True},
        "tags": {"type": "array", "items": {"type": "string"}},
    },
    "required": ["id", "title", "author"],
}
ERROR = {"type": "object", "properties": {"message": {"type": "string"}}}


def _json(schema: dict[str, Any], description: str = "OK") -> dict[str, Any]:
    return {"description": description, "content": {"application/json": {"schema": schema}}}


def _error(description: str) -> dict[str, Any]:
    return _json({"$ref": "#/components/schemas/Error"}, description)


BOOK_ID = {
    "name": "bookId",
    "in": "path",
    "required": True,
    "schema": {"type": "integer"},
    "description": "the book's id",
}


def spec(openapi: str = "3.0.3", base_url: str | None = None) -> dict[str, Any]:
    """The API's OpenAPI document (``servers`` names ``base_url`` when given)."""
    book = {"$ref": "#/components/schemas/Book"}
    document: dict[str, Any] = {
        "openapi": openapi,
        "info": {
            "title": "Bookshelf",
            "version": "2.1.0",
            "description": "A library's shelf: books, reviews, authors and loans.",
        },
        "paths": {
            "/books": {
                "get": {
                    "operationId": "listBooks",
                    "summary": "List the books on the shelf",
                    "tags": ["books"],
                    "parameters": [
                        {"name": "author", "in": "query", "schema": {"type": "string"}},
                        {
                            "name": "tag",
                            "in": "query",
                            "schema": {"type": "array", "items": {"type": "string"}},
                            "description": "only books with all these tags",
                        },
                        {
                            "name": "limit",
                            "in": "query",
                            "schema": {"type": "integer", "minimum": 1, "default": 20},
                        },
                    ],
                    "responses": {"200": _json({"type": "array", "items": book})},
                },
                "post": {
                    "operationId": "createBook",
                    "summary": "Add a new book to the shelf",
                    "tags": ["books"],
                    "requestBody": {"$ref": "#/components/requestBodies/NewBook"},
                    "responses": {"201": _json(book, "Created"), "400": _error("Bad input")},
                },
            },
            "/books/{bookId}": {
                "parameters": [{"$ref": "#/components/parameters/BookId"}],
                "get": {
                    "operationId": "getBook",
                    "summary": "Get one book by its id",
                    "tags": ["books"],
                    "responses": {"200": _json(book), "404": _error("No such book")},
                },
                "put": {
                    "operationId": "updateBook",
                    "summary": "Replace a book's details",
                    "tags": ["books"],
                    "requestBody": {"$ref": "#/components/requestBodies/NewBook"},
                    "responses": {"200": _json(book), "404": _error("No such book")},
                },
                "delete": {
                    "summary": "Remove a book from the shelf",
                    "tags": ["books"],
                    "responses": {"204": {"description": "Removed"}, "404": _error("No book")},
                },
            },
            "/books/{bookId}/reviews": {
                "parameters": [{"$ref": "#/components/parameters/BookId"}],
                "get": {
                    "operationId": "listReviews",
                    "summary": "Read the reviews of a book",
                    "tags": ["reviews"],
                    "parameters": [
                        {
                            "name": "X-Locale",
                            "in": "header",
                            "schema": {"type": "string"},
                            "description": "the language of the reviews",
                        }
                    ],
                    "responses": {"200": _json({"type": "array", "items": {"type": "object"}})},
                },
                "post": {
                    "operationId": "addReview",
                    "summary": "Review a book with one to five stars",
                    "tags": ["reviews"],
                    "requestBody": {
                        "required": True,
                        "content": {
                            "application/json": {
                                "schema": {
                                    "type": "object",
                                    "properties": {
                                        "stars": {"type": "integer"},
                                        "text": {"type": "string"},
                                    },
                                    "required": ["stars"],
                                }
                            }
                        },
                    },
                    "responses": {"201": _json({"type": "object"}), "400": _error("Bad review")},
                },
            },
            "/authors": {
                "get": {
                    "operationId": "listAuthors",
                    "summary": "List the authors with books on the shelf",
                    "tags": ["authors"],
                    "responses": {"200": _json({"type": "array", "items": {"type": "string"}})},
                }
            },
            "/loans": {
                "post": {
                    "operationId": "borrowBook",
                    "summary": "Lend a book to a library member",
                    "tags": ["loans"],
                    "requestBody": {
                        "required": True,
                        "content": {
                            "application/json": {
                                "schema": {
                                    "type": "object",
                                    "properties": {
                                        "bookId": {"type": "integer"},
                                        "member": {"type": "string"},
                                    },
                                    "required": ["bookId", "member"],
                                }
                            }
                        },
                    },
                    "responses": {"201": _json({"type": "object"}), "409": _error("On loan")},
                }
            },
            "/search": {
                "get": {
                    "operationId": "searchCatalog",
                    "summary": "Search titles and authors for words",
                    "tags": ["books"],
                    "parameters": [
                        {"name": "q", "in": "query", "required": True, "schema": {"type": "string"}}
                    ],
                    "responses": {"200": _json({"type": "array", "items": book})},
                }
            },
            "/stats": {
                "get": {
                    "operationId": "getLibraryStats",
                    "summary": "Count the books and authors (needs the API key)",
                    "tags": ["admin"],
                    "responses": {
                        "200": _json(
                            {
                                "type": "object",
                                "properties": {
                                    "books": {"type": "integer"},
                                    "authors": {"type": "integer"},
                                },
                            }
                        ),
                        "401": _error("No key"),
                    },
                }
            },
            "/debug/headers": {
                "get": {
                    "operationId": "echoHeaders",
                    "summary": "The request headers the API received",
                    "tags": ["internal"],
                    "responses": {"200": _json({"type": "object"})},
                }
            },
        },
        "components": {
            "schemas": {"Book": BOOK, "Error": ERROR},
            "parameters": {"BookId": BOOK_ID},
            "requestBodies": {
                "NewBook": {
                    "required": True,
                    "content": {"application/json": {"schema": book}},
                }
            },
        },
    }
    if base_url is not None:
        document["servers"] = [{"url": base_url}]
    return document


class Bookshelf:
    """The API's state and routes (one instance per test)."""

    def __init__(self) -> None:
        self.books: dict[int, dict[str, Any]] = {
            1: {"id": 1, "title": "Dune", "author": "Frank Herbert", "year": 1965, "tags": []},
            2: {
                "id": 2,
                "title": "The Left Hand of Darkness",
                "author": "Ursula K. Le Guin",
                "year": 1969,
                "tags": ["classic"],
            },
        }
        self.reviews: dict[int, list[dict[str, Any]]] = {}
        self.loans: dict[int, str] = {}
        self.seen: list[tuple[str, str, dict[str, str], bytes]] = []
        self.release_slow = trio.Event()
        #: Connections accepted so far.
        self.connections = 0

    async def route(
        self, method: str, target: str, headers: dict[str, str], body: bytes
    ) -> tuple[int, Any, dict[str, str]]:
        """(status, JSON body or bytes, extra headers)."""
        self.seen.append((method, target, headers, body))
        url = urlsplit(target)
        path = unquote(url.path)
        query = parse_qsl(url.query)
        parts = [part for part in path.split("/") if part]
        data: Any = json.loads(body) if body else {}
        if parts == ["books"] and method == "GET":
            found = list(self.books.values())
            for key, value in query:
                if key == "author":
                    found = [b for b in found if b["author"] == value]
                elif key == "tag":
                    found = [b for b in found if value in b["tags"]]
            limit = dict(query).get("limit")
            return 200, found[: int(limit)] if limit else found, {}
        if parts == ["books"] and method == "POST":
            if not isinstance(data, dict) or not data.get("title") or "id" in data:
                return 400, {"message": "a book needs a title, and no id"}, {}
            book_id = max(self.books, default=0) + 1
            book = {"id": book_id, "tags": [], "year": None, **data}
            self.books[book_id] = book
            return 201, book, {}
        if len(parts) >= 2 and parts[0] == "books":
            if not parts[1].isdigit() or int(parts[1]) not in self.books:
                return 404, {"message": f"no book with id {parts[1]}"}, {}
            book_id = int(parts[1])
            if len(parts) == 2 and method == "GET":
                return 200, self.books[book_id], {}
            if len(parts) == 2 and method == "PUT":
                self.books[book_id] = {"id": book_id, "tags": [], "year": None, **data}
                return 200, self.books[book_id], {}
            if len(parts) == 2 and method == "DELETE":
                del self.books[book_id]
                return 204, b"", {}
            if parts[2:] == ["reviews"] and method == "GET":
                locale = headers.get("x-locale", "en")
                return 200, [{"locale": locale, **r} for r in self.reviews.get(book_id, [])], {}
            if parts[2:] == ["reviews"] and method == "POST":
                stars = data.get("stars") if isinstance(data, dict) else None
                if not isinstance(stars, int) or not 1 <= stars <= 5:
                    return 400, {"error": {"code": 400, "message": "stars must be 1 to 5"}}, {}
                self.reviews.setdefault(book_id, []).append(data)
                return 201, {"book": book_id, "reviews": len(self.reviews[book_id])}, {}
        if parts == ["authors"]:
            return 200, sorted({b["author"] for b in self.books.values()}), {}
        if parts == ["loans"] and method == "POST":
            book_id = data["bookId"]
            if book_id in self.loans:
                return 409, {"detail": f"book {book_id} is already on loan"}, {}
            self.loans[book_id] = data["member"]
            return 201, {"bookId": book_id, "member": data["member"]}, {}
        if parts == ["search"]:
            words = dict(query).get("q", "").lower().split()
            return (
                200,
                [
                    b
                    for b in self.books.values()
                    if all(w in f"{b['title']} {b['author']}".lower() for w in words)
                ],
                {},
            )
        if parts == ["stats"]:
            if headers.get("x-api-key") != API_KEY:
                return 401, {"detail": "missing or wrong X-Api-Key"}, {}
            authors = {b["author"] for b in self.books.values()}
            return 200, {"books": len(self.books), "authors": len(authors)}, {}
        if parts == ["debug", "headers"]:
            return 200, headers, {}
        if parts == ["slow"]:
            await self.release_slow.wait()
            return 200, {"late": True}, {}
        if parts == ["big"]:
            return 200, {"blob": "x" * 3000}, {}
        if parts == ["text"]:
            return 200, b"plain words", {"content-type": "text/plain"}
        if parts == ["moved"]:
            return 302, b"", {"location": "https://elsewhere.example/"}
        if parts == ["crash"]:
            return (
                500,
                b"<html><body>Internal Server Error</body></html>",
                {"content-type": "text/html"},
            )
        return 404, {"message": f"no route for {method} {path}"}, {}

    async def handle(self, stream: trio.abc.Stream) -> None:
        self.connections += 1
        conn = h11.Connection(h11.SERVER)
        try:
            while True:
                request = await _next(conn, stream)
                if not isinstance(request, h11.Request):
                    return
                body = b""
                while True:
                    event = await _next(conn, stream)
                    if isinstance(event, h11.Data):
                        body += event.data
                    elif isinstance(event, h11.EndOfMessage):
                        break
                    else:
                        return
                headers = {k.decode().lower(): v.decode() for k, v in request.headers}
                status, payload, extra = await self.route(
                    request.method.decode(), request.target.decode(), headers, body
                )
                if isinstance(payload, bytes):
                    data = payload
                    kind = extra.pop("content-type", "application/json")
                else:
                    data = json.dumps(payload).encode()
                    kind = "application/json"
                head = [("content-type", kind), *extra.items()]
                if status != 204:
                    head.append(("content-length", str(len(data))))
                await stream.send_all(conn.send(h11.Response(status_code=status, headers=head)))
                if data and status != 204:
                    await stream.send_all(conn.send(h11.Data(data=data)))
                await stream.send_all(conn.send(h11.EndOfMessage()))
                if conn.our_state is h11.MUST_CLOSE:
                    return
                conn.start_next_cycle()
        except (trio.BrokenResourceError, trio.ClosedResourceError, h11.ProtocolError):
            return
        finally:
            await trio.aclose_forcefully(stream)


async def _next(conn: h11.Connection, stream: trio.abc.Stream) -> Any:
    while True:
        event = conn.next_event()
        if event is h11.NEED_DATA:
            conn.receive_data(bytes(await stream.receive_some(65536)))
            continue
        return event


async def serve(shelf: Bookshelf, *, task_status: trio.TaskStatus[str]) -> None:
    """Serve ``shelf`` on a free loopback port; reports its base URL."""
    listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")
    port = listeners[0].socket.getsockname()[1]
    async with trio.open_nursery() as nursery:
        await nursery.start(trio.serve_listeners, shelf.handle, listeners)
        task_status.started(f"http://127.0.0.1:{port}")


@contextlib.contextmanager
def served_in_thread(shelf: Bookshelf | None = None) -> Iterator[str]:
    """The API served by a Trio run in a thread of this process (for a server process
    that calls it): its base URL, then a clean stop. Usable from Trio code too (it
    blocks while the thread starts and stops)."""
    box: queue.Queue[tuple[str, trio.lowlevel.TrioToken, trio.CancelScope]] = queue.Queue()

    async def main() -> None:
        with trio.CancelScope() as scope:
            async with trio.open_nursery() as nursery:
                url = await nursery.start(serve, shelf or Bookshelf())
                box.put((url, trio.lowlevel.current_trio_token(), scope))

    thread = threading.Thread(target=trio.run, args=(main,), daemon=True)
    thread.start()
    url, token, scope = box.get(timeout=30)
    try:
        yield url
    finally:
        token.run_sync_soon(scope.cancel)  # from any thread, a Trio one included
        thread.join(30)


def main() -> None:
    import argparse

    parser = argparse.ArgumentParser(description="serve the Bookshelf REST API on loopback")
    parser.add_argument("--port", type=int, default=8080)
    port = parser.parse_args().port

    async def run() -> None:
        listeners = await trio.open_tcp_listeners(port, host="127.0.0.1")
        print(f"Bookshelf API at http://127.0.0.1:{port} (Ctrl-C stops)", flush=True)
        await trio.serve_listeners(Bookshelf().handle, listeners)

    with contextlib.suppress(KeyboardInterrupt):
        trio.run(run)


if __name__ == "__main__":
    main()
