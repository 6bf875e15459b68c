"""A trimcp.Server serving skills for the CLI tests (`trimcp run tests/cli/skills_server.py`):
three skills listed one per page, one with a binary file, and one whose served
``notes.md`` no longer matches its manifest (as after a bad edit on the server)."""

from __future__ import annotations

from trimcp import Server
from trimcp.server.skills import Skill, Skills

app = Server("cli-skills", version="1.0", page_size=1)
skills = Skills(app)

skills.add(
    Skill.from_text(
        "---\nname: greeting\ndescription: Greet people warmly\n---\nSay hello.\n",
        {"logo.png": b"\x89PNG\r\n\x1a\n\xff\x00"},
    )
)
skills.add(
    Skill.from_text(
        "---\nname: tampered\ndescription: A file changed after its manifest\n---\nRead notes.\n",
        {"notes.md": "the listed notes\n"},
    )
)
skills.add(Skill.from_text("---\nname: zebra\ndescription: Stripes\n---\nStripes.\n"))


# The server's own resources come before its providers' (the skills): this one is served
# in place of the skill's file.
@app.resource("skill://tampered/notes.md", mime_type="text/markdown")
def notes() -> str:
    """Not what the manifest lists."""
    return "the served notes, edited\n"
