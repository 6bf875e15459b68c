"""How results look: short human-readable text by default, the wire JSON with ``--json``."""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Iterable
from typing import Any

from trimcp.serde import unstructure
from trimcp.types import (
    AudioContent,
    BlobResourceContents,
    CallToolResult,
    EmbeddedResource,
    GetPromptResult,
    ImageContent,
    Prompt,
    ReadResourceResult,
    Resource,
    ResourceLink,
    ResourceTemplate,
    TextContent,
    TextResourceContents,
    Tool,
)


def to_json(value: Any) -> str:
    """The wire form of a typed value (or a list of them), indented for reading."""
    return json.dumps(unstructure(value), indent=2, ensure_ascii=False)


def _first_line(text: str | None, limit: int = 100) -> str:
    line = (text or "").strip().splitlines()[0] if (text or "").strip() else ""
    return line if len(line) <= limit else line[: limit - 3] + "..."


def _columns(rows: Iterable[tuple[str, str]]) -> str:
    rows = list(rows)
    if not rows:
        return ""
    width = min(max(len(left) for left, _ in rows), 48)
    return "\n".join(f"{left:<{width}}  {right}".rstrip() for left, right in rows)


def tool_signature(tool: Tool) -> str:
    """``name(required, [optional])`` from the tool's input schema."""
    properties = tool.input_schema.get("properties")
    names = list(properties) if isinstance(properties, dict) else []
    required = tool.input_schema.get("required")
    needed = set(required) if isinstance(required, list) else set()
    shown = [name if name in needed else f"[{name}]" for name in names]
    return f"{tool.name}({', '.join(shown)})"


def format_tools(tools: list[Tool]) -> str:
    return _columns((tool_signature(t), _first_line(t.description or t.title)) for t in tools)


def format_resources(resources: list[Resource]) -> str:
    def right(r: Resource) -> str:
        parts = [r.title or r.name, f"({r.mime_type})" if r.mime_type else ""]
        if r.description:
            parts.append(f"- {_first_line(r.description)}")
        return " ".join(p for p in parts if p)

    return _columns((r.uri, right(r)) for r in resources)


def format_templates(templates: list[ResourceTemplate]) -> str:
    def right(t: ResourceTemplate) -> str:
        parts = [t.title or t.name, f"({t.mime_type})" if t.mime_type else ""]
        if t.description:
            parts.append(f"- {_first_line(t.description)}")
        return " ".join(p for p in parts if p)

    return _columns((t.uri_template, right(t)) for t in templates)


def format_prompts(prompts: list[Prompt]) -> str:
    def signature(p: Prompt) -> str:
        args = [a.name if a.required else f"[{a.name}]" for a in p.arguments or []]
        return f"{p.name}({', '.join(args)})"

    return _columns((signature(p), _first_line(p.description or p.title)) for p in prompts)


def format_skills(entries: list[dict[str, Any]]) -> str:
    """``skills/list`` entries: name, first line of the description, number of files."""

    def row(entry: dict[str, Any]) -> tuple[str, str]:
        front = entry.get("frontmatter")
        front = front if isinstance(front, dict) else {}
        files = entry.get("resources")
        count = (
            f"({len(files)} file{'' if len(files) == 1 else 's'})"
            if isinstance(files, list)
            else "(files listed on demand)"
        )
        description = _first_line(str(front.get("description") or ""))
        return str(front.get("name") or entry.get("uri")), f"{description} {count}".strip()

    return _columns(row(e) for e in entries)


def _decoded_size(data: str) -> int | None:
    try:
        return len(base64.b64decode(data, validate=True))
    except (binascii.Error, ValueError):
        return None


def _binary(kind: str, mime: str | None, data: str) -> str:
    size = _decoded_size(data)
    amount = f"{size} bytes" if size is not None else "invalid base64"
    return f"[{kind} {mime or 'application/octet-stream'}, {amount}; --json shows the data]"


def format_contents(contents: TextResourceContents | BlobResourceContents) -> str:
    if isinstance(contents, TextResourceContents):
        return contents.text
    return _binary("binary", contents.mime_type, contents.blob)


def format_block(block: Any) -> str:
    """One content block of a tool result or prompt message as text."""
    if isinstance(block, TextContent):
        return block.text
    if isinstance(block, ImageContent):
        return _binary("image", block.mime_type, block.data)
    if isinstance(block, AudioContent):
        return _binary("audio", block.mime_type, block.data)
    if isinstance(block, ResourceLink):
        return f"[resource link {block.uri}" + (f" ({block.name})]" if block.name else "]")
    if isinstance(block, EmbeddedResource):
        return f"[resource {block.resource.uri}]\n{format_contents(block.resource)}"
    return json.dumps(unstructure(block), ensure_ascii=False)


def format_call(result: CallToolResult) -> str:
    """The content blocks of a tool result; the structured content when there are none."""
    parts = [format_block(block) for block in result.content]
    if not parts and result.structured_content is not None:
        parts.append(json.dumps(result.structured_content, indent=2, ensure_ascii=False))
    return "\n".join(parts)


def format_read(result: ReadResourceResult) -> str:
    if len(result.contents) == 1:
        return format_contents(result.contents[0])
    return "\n".join(f"[{c.uri}]\n{format_contents(c)}" for c in result.contents)


def format_prompt(result: GetPromptResult) -> str:
    lines = [f"# {result.description}"] if result.description else []
    lines.extend(f"{m.role}: {format_block(m.content)}" for m in result.messages)
    return "\n".join(lines)


def format_progress(progress: float, total: float | None, message: str | None) -> str:
    """One progress line: ``progress 2/5 (40%) copying``."""
    amount = f"{progress:g}/{total:g}" if total else f"{progress:g}"
    percent = f" ({100 * progress / total:.0f}%)" if total else ""
    return f"progress {amount}{percent}" + (f" {message}" if message else "")
