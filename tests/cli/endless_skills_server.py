"""A server whose ``skills/list`` never ends, for the CLI tests (`trimcp run
tests/cli/endless_skills_server.py`): every page names one skill and a new cursor. It
answers an error past ``GIVE_UP`` pages, so a client without a page bound fails the test
in seconds instead of paging for ever."""

from __future__ import annotations

from typing import Any

from trimcp import Server
from trimcp.errors import INTERNAL_ERROR, McpError
from trimcp.protocol import skills as wire
from trimcp.server.context import Context
from trimcp.server.extensions import Extension

#: Pages answered before the server stops (far past any client's bound).
GIVE_UP = 1000

app = Server("endless-skills", version="1.0")
extension = Extension(wire.EXTENSION_ID, {}, schemes=(wire.SCHEME,))
pages: list[int] = []


async def endless(ctx: Context) -> dict[str, Any]:
    pages.append(1)
    if len(pages) > GIVE_UP:
        raise McpError(INTERNAL_ERROR, f"endless-skills gave up after {GIVE_UP} pages")
    n = len(pages)
    entry = {"uri": f"skill://s{n}/SKILL.md", "frontmatter": {"name": f"s{n}"}, "resources": []}
    return {"skills": [entry], "nextCursor": f"cursor-{n}"}


extension.add_named(wire.LIST_SKILLS.name, endless)
app.add_extension(extension)
