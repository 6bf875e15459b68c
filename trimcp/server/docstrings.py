"""Descriptions from docstrings: the summary paragraph and per-parameter text.

Three common styles are understood, because tools are often written long before anyone
thinks of MCP: Google (``Args:`` / ``Arguments:`` / ``Parameters:`` sections), Sphinx
(``:param name: text``) and NumPy (``Parameters`` underlined with dashes). Anything else
is left alone: the summary still works, parameters just get no description.
"""

from __future__ import annotations

import inspect
import re
from typing import Final

import attrs

from trimcp._record import Record

_GOOGLE_HEADERS: Final = frozenset(
    {"args:", "arguments:", "parameters:", "params:", "attributes:", "fields:"}
)
# Any "Word:" line at the section level ends an Args section (Returns:, Raises:, Note:...).
_SECTION: Final = re.compile(r"^[A-Z][A-Za-z ]*:\s*$")
_GOOGLE_ITEM: Final = re.compile(r"^\*{0,2}(\w+)\s*(?:\([^)]*\))?\s*:\s*(.*)$")
_SPHINX_ITEM: Final = re.compile(r"^:param\s+(?:[^:]*\s)?(\w+)\s*:\s*(.*)$")
_NUMPY_ITEM: Final = re.compile(r"^(\w+)\s*(?::.*)?$")


@attrs.frozen(repr=False, eq=False)
class Docstring(Record):
    """What a docstring says: the first paragraph, and one text per documented parameter."""

    summary: str | None
    params: dict[str, str]


def parse_docstring(doc: str | None) -> Docstring:
    """Split ``doc`` into its summary (first paragraph, lines joined) and parameter texts."""
    if not doc or not doc.strip():
        return Docstring(None, {})
    lines = inspect.cleandoc(doc).splitlines()
    summary_lines: list[str] = []
    for line in lines:
        stripped = line.strip()
        if not stripped or _starts_section(lines, line):
            break
        summary_lines.append(stripped)
    summary = " ".join(summary_lines) or None
    params: dict[str, str] = {}
    _google(lines, params)
    _sphinx(lines, params)
    _numpy(lines, params)
    return Docstring(summary, params)


def _starts_section(lines: list[str], line: str) -> bool:
    stripped = line.strip()
    return stripped.lower() in _GOOGLE_HEADERS or stripped.startswith(":param")


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def _google(lines: list[str], params: dict[str, str]) -> None:
    index = 0
    while index < len(lines):
        line = lines[index]
        index += 1
        if line.strip().lower() not in _GOOGLE_HEADERS:
            continue
        base = _indent(line)
        item_indent: int | None = None
        current: str | None = None
        while index < len(lines):
            line = lines[index]
            stripped = line.strip()
            if stripped and _indent(line) <= base:
                break  # dedent: the section is over
            index += 1
            if not stripped:
                continue
            if item_indent is None:
                item_indent = _indent(line)
            match = _GOOGLE_ITEM.match(stripped) if _indent(line) == item_indent else None
            if match:
                current = match.group(1)
                params[current] = match.group(2).strip()
            elif current is not None:
                params[current] = f"{params[current]} {stripped}".strip()


def _sphinx(lines: list[str], params: dict[str, str]) -> None:
    current: str | None = None
    for line in lines:
        stripped = line.strip()
        match = _SPHINX_ITEM.match(stripped)
        if match:
            current = match.group(1)
            params[current] = match.group(2).strip()
        elif stripped.startswith(":") or not stripped:
            current = None
        elif current is not None:
            params[current] = f"{params[current]} {stripped}".strip()


def _is_rule(line: str) -> bool:
    return re.fullmatch(r"-{3,}", line.strip()) is not None


def _numpy(lines: list[str], params: dict[str, str]) -> None:
    for index in range(len(lines) - 1):
        if lines[index].strip() == "Parameters" and _is_rule(lines[index + 1]):
            break
    else:
        return
    base = _indent(lines[index])
    current: str | None = None
    body = lines[index + 2 :]
    for position, line in enumerate(body):
        stripped = line.strip()
        if not stripped:
            continue
        if _indent(line) <= base:
            following = body[position + 1] if position + 1 < len(body) else ""
            if _is_rule(following) or _SECTION.match(stripped):
                return  # the next section ("Returns" + rule, or "Note:")
            match = _NUMPY_ITEM.match(stripped)
            if match is None:
                return
            current = match.group(1)
            params[current] = ""
        elif current is not None:
            params[current] = f"{params[current]} {stripped}".strip()
