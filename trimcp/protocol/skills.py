"""The Skills extension (SEP-2640, ``io.modelcontextprotocol/skills``) as data.

Sans-IO. A skill is a folder whose root holds ``SKILL.md`` (YAML front matter with at
least ``name`` and ``description``, then Markdown); its files are resources
``skill://<name>/<path>``. ``skills/list`` and ``skills/get`` answer *entries*: the
``SKILL.md`` URI, its front matter as a JSON object, and the manifest of every file
(``uri``, ``digest`` ``sha256:<hex>``, ``size`` in bytes), against which a host verifies
what it reads. ``resources/directory/read`` lists a skill folder's direct children
(sub-folders with mime type ``inode/directory``) when the server declares
``directoryRead``.

Front matter is read by a small reader of the YAML skills use (``key: value`` scalars,
quoted strings, nested mappings by indentation, ``- item`` lists); it refuses anything
else (flow collections, block scalars, anchors) naming the line, rather than guess.
"""

from __future__ import annotations

import hashlib
import re
from typing import Any, Final

from trimcp.protocol.extensions import extension_method
from trimcp.protocol.methods import Method

EXTENSION_ID: Final = "io.modelcontextprotocol/skills"
SCHEME: Final = "skill"
SKILL_FILE: Final = "SKILL.md"
DIRECTORY_MIME: Final = "inode/directory"
MARKDOWN_MIME: Final = "text/markdown"
#: The Agent Skills naming rule: 1-64 lowercase letters, digits and single hyphens.
NAME: Final = re.compile(r"^(?!.*--)[a-z0-9](?:[a-z0-9-]{0,62}[a-z0-9])?$")
#: A skill the SEP says a server should not serve: more files, or more bytes.
MAX_FILES: Final = 512
MAX_TOTAL_BYTES: Final = 16 * 1024 * 1024

LIST_SKILLS: Final[Method[dict[str, Any], dict[str, Any]]] = extension_method("skills/list")
GET_SKILL: Final[Method[dict[str, Any], dict[str, Any]]] = extension_method("skills/get")
READ_DIRECTORY: Final[Method[dict[str, Any], dict[str, Any]]] = extension_method(
    "resources/directory/read"
)


class FrontMatterError(ValueError):
    """``SKILL.md`` has no front matter, or front matter that cannot be read."""


def digest(data: bytes) -> str:
    """The manifest digest of ``data``: ``sha256:`` and the lowercase hex SHA-256."""
    return "sha256:" + hashlib.sha256(data).hexdigest()


def skill_uri(name: str, path: str = SKILL_FILE) -> str:
    """``skill://<name>/<path>``."""
    return f"{SCHEME}://{name}/{path}"


_FENCE = re.compile(r"^---[ \t]*\r?\n(.*?)\r?\n---[ \t]*(?:\r?\n|$)", re.DOTALL)


def split_front_matter(text: str) -> tuple[dict[str, Any], str]:
    """The front matter of a ``SKILL.md`` (as a JSON object) and its body.

    Raises :class:`FrontMatterError` when the text does not open with a ``---`` block,
    the block does not read as a mapping, or ``name``/``description`` are missing."""
    if text.startswith("\ufeff"):
        text = text[1:]
    match = _FENCE.match(text)
    if match is None:
        raise FrontMatterError("SKILL.md must open with front matter between '---' lines")
    data = parse_yaml(match.group(1))
    for field in ("name", "description"):
        if not isinstance(data.get(field), str) or not data[field]:
            raise FrontMatterError(f"SKILL.md front matter needs a non-empty {field!r}")
    return data, text[match.end() :]


def parse_yaml(source: str) -> dict[str, Any]:
    """A YAML mapping (see the module docs for what is read)."""
    return _Subset(source).mapping()


class _Subset:
    """The YAML subset front matter uses, read line by line."""

    def __init__(self, source: str) -> None:
        self.lines = [
            (len(line) - len(line.lstrip(" ")), line.strip(), number)
            for number, line in enumerate(source.splitlines(), 1)
            if line.strip() and not line.lstrip().startswith("#")
        ]
        self.at = 0

    def mapping(self, indent: int = 0) -> dict[str, Any]:
        result: dict[str, Any] = {}
        while self.at < len(self.lines):
            depth, text, number = self.lines[self.at]
            if depth < indent:
                break
            if depth > indent or ":" not in text or text.startswith("- "):
                raise self._unsupported(number, text)
            key, _, rest = text.partition(":")
            key = _scalar(key.strip(), number)
            self.at += 1
            rest = rest.strip()
            if rest:
                result[str(key)] = _scalar(rest, number)
            elif self.at < len(self.lines) and self.lines[self.at][0] > depth:
                child = self.lines[self.at][0]
                is_list = self.lines[self.at][1].startswith("- ")
                result[str(key)] = self.sequence(child) if is_list else self.mapping(child)
            else:
                result[str(key)] = None
        return result

    def sequence(self, indent: int) -> list[Any]:
        items: list[Any] = []
        while self.at < len(self.lines):
            depth, text, number = self.lines[self.at]
            if depth < indent:
                break
            if depth > indent or not text.startswith("- "):
                raise self._unsupported(number, text)
            items.append(_scalar(text[2:].strip(), number))
            self.at += 1
        return items

    @staticmethod
    def _unsupported(number: int, text: str) -> FrontMatterError:
        return FrontMatterError(
            f"SKILL.md front matter line {number} ({text[:60]!r}) uses YAML beyond what "
            "trimcp reads (key: value, nested keys, '- item' lists); write it in that form"
        )


def _scalar(text: str, number: int) -> Any:
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "\"'":
        inner = text[1:-1]
        return inner.replace("''", "'") if text[0] == "'" else _unescape(inner)
    if text[:1] in "[{|>&*!%@`":
        raise _Subset._unsupported(number, text)
    if " #" in text:
        text = text.split(" #", 1)[0].rstrip()
    lowered = text.lower()
    if lowered in ("true", "false"):
        return lowered == "true"
    if lowered in ("null", "~"):
        return None
    if re.fullmatch(r"[-+]?[0-9]+", text):
        return int(text)
    if re.fullmatch(r"[-+]?(?:[0-9]+\.[0-9]*|\.[0-9]+)(?:[eE][-+]?[0-9]+)?", text):
        return float(text)
    return text


def _unescape(text: str) -> str:
    escapes = {"n": "\n", "t": "\t", '"': '"', "\\": "\\", "/": "/"}
    return re.sub(r"\\(.)", lambda m: escapes.get(m.group(1), m.group(0)), text)
