"""The Content-Security-Policy a host builds from an app page's declared ``csp``: only
origins reach it (``scheme://host[:port]``), whatever a server sends.

A server declares origins as strings; the host joins them into a header. A string with a
``;`` adds a directive (``report-uri``), a quoted keyword loosens one (``'unsafe-eval'``),
and CR LF would start another header line. ``Csp.from_wire`` keeps the origins and
drops the rest, naming each dropped value in ``Csp.refused``.
"""

from __future__ import annotations

import re
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from trimcp.protocol.apps_ext import CSP_FIELDS, Csp, csp_source_problem

#: The directives of every header the host builds, in order.
DIRECTIVES = [
    "default-src",
    "script-src",
    "style-src",
    "connect-src",
    "img-src",
    "font-src",
    "media-src",
    "frame-src",
    "object-src",
    "base-uri",
]
#: The fixed sources the host's construction puts in front of the declared ones.
KEYWORDS = {"'none'", "'self'", "'unsafe-inline'", "data:"}
WIRE_KEYS = ["connectDomains", "resourceDomains", "frameDomains", "baseUriDomains"]

HOSTILE = [
    "https://a.example; report-uri https://evil.example/r",
    "'unsafe-eval'",
    "https://a.example\r\nSet-Cookie: x=1",
    "https://a.example\nscript-src *",
    "https://a.example https://b.example",
    "https://a.example,https://b.example",
    "*",
    "https://*",
    "https:",
    "data:",
    "'self'",
    "https://a.example/path",
    "https://a.example:99999",
    "https://a.example:",
    "https://user@a.example",
    "javascript://a.example",
    "https://a..example",
    "https://-a.example",
    "https://a.example.",
    "https://[::1]",
    "https://é.example",
    "",
]
VALID = [
    "https://api.example.com",
    "wss://realtime.example.com",
    "http://localhost:8080",
    "https://*.cloudflare.com",
    "HTTPS://CDN.Example.COM:443",
    "https://10.0.0.1",
    "https://one",
]


def directives(header: str) -> list[list[str]]:
    return [part.split(" ") for part in header.split("; ")]


@pytest.mark.parametrize("value", HOSTILE)
def test_a_declared_value_that_is_no_origin_never_reaches_the_header(value: str) -> None:
    wire = {key: ["https://ok.example", value] for key in WIRE_KEYS}
    csp = Csp.from_wire(wire)
    header = csp.header()
    assert "\r" not in header
    assert "\n" not in header
    assert [d[0] for d in directives(header)] == DIRECTIVES
    assert "report-uri" not in header
    assert "'unsafe-eval'" not in header
    assert csp.connect_domains == ("https://ok.example",)
    assert csp.resource_domains == ("https://ok.example",)
    assert csp.frame_domains == ("https://ok.example",)
    assert csp.base_uri_domains == ("https://ok.example",)
    # Each dropped value is named, with the field it came in.
    assert csp.refused == tuple(f"{key} {value[:100]!r}" for key in WIRE_KEYS)


@pytest.mark.parametrize("value", VALID)
def test_an_origin_is_kept(value: str) -> None:
    csp = Csp.from_wire({"connectDomains": [value], "resourceDomains": value})
    assert csp.connect_domains == (value,)
    assert csp.resource_domains == (value,)
    assert csp.refused == ()
    assert f"connect-src 'self' {value};" in csp.header()


def test_junk_around_the_values_is_named_too() -> None:
    csp = Csp.from_wire({"connectDomains": ["https://one", 3], "frameDomains": {"a": 1}})
    assert csp == Csp(connect_domains=["https://one"])
    assert csp.refused == ("connectDomains 3", "frameDomains {'a': 1}")
    assert Csp.from_wire("connect-src *").refused == ("csp 'connect-src *'",)
    # A flood of junk is counted past the first 20, not copied.
    flood = Csp.from_wire({"connectDomains": ["x"] * 10_000})
    assert flood.refused == (*["connectDomains 'x'"] * 20, "and 9980 more")


@pytest.mark.parametrize("value", HOSTILE)
def test_code_declaring_a_value_that_is_no_origin_is_refused_naming_it(value: str) -> None:
    for field in CSP_FIELDS:
        with pytest.raises(ValueError, match=re.escape(f"{field}: {value[:100]!r}")):
            Csp(**{field: ["https://ok.example", value]})
    assert csp_source_problem(value) is not None


origins = st.builds(
    lambda scheme, wild, labels, port: (
        f"{scheme}://{'*.' if wild else ''}{'.'.join(labels)}"
        + (f":{port}" if port is not None else "")
    ),
    st.sampled_from(["http", "https", "ws", "wss", "HTTPS"]),
    st.booleans(),
    st.lists(st.from_regex(r"[a-z0-9]([a-z0-9-]{0,8}[a-z0-9])?", fullmatch=True), min_size=1),
    st.none() | st.integers(min_value=1, max_value=65535),
)
values: st.SearchStrategy[Any] = (
    origins
    | st.sampled_from(HOSTILE)
    | st.text(max_size=40)
    | st.builds(lambda o, junk: o + junk, origins, st.text(min_size=1, max_size=10))
    | st.integers()
    | st.none()
)
declarations = st.dictionaries(
    st.sampled_from([*WIRE_KEYS, "other"]),
    values | st.lists(values, max_size=6),
    max_size=5,
)


@settings(max_examples=500)
@given(declarations)
def test_whatever_is_declared_the_header_has_the_directives_and_no_line_break(
    wire: dict[str, Any],
) -> None:
    csp = Csp.from_wire(wire)
    header = csp.header()
    assert "\r" not in header
    assert "\n" not in header
    assert header.isascii()
    assert header.isprintable()
    parts = directives(header)
    assert [d[0] for d in parts] == DIRECTIVES
    kept = {*csp.connect_domains, *csp.resource_domains, *csp.frame_domains}
    kept |= set(csp.base_uri_domains)
    for part in parts:
        for source in part[1:]:
            assert source in KEYWORDS or source in kept, (source, header)
    for source in kept:
        assert csp_source_problem(source) is None
        assert not re.search(r"[\s;,'\"]", source)
    # Nothing is lost but what was refused: every declared origin is kept.
    for key in WIRE_KEYS:
        declared = wire.get(key)
        items = declared if isinstance(declared, list) else [declared]
        for item in items:
            if isinstance(item, str) and csp_source_problem(item) is None:
                assert item in kept


@given(origins)
def test_every_origin_of_the_grammar_is_accepted(origin: str) -> None:
    if len(origin.split("://", 1)[1].split(":")[0]) <= 253:
        assert csp_source_problem(origin) is None


@pytest.mark.parametrize(
    "wire",
    [
        {},
        {"connectDomains": ["https://api.example"], "resourceDomains": ["https://cdn.example"]},
        {"frameDomains": []},
        {"frameDomains": ["'self'", "*"]},  # refused: nothing of it is kept
    ],
    ids=["nothing", "other-directives", "empty", "only-refused"],
)
def test_a_page_that_declares_no_frame_origin_may_frame_nothing(wire: dict[str, Any]) -> None:
    """``frame-src 'none'`` by default: not even the page's own origin ('self'), which
    would let it nest the host's other pages."""
    frames = [d for d in directives(Csp.from_wire(wire).header()) if d[0] == "frame-src"]
    assert frames == [["frame-src", "'none'"]]


def test_a_page_may_frame_exactly_the_origins_it_declares() -> None:
    csp = Csp.from_wire({"frameDomains": ["https://a.example", "https://b.example:8443"]})
    frames = [d for d in directives(csp.header()) if d[0] == "frame-src"]
    assert frames == [["frame-src", "https://a.example", "https://b.example:8443"]]


def _host(length: int) -> str:
    """A host name of exactly ``length`` characters (labels of at most 63)."""
    labels: list[str] = []
    left = length
    while left > 63:
        labels.append("a" * 62)
        left -= 63  # the label and its dot
    labels.append("b" * left)
    host = ".".join(labels)
    assert len(host) == length
    return host


def test_a_host_name_of_253_characters_is_the_longest() -> None:
    assert csp_source_problem(f"https://{_host(253)}") is None
    assert csp_source_problem(f"https://*.{_host(251)}") is None  # '*.' counts too
    said = csp_source_problem(f"https://{_host(254)}")
    assert said == "not an origin (a host name has at most 253 characters)"


@pytest.mark.parametrize(("port", "fits"), [(1, True), (65535, True), (0, False), (65536, False)])
def test_ports_are_1_to_65535(port: int, fits: bool) -> None:
    said = csp_source_problem(f"https://app.example:{port}")
    assert said == (None if fits else "not an origin (a port is 1-65535)")


def test_a_refused_value_is_repeated_cut_to_100_characters() -> None:
    with pytest.raises(ValueError, match="connect_domains") as refused:
        Csp(connect_domains=["x" * 300])
    assert repr("x" * 100) + " is not an origin" in str(refused.value)
    csp = Csp.from_wire({"connectDomains": ["y" * 300]})
    assert csp.refused == (f"connectDomains {'y' * 100!r}",)


def test_one_origin_may_be_given_as_a_string() -> None:
    one = Csp(connect_domains="https://api.example", frame_domains="https://f.example")
    assert one == Csp(connect_domains=["https://api.example"], frame_domains=["https://f.example"])
    assert Csp.from_wire({"connectDomains": "https://api.example"}).connect_domains == (
        "https://api.example",
    )


@pytest.mark.parametrize("junk", [19, 20, 21, 45])
def test_refusals_are_named_up_to_20_then_counted(junk: int) -> None:
    csp = Csp.from_wire({"resourceDomains": [f"bad {n}" for n in range(junk)]})
    named = [f"resourceDomains 'bad {n}'" for n in range(min(junk, 20))]
    more = [f"and {junk - 20} more"] if junk > 20 else []
    assert csp.refused == (*named, *more)


def test_declared_base_uris_replace_self() -> None:
    header = Csp(base_uri_domains=["https://b.example"]).header()
    assert header.endswith("; base-uri https://b.example")
    assert Csp().header().endswith("; base-uri 'self'")
