"""Ranking tools against a few plain words: BM25F over a tool's name, title, description
and arguments, for :class:`~trimcp.server.transforms.ToolSearch`.

Words: each field is split into words at anything that is not a letter or digit and at
camelCase boundaries (``findPetsByStatus`` -> find, pets, by, status), lower-cased,
stripped of common English endings (``pets`` and ``pet``, ``created`` and ``create``
match), and common verbs are folded into one word each (``remove``, ``erase`` ->
``delete``; ``fetch``, ``retrieve`` -> ``get``; ``add``, ``new`` -> ``create``...), so the
words a person would use find the operation an API named. Stop words (``a``, ``the``,
``by``, the ``s`` of ``user's``...) are left out.

Score: BM25 (k1 = 1.2, b = 0.75) over one bag of words per tool in which a word of the
name counts 3 times, of the title or an argument's name 2 times, of the description once
and of an argument's description half: a query word that many tools share weighs little,
a rare one much. Ties keep the tools' listing order. Pure functions, no I/O.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final

from trimcp.types import Tool

K1: Final = 1.2
B: Final = 0.75
#: How much a word counts, by where it appears.
WEIGHTS: Final[Mapping[str, float]] = {
    "name": 3.0,
    "title": 2.0,
    "argument": 2.0,
    "description": 1.0,
    "argument_description": 0.5,
}
#: Text read from one field at most (a huge description does not cost more than this).
MAX_FIELD_CHARS: Final = 4000

_CHUNK = re.compile(r"[^\W_]+")
_CAMEL = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+")
_STOP: Final = frozenset(
    {
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "by",
        "for",
        "from",
        "how",
        "i",
        "in",
        "into",
        "is",
        "it",
        "me",
        "my",
        "of",
        "on",
        "or",
        "our",
        "s",
        "show",
        "t",
        "that",
        "the",
        "this",
        "to",
        "use",
        "using",
        "via",
        "what",
        "which",
        "with",
    }
)
#: Verbs people and APIs spell differently: each group counts as its first word.
_SYNONYMS: Final = (
    "get fetch retrieve read lookup find obtain",
    "list browse enumerate search all",
    "create add new make insert register",
    "update change edit modify patch replace",
    "delete remove erase destroy drop",
)


def _stem(word: str) -> str:
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    if len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "us", "is")):
        word = word[:-1]
    if len(word) > 5 and word.endswith("ing"):
        word = word[:-3]
    elif len(word) > 4 and word.endswith("ed"):
        word = word[:-2]
    if len(word) > 4 and word.endswith("e"):
        word = word[:-1]
    return word


_FOLD: Final[dict[str, str]] = {
    _stem(word): _stem(group.split()[0]) for group in _SYNONYMS for word in group.split()
}


def words(text: str) -> list[str]:
    """The search words of ``text`` (see the module docs)."""
    found: list[str] = []
    for chunk in _CHUNK.findall(text[:MAX_FIELD_CHARS]):
        parts = _CAMEL.findall(chunk) if chunk.isascii() else [chunk]
        for part in parts:
            word = part.lower()
            if word in _STOP:
                continue
            stem = _stem(word)
            found.append(_FOLD.get(stem, stem))
    return found


def tool_fields(tool: Tool) -> dict[str, list[str]]:
    """The words of each field of ``tool``'s definition."""
    fields: dict[str, list[str]] = {
        "name": words(tool.name),
        "title": words(tool.title or ""),
        "description": words(tool.description or ""),
        "argument": [],
        "argument_description": [],
    }
    properties = tool.input_schema.get("properties")
    if isinstance(properties, Mapping):
        for name, schema in properties.items():
            fields["argument"] += words(str(name))
            if isinstance(schema, Mapping) and isinstance(schema.get("description"), str):
                fields["argument_description"] += words(schema["description"])
    return fields


class ToolIndex:
    """The words of a list of tools, ready to rank against queries."""

    def __init__(self, tools: Sequence[Tool]) -> None:
        self.tools = tuple(tools)
        self._counts: list[dict[str, float]] = []
        self._lengths: list[float] = []
        frequency: Counter[str] = Counter()
        for tool in self.tools:
            counts: dict[str, float] = {}
            for field, found in tool_fields(tool).items():
                weight = WEIGHTS[field]
                for word in found:
                    counts[word] = counts.get(word, 0.0) + weight
            self._counts.append(counts)
            self._lengths.append(sum(counts.values()))
            frequency.update(counts.keys())
        total = len(self.tools)
        self._average = (sum(self._lengths) / total) if total else 0.0
        self._idf = {
            word: math.log(1.0 + (total - seen + 0.5) / (seen + 0.5))
            for word, seen in frequency.items()
        }

    def search(self, query: str, limit: int) -> list[tuple[Tool, float]]:
        """The ``limit`` best tools for ``query`` with their scores, best first; tools
        sharing no word with the query are left out."""
        terms = list(dict.fromkeys(words(query)))
        scored: list[tuple[float, int]] = []
        for index, counts in enumerate(self._counts):
            score = _score(terms, counts, self._lengths[index], self._average, self._idf)
            if score > 0.0:
                scored.append((score, index))
        scored.sort(key=lambda pair: (-pair[0], pair[1]))
        return [(self.tools[index], score) for score, index in scored[:limit]]


def _score(
    terms: Iterable[str],
    counts: Mapping[str, float],
    length: float,
    average: float,
    idf: Mapping[str, float],
) -> float:
    score = 0.0
    norm = K1 * (1.0 - B + B * (length / average if average else 0.0))
    for term in terms:
        frequency = counts.get(term)
        if frequency:
            score += idf[term] * frequency * (K1 + 1.0) / (frequency + norm)
    return score


def rank(tools: Sequence[Tool], query: str, limit: int) -> list[tuple[Tool, float]]:
    """:meth:`ToolIndex.search` over ``tools`` at once."""
    return ToolIndex(tools).search(query, limit)


def describe(tool: Tool) -> dict[str, Any]:
    """What a search result says about ``tool``: enough to call it."""
    found: dict[str, Any] = {"name": tool.name}
    if tool.title:
        found["title"] = tool.title
    if tool.description:
        found["description"] = tool.description
    found["inputSchema"] = tool.input_schema
    return found
