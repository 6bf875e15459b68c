"""Regenerate ``examples.json`` from the reference documents trimcp was built from.

The documents (MCP revisions 2024-11-05 to 2025-11-25, as given; kept outside the
repository) quote example messages. ``tests/test_examples_roundtrip.py`` needs only those
JSON objects, so they are shipped here, in document order, and the test runs in any
clone. Run ``python tests/data/seeds/extract.py DOCUMENTS_DIR`` to redo the extraction
after the documents change.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent

#: What each document covers, by the prefix of its file name.
DOCUMENTS = {
    "000": "lifecycle and capabilities (revision 2025-11-25)",
    "001": "architecture, base protocol, transports, utilities, features (2024-11-05)",
    "002": "overview, lifecycle and Streamable HTTP (2025-03-26)",
    "003": "lifecycle in detail (2025-11-25)",
    "004": "base protocol, transports, authorization, cancellation, ping (2025-06-18)",
}


def json_objects(text: str) -> Iterator[dict[str, Any]]:
    """Every top-level JSON object in a document, however it is quoted."""
    # One document renders each line as a list item ("- {"); another has // comments.
    lines = [re.sub(r"^- ?", "", line) for line in text.splitlines()]
    text = "\n".join(line for line in lines if not line.lstrip().startswith("//"))
    decoder = json.JSONDecoder()
    position = 0
    for match in re.finditer(r"^[ \t]*\{", text, re.MULTILINE):
        start = match.end() - 1
        if start < position:
            continue  # inside an object already read
        try:
            value, end = decoder.raw_decode(text, start)
        except json.JSONDecodeError:
            continue
        if isinstance(value, dict):
            position = end
            yield value


def extract(documents: Path) -> dict[str, Any]:
    found: dict[str, Any] = {}
    for path in sorted(documents.glob("*.txt")):
        prefix = path.name[:3]
        found[prefix] = {
            "covers": DOCUMENTS[prefix],
            "objects": list(json_objects(path.read_text())),
        }
    return found


def main() -> None:
    if len(sys.argv) != 2:
        sys.exit("usage: python tests/data/seeds/extract.py DOCUMENTS_DIR")
    examples = extract(Path(sys.argv[1]))
    (HERE / "examples.json").write_text(json.dumps(examples, indent=1, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main()
