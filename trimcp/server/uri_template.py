"""RFC 6570 URI templates: expansion, and matching (the inverse) in linear time.

MCP resource templates (``resources/templates/list``) are RFC 6570 templates; a server needs
both directions: :meth:`UriTemplate.expand` builds a URI from values, and
:meth:`UriTemplate.match` finds the values that produce a URI, to route ``resources/read``.

Supported: levels 1 to 3 (every operator: none, ``+``, ``#``, ``.``, ``/``, ``;``, ``?``,
``&``; several variables per expression) and level 4 for lists: the prefix modifier
``{var:3}`` and the explode modifier ``{var*}``. Not supported: associative-array values
(level 4 "keys"); a value must be a ``str``, a list/tuple of ``str``, or ``None``
(undefined). An empty list is undefined, as the RFC says.

Bad templates raise :class:`ValueError` naming the problem and its position: an unclosed or
unopened brace, a nested brace, an empty expression, a reserved or unknown operator
(``= , ! @ |``), a bad variable name or modifier, a malformed ``%`` escape in a literal, or
a template longer than ``max_length``.

Matching rules
--------------
RFC 6570 defines only expansion, and expansion is not injective (``{a}{b}`` makes ``"xy"``
from ``a="x", b="y"`` and from ``a="xy"``), so matching has to pick one answer. The
template is compiled once into literal and expression parts, and the URI is scanned left to
right once, without backtracking:

1. A literal must appear verbatim (in the percent-encoded form expansion gives it). The
   template's final literal, when the template ends with one, is anchored at the end of the
   URI (so ``{name}.json`` matches ``a.json.json`` with ``name="a.json"``).
2. A run of adjacent expressions ends where the literal after it first occurs, searched
   from where the run starts, so an expression may be empty: ``{/x}/y`` matches ``/y``
   with ``x`` undefined.
3. An expression whose operator has a lead character (``# . / ; ? &``) is empty (its
   variables undefined) when the URI does not continue with that character.
4. Within its run, an expression's text also ends at the next expression's lead character
   (searched after its own), and at any character its operator never emits raw that
   delimits URI parts: ``/ ? #`` for ``{x}``, ``{.x}`` and ``{;x}``; ``? #`` for ``{/x}``;
   ``#`` for ``{?x}`` and ``{&x}``; none for ``{+x}`` and ``{#x}``. Earlier expressions
   take precedence: in ``{a}{b}`` the first takes everything and ``b`` is undefined;
   ``{x}{.ext}`` splits ``file.txt`` at the first dot; ``{+path}{?q}`` stops at ``?``.
   Other reserved characters (``: @ ! $ & ' ( ) * + , ; =``) are accepted raw inside a
   simple value, as lenient clients send them.
5. An expression's text is split on its operator's separator. Unnamed operators assign
   items to variables in order and a non-exploded last variable takes the rest, so ``{x}``
   matches ``a,b`` as ``"a,b"`` and ``{.file}`` matches ``.tar.gz`` as ``"tar.gz"``; an
   exploded variable takes as many items as it can while leaving one for each variable
   after it. Named operators (``; ? &``) accept ``name=value`` items in any order; an
   unknown name, or a repeated name for a non-exploded variable, is no match. Empty text
   for ``{x}`` or ``{+x}`` (and a bare ``?``/``;``/``&``) leaves the variables undefined,
   not ``""``; the caller decides whether a missing variable is acceptable.
6. Values are percent-decoded after splitting, for every operator, so an encoded separator
   (``%2C``, ``%2F``) is data. A malformed ``%`` escape is kept as is; escapes that are not
   UTF-8, and lone surrogates, mean no match. Exploded variables match as ``list[str]``,
   all others as ``str`` (a non-exploded list comes back comma-joined). A prefix variable
   ``{x:n}`` longer than ``n`` characters is no match. A variable used twice must match
   the same value both times, except that a prefix occurrence may show less of it.

So ``match(expand(v)) == v`` when no value contains the text that ends it under rules
1-5 (the next literal or lead character, the separator for a non-last variable) and
``{+x}``/``{#x}`` values contain no ``%`` (expansion passes ``%XX`` through, matching
decodes it). In the other direction ``expand(match(uri))`` is ``uri`` in canonical form
(raw reserved characters in simple values encoded, named items in template order), and
``match`` of that gives the same values again. A URI longer than ``max_uri_length`` never
matches.

Cost: each URI character is handed to a constant number of C-level scans (``str.find``,
a one-character-class regex search, ``str.split``, percent-decoding) and each separator to
one Python loop step, so matching is linear in the URI; ``benchmarks/uri_template_micro.py``
measures it. Nothing here does I/O or can be cancelled part-way.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Final, NamedTuple
from urllib.parse import quote, unquote_to_bytes

__all__ = ["DEFAULT_MAX_LENGTH", "DEFAULT_MAX_URI_LENGTH", "UriTemplate", "UriValue"]

UriValue = str | list[str] | tuple[str, ...] | None
"""A variable's value for expansion: a string, a list of strings, or ``None`` (undefined)."""

DEFAULT_MAX_LENGTH: Final = 8192
DEFAULT_MAX_URI_LENGTH: Final = 65536

# RFC 3986 section 2.2; unreserved characters are what urllib.parse.quote never encodes.
_RESERVED: Final = ":/?#[]@!$&'()*+,;="
_TRIPLET: Final = re.compile(r"(%[0-9A-Fa-f]{2})")
_BAD_PERCENT: Final = re.compile(r"%(?![0-9A-Fa-f]{2})")
# varname = varchar *( ["."] varchar ), varchar = ALPHA / DIGIT / "_" / pct-encoded. Each
# group's characters exclude ".", so the nested repetition cannot backtrack.
_VARSPEC: Final = re.compile(
    r"(?P<name>(?:[A-Za-z0-9_]|%[0-9A-Fa-f]{2})+(?:\.(?:[A-Za-z0-9_]|%[0-9A-Fa-f]{2})+)*)"
    r"(?:(?P<explode>\*)|:(?P<prefix>[1-9][0-9]{0,3}))?"
)


class _Operator(NamedTuple):
    """One row of RFC 6570 Appendix A, plus the characters that end its text when matching."""

    char: str
    first: str
    sep: str
    named: bool
    ifemp: str
    allow_reserved: bool
    stops: str


_OPERATORS: Final[dict[str, _Operator]] = {
    op.char: op
    for op in (
        _Operator("", "", ",", False, "", False, "/?#"),
        _Operator("+", "", ",", False, "", True, ""),
        _Operator("#", "#", ",", False, "", True, ""),
        _Operator(".", ".", ".", False, "", False, "/?#"),
        _Operator("/", "/", "/", False, "", False, "?#"),
        _Operator(";", ";", ";", True, "", False, "/?#"),
        _Operator("?", "?", "&", True, "=", False, "#"),
        _Operator("&", "&", "&", True, "=", False, "#"),
    )
}
_RESERVED_OPERATORS: Final = "=,!@|"


class _VarSpec(NamedTuple):
    name: str
    prefix: int | None
    explode: bool


class _Expression:
    """A compiled ``{...}``; ``bound`` is filled in once the next part is known."""

    __slots__ = ("anchored", "bound", "has_explode", "literal_after", "op", "specs")

    def __init__(self, op: _Operator, specs: tuple[_VarSpec, ...]) -> None:
        self.op = op
        self.specs = specs
        self.has_explode = any(spec.explode for spec in specs)
        # A one-character-class search for where this expression's text ends before the
        # next literal (rule 4 of the module docstring); None: it runs up to that literal.
        self.bound: re.Pattern[str] | None = None
        # The literal after this run of adjacent expressions (None: the template ends), and
        # whether it is the template's final part (then it is anchored at the URI's end).
        self.literal_after: str | None = None
        self.anchored = False


_Part = str | _Expression  # a str part is a literal, already in its expanded (encoded) form


class _NoMatch(Exception):
    """Raised inside matching to abandon the scan; never escapes this module."""


class _Work:
    """Counts characters handed to C-level scans plus Python loop steps (see tests)."""

    __slots__ = ("units",)

    def __init__(self) -> None:
        self.units = 0


class UriTemplate:
    """A parsed RFC 6570 template (see the module docstring for the matching rules).

    Equal and hashed by its template string. Raises :class:`ValueError` for a malformed
    template or one longer than ``max_length`` characters.
    """

    __slots__ = ("_parts", "_template", "_variables")

    def __init__(self, template: str, *, max_length: int = DEFAULT_MAX_LENGTH) -> None:
        if not isinstance(template, str):
            raise TypeError(f"a URI template must be a str, not {type(template).__name__}")
        if len(template) > max_length:
            raise ValueError(
                f"URI template is {len(template)} characters long; the limit is {max_length}"
            )
        self._template = template
        self._parts = _parse(template)
        names: dict[str, None] = {}
        for part in self._parts:
            if isinstance(part, _Expression):
                names.update((spec.name, None) for spec in part.specs)
        self._variables = tuple(names)

    @property
    def template(self) -> str:
        """The template string, as given."""
        return self._template

    @property
    def variables(self) -> tuple[str, ...]:
        """Variable names in order of first appearance, each once."""
        return self._variables

    @property
    def is_template(self) -> bool:
        """False for a plain URI (no ``{...}`` expression)."""
        return bool(self._variables)

    def expand(self, values: Mapping[str, UriValue]) -> str:
        """The URI these values produce; missing names, ``None`` and ``[]`` are undefined.

        Raises :class:`TypeError` for a value that is not a str, list/tuple of str or None,
        and :class:`ValueError` for a list given to a prefix variable (``{x:3}``) or a
        string that cannot be encoded as UTF-8 (a lone surrogate).
        """
        out: list[str] = []
        for part in self._parts:
            out.append(part if isinstance(part, str) else _expand_expression(part, values))
        return "".join(out)

    def match(
        self, uri: str, *, max_uri_length: int = DEFAULT_MAX_URI_LENGTH
    ) -> dict[str, str | list[str]] | None:
        """The variable values that produce ``uri``, or ``None`` when it does not match.

        Only variables present in the URI appear in the result: exploded ones as lists,
        others as strings, percent-decoded. Linear in ``len(uri)``; a URI longer than
        ``max_uri_length`` characters is not matched (returns ``None``).
        """
        if len(uri) > max_uri_length:
            return None
        return self._match(uri, _Work())

    def _match(self, uri: str, work: _Work) -> dict[str, str | list[str]] | None:
        if not uri.isascii():
            try:
                uri.encode("utf-8")  # a lone surrogate: no value could have produced it
            except UnicodeEncodeError:
                return None
        result: dict[str, str | list[str]] = {}
        try:
            end = _scan(self._parts, uri, result, work)
        except _NoMatch:
            return None
        return result if end == len(uri) else None

    def __str__(self) -> str:
        return self._template

    def __repr__(self) -> str:
        return f"UriTemplate({self._template!r})"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, UriTemplate):
            return NotImplemented
        return self._template == other._template

    def __hash__(self) -> int:
        return hash((UriTemplate, self._template))


# --- parsing -------------------------------------------------------------------------------


def _parse(template: str) -> list[_Part]:
    parts: list[_Part] = []
    pos = 0
    while pos < len(template):
        open_at = template.find("{", pos)
        literal_end = len(template) if open_at < 0 else open_at
        if literal_end > pos:
            parts.append(_encode_literal(template, pos, literal_end))
        if open_at < 0:
            break
        close_at = template.find("}", open_at + 1)
        if close_at < 0:
            raise ValueError(f"unclosed '{{' at position {open_at} in URI template {template!r}")
        nested = template.find("{", open_at + 1, close_at)
        if nested >= 0:
            raise ValueError(
                f"'{{' inside an expression at position {nested} in URI template {template!r}"
            )
        parts.append(_parse_expression(template, open_at, close_at))
        pos = close_at + 1
    literal_after: str | None = None
    anchored = False
    for index in range(len(parts) - 1, -1, -1):  # backwards, to know what follows each run
        part = parts[index]
        if isinstance(part, str):
            literal_after = part
            anchored = index == len(parts) - 1
            continue
        following = parts[index + 1] if index + 1 < len(parts) else None
        part.bound = _bound_pattern(part, following)
        part.literal_after = literal_after
        part.anchored = anchored
    return parts


def _encode_literal(template: str, start: int, end: int) -> str:
    text = template[start:end]
    stray = text.find("}")
    if stray >= 0:
        raise ValueError(
            f"'}}' without a matching '{{' at position {start + stray} in URI template {template!r}"
        )
    bad = _BAD_PERCENT.search(text)
    if bad is not None:
        raise ValueError(
            f"'%' not followed by two hex digits at position {start + bad.start()} "
            f"in URI template {template!r}"
        )
    # RFC 6570 section 3.1: characters a URI cannot hold are copied percent-encoded.
    return _quote(text, _RESERVED + "%", template)


def _parse_expression(template: str, open_at: int, close_at: int) -> _Expression:
    body = template[open_at + 1 : close_at]
    if not body:
        raise ValueError(f"empty expression at position {open_at} in URI template {template!r}")
    op_char = body[0]
    if op_char in _RESERVED_OPERATORS:
        raise ValueError(
            f"operator {op_char!r} at position {open_at + 1} is reserved by RFC 6570 "
            f"(URI template {template!r})"
        )
    if op_char in _OPERATORS:  # body is not empty, so this is never the "" operator
        op = _OPERATORS[op_char]
        body = body[1:]
        offset = open_at + 2
    else:
        op = _OPERATORS[""]
        offset = open_at + 1
    specs: list[_VarSpec] = []
    for raw in body.split(","):
        found = _VARSPEC.fullmatch(raw)
        if found is None:
            raise ValueError(
                f"bad variable {raw!r} at position {offset} in URI template {template!r}: "
                "a name is letters, digits, '_', '%XX' and inner '.', optionally followed "
                "by '*' or ':' and a length from 1 to 9999"
            )
        prefix = found.group("prefix")
        specs.append(
            _VarSpec(
                found.group("name"),
                int(prefix) if prefix is not None else None,
                found.group("explode") is not None,
            )
        )
        offset += len(raw) + 1
    return _Expression(op, tuple(specs))


def _bound_pattern(expr: _Expression, following: _Part | None) -> re.Pattern[str] | None:
    chars = set(expr.op.stops)
    if isinstance(following, _Expression):
        chars.update(following.op.first)
    if not chars:
        return None
    return re.compile("[" + "".join(re.escape(c) for c in sorted(chars)) + "]")


# --- expansion -----------------------------------------------------------------------------


def _quote(text: str, safe: str, template: str | None = None) -> str:
    try:
        return quote(text, safe=safe)
    except UnicodeEncodeError as exc:
        where = f"URI template {template!r}" if template is not None else "value"
        raise ValueError(f"{where} contains text that is not valid Unicode: {exc}") from None


def _encode(value: str, allow_reserved: bool) -> str:
    if not allow_reserved:
        return _quote(value, "")
    # Reserved expansion keeps reserved characters and passes %XX triplets through.
    pieces = _TRIPLET.split(value)
    for i in range(0, len(pieces), 2):
        pieces[i] = _quote(pieces[i], _RESERVED)
    return "".join(pieces)


def _expand_expression(expr: _Expression, values: Mapping[str, UriValue]) -> str:
    op = expr.op
    pieces: list[str] = []
    for spec in expr.specs:
        value = values.get(spec.name)
        if value is None:
            continue
        if isinstance(value, str):
            if spec.prefix is not None:
                value = value[: spec.prefix]
            encoded = _encode(value, op.allow_reserved)
            if op.named:
                pieces.append(spec.name + (op.ifemp if not encoded else "=" + encoded))
            else:
                pieces.append(encoded)
            continue
        if not isinstance(value, (list, tuple)) or not all(isinstance(v, str) for v in value):
            raise TypeError(
                f"value of {spec.name!r} must be a str, a list of str or None, not {value!r}"
            )
        if not value:
            continue  # RFC 6570 section 2.3: an empty list is undefined
        if spec.prefix is not None:
            raise ValueError(
                f"the prefix modifier of {spec.name!r} does not apply to a list (RFC 6570 2.4.1)"
            )
        members = [_encode(v, op.allow_reserved) for v in value]
        if spec.explode:
            if op.named:
                pieces.append(
                    op.sep.join(spec.name + (op.ifemp if not m else "=" + m) for m in members)
                )
            else:
                pieces.append(op.sep.join(members))
        else:
            joined = ",".join(members)
            if op.named:
                pieces.append(spec.name + (op.ifemp if not joined else "=" + joined))
            else:
                pieces.append(joined)
    if not pieces:
        return ""
    return op.first + op.sep.join(pieces)


# --- matching ------------------------------------------------------------------------------


def _scan(parts: list[_Part], uri: str, result: dict[str, str | list[str]], work: _Work) -> int:
    """Consume ``uri`` part by part, filling ``result``; return where the scan stopped."""
    pos = 0
    limit: int | None = None  # where the current run of adjacent expressions must end
    for part in parts:
        work.units += 1
        if isinstance(part, str):
            if not uri.startswith(part, pos):
                raise _NoMatch
            work.units += len(part)
            pos += len(part)
            limit = None
            continue
        if limit is None:
            limit = _run_limit(part, uri, pos, work)
        first = part.op.first
        start = pos + len(first)
        if start > limit or (first and not uri.startswith(first, pos)):
            continue  # rule 2 (or the next literal starts right here): expanded to nothing
        end = limit
        if part.bound is not None:
            found = part.bound.search(uri, start, limit)
            if found is not None:
                end = found.start()
            work.units += end - start
        _assign(part, uri[start:end], result, work)
        pos = end
    return pos


def _run_limit(expr: _Expression, uri: str, pos: int, work: _Work) -> int:
    """Where the run of expressions starting with ``expr`` ends: at its following literal."""
    literal = expr.literal_after
    if literal is None:
        return len(uri)
    if expr.anchored:
        limit = len(uri) - len(literal)  # rule 1: the final literal ends the URI
        work.units += len(literal)
        if limit < pos or not uri.endswith(literal):
            raise _NoMatch
        return limit
    limit = uri.find(literal, pos)
    work.units += (len(uri) if limit < 0 else limit + len(literal)) - pos
    if limit < 0:
        raise _NoMatch
    return limit


def _assign(expr: _Expression, body: str, result: dict[str, str | list[str]], work: _Work) -> None:
    op = expr.op
    if not body and (op.named or not op.first):
        return  # rule 4: nothing here, every variable undefined
    work.units += len(body)
    if op.named:
        _assign_named(expr, body, result, work)
        return
    specs = expr.specs
    count = len(specs)
    items = body.split(op.sep) if expr.has_explode else body.split(op.sep, count - 1)
    work.units += len(items)
    taken = 0
    for index, spec in enumerate(specs):
        if taken >= len(items):
            break  # the remaining variables are undefined
        value: str | list[str]
        if spec.explode:
            share = max(1, len(items) - taken - (count - index - 1))
            value = _decode_all(items[taken : taken + share])
            taken += share
        elif index == count - 1:
            value = _decode(op.sep.join(items[taken:]))
            taken = len(items)
        else:
            value = _decode(items[taken])
            taken += 1
        _store(result, spec, value)


def _assign_named(
    expr: _Expression, body: str, result: dict[str, str | list[str]], work: _Work
) -> None:
    specs = {spec.name: spec for spec in expr.specs}
    items = body.split(expr.op.sep)
    work.units += len(items)
    exploded: dict[str, list[str]] = {}
    single: dict[str, str] = {}
    for item in items:
        name, _, raw = item.partition("=")
        spec = specs.get(name)
        if spec is None:
            raise _NoMatch
        if spec.explode:
            exploded.setdefault(name, []).append(_decode(raw))
        elif name in single:
            raise _NoMatch
        else:
            single[name] = _decode(raw)
    for name, text in single.items():
        _store(result, specs[name], text)
    for name, members in exploded.items():
        _store(result, specs[name], members)


def _store(result: dict[str, str | list[str]], spec: _VarSpec, value: str | list[str]) -> None:
    prefix = spec.prefix
    if prefix is not None and isinstance(value, str) and len(value) > prefix:
        raise _NoMatch
    previous = result.get(spec.name)
    if previous is None:
        result[spec.name] = value
        return
    if previous == value:
        return
    # The same name seen twice with different text: only a prefix occurrence ({x:3}) may
    # show less of the value than a full one (RFC 6570's own "{/var:1,var}").
    if not isinstance(value, str) or not isinstance(previous, str):
        raise _NoMatch
    shorter, longer = (previous, value) if len(previous) < len(value) else (value, previous)
    if not longer.startswith(shorter):
        raise _NoMatch
    result[spec.name] = longer


def _decode(text: str) -> str:
    if "%" not in text:
        return text
    try:
        return unquote_to_bytes(text).decode("utf-8")
    except UnicodeDecodeError:
        raise _NoMatch from None


def _decode_all(items: list[str]) -> list[str]:
    if not any("%" in item for item in items):
        return items
    return [_decode(item) for item in items]
