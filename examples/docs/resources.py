"""The example of docs/resources.md: a static resource, a template, and an update.

Run it as a stdio server (``python examples/docs/resources.py``), or watch a client use it
in memory (``python examples/docs/resources.py --demo``).
"""

from __future__ import annotations

import sys

import trio

from trimcp.errors import McpError
from trimcp.server import ResourceNotFound, Server

app = Server("notes")
NOTES = {1: "Buy milk", 2: "Call Ann"}


@app.resource("notes://index", mime_type="application/json")
def index() -> dict[str, list[int]]:
    """The ids of all notes."""
    return {"ids": sorted(NOTES)}


@app.resource("notes://{note_id}", mime_type="text/plain")
def note(note_id: int) -> str:
    """One note, by id."""
    if note_id not in NOTES:
        raise ResourceNotFound  # answered with -32002 and this URI
    return NOTES[note_id]


async def edit(note_id: int, text: str) -> None:
    NOTES[note_id] = text
    await app.notify_resource_updated(f"notes://{note_id}")


async def demo() -> None:
    from trimcp.client import connect_memory

    updated = trio.Event()

    def on_updated(uri: str) -> None:
        print("updated:", uri)
        updated.set()

    async with connect_memory(app, on_resource_updated=on_updated) as client:
        for uri in ("notes://index", "notes://2"):
            (contents,) = (await client.read_resource(uri)).contents
            print(contents.mime_type, contents.text)  # type: ignore[union-attr]
        await client.subscribe_resource("notes://2")
        await edit(2, "Call Ann back")
        with trio.fail_after(5):
            await updated.wait()
        try:
            await client.read_resource("notes://3")
        except McpError as exc:
            print(exc.code, exc.message, exc.data)


if __name__ == "__main__":
    if "--demo" in sys.argv:
        trio.run(demo)
    else:
        app.run()
