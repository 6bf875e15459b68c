"""UriTemplate.match: the documented matching rules, round trips, and bad input."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.server_units import rfc6570_cases as rfc
from trimcp.server.uri_template import UriTemplate


@pytest.mark.parametrize(("template", "uri"), rfc.ALL)
def test_rfc_examples_match_and_rematch(template: str, uri: str) -> None:
    parsed = UriTemplate(template)
    values = parsed.match(uri)
    assert values is not None
    # Same values from the canonical form of the URI (non-exploded lists come back as
    # comma-joined strings, whose commas expansion then encodes).
    assert parsed.match(parsed.expand(values)) == values
    if "," not in uri or all(isinstance(v, list) for v in values.values()):
        assert parsed.expand(values) == uri


@pytest.mark.parametrize(
    ("template", "uri", "expected"),
    [
        # Rule 1: the final literal is anchored at the end.
        ("{name}.json", "a.json.json", {"name": "a.json"}),
        ("{+path}/here", "/here/here", {"path": "/here"}),
        # Rule 2: a run ends at the first occurrence of the literal after it.
        ("{x}-{y}", "a-b-c", {"x": "a", "y": "b-c"}),
        ("{/x}/y{z}", "/yq", {"z": "q"}),
        ("{/x}/y{z}", "/a/yq", {"x": "a", "z": "q"}),
        ("{/x}/y", "/y", {}),
        ("{/x}/y", "/a/y", {"x": "a"}),
        ("up{+path}{var}/here", "up/foo/barvalue/here", {"path": "/foo/barvalue"}),
        # Rule 3: an operator's lead character must be there, or the expression is empty.
        ("s:{/x}{?q}", "s:?q=1", {"q": "1"}),
        ("s:{.x}{#f}", "s:#frag", {"f": "frag"}),
        ("s:{?x}", "s:", {}),
        # Rule 4: earlier expressions take precedence; lead characters and stops end text.
        ("{a}{b}", "xy", {"a": "xy"}),
        ("{x}{.ext}", "file.tar.gz", {"x": "file", "ext": "tar.gz"}),
        ("{/x}{/y}", "/a/b/c", {"x": "a", "y": "b/c"}),
        ("{/x}{/y}", "//b", {"x": "", "y": "b"}),
        ("file:///{+path}{?q}", "file:///a/b?q=1", {"path": "a/b", "q": "1"}),
        ("file:///{+path}{#f}", "file:///a/b?q#f", {"path": "a/b?q", "f": "f"}),
        ("file:///{+path}", "file:///a/b?q=1#f", {"path": "a/b?q=1#f"}),
        ("db://{table}/{id}", "db://users/42", {"table": "users", "id": "42"}),
        ("mail://{user}", "mail://a:b@c!$&'()*+,;=", {"user": "a:b@c!$&'()*+,;="}),
        ("s:{?a}{&b}", "s:?a=1&b=2", {"a": "1", "b": "2"}),
        # Rule 5: splitting and assignment.
        ("{x}", "a,b", {"x": "a,b"}),
        ("{x,y}", "a,b,c", {"x": "a", "y": "b,c"}),
        ("{x,y,z}", "a", {"x": "a"}),
        ("{x*,y}", "a,b,c", {"x": ["a", "b"], "y": "c"}),
        ("{x*,y}", "a", {"x": ["a"]}),
        ("{x,y*}", "a,b,c", {"x": "a", "y": ["b", "c"]}),
        ("{/x*,y*}", "/a/b/c", {"x": ["a", "b"], "y": ["c"]}),
        ("{.file}", ".tar.gz", {"file": "tar.gz"}),
        ("{.a,b}", ".tar.gz.x", {"a": "tar", "b": "gz.x"}),
        ("{?x,y}", "?y=2&x=1", {"x": "1", "y": "2"}),
        ("{?x*,y}", "?x=1&y=2&x=3", {"x": ["1", "3"], "y": "2"}),
        ("{;x,y}", ";y;x=", {"x": "", "y": ""}),
        ("{?x}", "?x", {"x": ""}),
        ("{x}", "", {}),
        ("{+x}", "", {}),
        ("s:{?x}", "s:?", {}),
        ("{#x}", "#", {"x": ""}),
        ("{.x}", ".", {"x": ""}),
        # Rule 6: decoding after splitting; prefixes; repeated variables.
        ("{x,y}", "a%2Cb,c", {"x": "a,b", "y": "c"}),
        ("{/x*}", "/a%2Fb/c", {"x": ["a/b", "c"]}),
        ("{x}", "%C3%A9t%C3%A9", {"x": "été"}),
        ("{x}", "été", {"x": "été"}),
        ("{+x}", "a%20b/c", {"x": "a b/c"}),
        ("{?q}", "?q=a%26b%3Dc", {"q": "a&b=c"}),
        ("{x}", "100%", {"x": "100%"}),
        ("{x}", "%zz%4", {"x": "%zz%4"}),
        ("{x}", "a%2", {"x": "a%2"}),
        ("{x:3}", "abc", {"x": "abc"}),
        ("{x:3}", "%C3%A9%C3%A9%C3%A9", {"x": "ééé"}),
        ("{x}/{x}", "a/a", {"x": "a"}),
        ("{/var:1,var}", "/v/value", {"var": "value"}),
        ("{/var,var:1}", "/value/v", {"var": "value"}),
        ("{x:2}/{x:3}", "ab/abc", {"x": "abc"}),
    ],
)
def test_matching_rules(template: str, uri: str, expected: dict[str, object]) -> None:
    assert UriTemplate(template).match(uri) == expected


@pytest.mark.parametrize(
    ("template", "uri"),
    [
        ("weather://{city}/now", "weather://paris/later"),
        ("weather://{city}/now", "weather://paris/now/"),
        ("weather://{city}/now", "weather://pa/ris/now"),
        ("weather://{city}/now", "weather://paris?x/now"),
        ("weather://{city}/now", "other://paris/now"),
        ("weather://{city}/now", "weather://paris"),
        ("weather://{city}/now", ""),
        ("{x}", "a/b"),
        ("{x}", "a?b"),
        ("{x}", "a#b"),
        ("{.x}", ".a/b"),
        ("{/x}", "/a?b"),
        ("{;x}", ";x=1/"),
        ("{?x}", "?x=1#f"),
        ("{?x}", "?y=1"),
        ("{?x}", "?x=1&y=2"),
        ("{?x}", "?x=1&x=2"),
        ("{?x}", "?x=1&"),
        ("{;x}", ";x;x"),
        ("{/x}", "x"),
        ("{x:3}", "abcd"),
        ("{x:3}", "%C3%A9%C3%A9%C3%A9%C3%A9"),
        ("{x}/{x}", "a/b"),
        ("{x:2}/{x}", "ab/xbc"),
        ("{x}", "%FF"),
        ("{x}", "%e9"),
        ("{x}", "%C3"),
        ("{/x*}", "/ok/%C3%28"),
        ("{?x*}", "?x=%80"),
        ("{x}", "a\ud800"),
        ("{x}", "%41\udfff"),
        ("x-{a}-y", "x-1-"),
        ("{a}.{b}", "ab"),
    ],
)
def test_non_matching_uris(template: str, uri: str) -> None:
    assert UriTemplate(template).match(uri) is None


def test_uri_length_limit() -> None:
    template = UriTemplate("s:{x}")
    uri = "s:" + "a" * 65534
    assert template.match(uri) == {"x": "a" * 65534}
    assert template.match(uri + "a") is None
    assert template.match("s:abc", max_uri_length=4) is None
    assert template.match("s:ab", max_uri_length=4) == {"x": "ab"}


# --- round trips, per operator -------------------------------------------------------------

TEXT = st.text(st.characters(exclude_categories=["Cs"]), max_size=12)
# Reserved expansion passes %XX through, so a "%" in a value does not survive a round trip.
RESERVED_TEXT = st.text(
    st.characters(exclude_categories=["Cs"], exclude_characters="%"), max_size=12
)


def _round_trip(template: str, values: dict[str, str | list[str]]) -> None:
    parsed = UriTemplate(template)
    uri = parsed.expand(values)
    assert parsed.match(uri) == values, uri


@given(st.sampled_from(["s:{x}", "s:{x}/t", "{x}"]), TEXT.filter(bool))
def test_round_trip_simple(template: str, value: str) -> None:
    _round_trip(template, {"x": value})


@given(st.sampled_from(["s:{+x}", "s:{+x}/t", "s:{#x}", "s:{#x}/t"]), RESERVED_TEXT.filter(bool))
def test_round_trip_reserved_and_fragment(template: str, value: str) -> None:
    _round_trip(template, {"x": value})


@given(st.sampled_from(["s:{#x}", "s:{.x}", "s:{/x}", "s:{;x}", "s:{?x}", "s:{&x}"]), TEXT)
def test_round_trip_empty_allowed(template: str, value: str) -> None:
    if template.startswith("s:{#"):
        value = value.replace("%", "")
    _round_trip(template, {"x": value})
    _round_trip(template + "/end", {"x": value})


@given(st.sampled_from(["", "/", ";", "?", "&"]), st.lists(TEXT, min_size=3, max_size=3))
def test_round_trip_several_variables(op: str, values: list[str]) -> None:
    _round_trip("s:{" + op + "a,b,c}", dict(zip("abc", values, strict=True)))


@given(st.sampled_from(["+", "#"]), st.lists(RESERVED_TEXT, min_size=3, max_size=3))
def test_round_trip_several_reserved_variables(op: str, values: list[str]) -> None:
    # The separator "," is reserved and so kept raw: only the last value may hold one.
    values = [v.replace(",", "") for v in values[:2]] + values[2:]
    _round_trip("s:{" + op + "a,b,c}", dict(zip("abc", values, strict=True)))


@given(st.lists(TEXT, min_size=3, max_size=3))
def test_round_trip_several_labels(values: list[str]) -> None:
    # "." is unreserved, so expansion keeps it raw: only the last value may hold one.
    values = [v.replace(".", "") for v in values[:2]] + values[2:]
    _round_trip("s:{.a,b,c}", dict(zip("abc", values, strict=True)))


@given(
    st.sampled_from(["", "+", "#", ".", "/", ";", "?", "&"]),
    st.lists(TEXT, min_size=1, max_size=6),
)
def test_round_trip_exploded_lists(op: str, members: list[str]) -> None:
    if op in "+#":
        members = [m.replace(",", "").replace("%", "") for m in members]
    if op == ".":
        members = [m.replace(".", "") for m in members]
    if op in ("", "+") and members == [""]:
        members = ["", ""]  # a lone empty member expands to nothing, like undefined
    _round_trip("s:{" + op + "x*}", {"x": members})


@given(
    st.sampled_from(["", "/", ";", "?", "&", "."]),
    st.lists(TEXT.map(lambda t: t.replace(".", "")), min_size=1, max_size=4),
)
def test_non_exploded_list_matches_as_joined_string(op: str, members: list[str]) -> None:
    parsed = UriTemplate("s:{" + op + "x}")
    uri = parsed.expand({"x": members})
    if op == "" and members == [""]:
        assert parsed.match(uri) == {}
    else:
        assert parsed.match(uri) == {"x": ",".join(members)}


@given(
    st.sampled_from(["", "+", "#", ".", "/", ";", "?", "&"]),
    RESERVED_TEXT,  # a "." inside a single label value is fine: the last variable takes the rest
    st.integers(min_value=1, max_value=5),
)
def test_round_trip_prefix(op: str, value: str, length: int) -> None:
    parsed = UriTemplate("s:{" + op + f"x:{length}}}")
    expected = value[:length]
    result = parsed.match(parsed.expand({"x": value}))
    assert result == ({} if not expected and op in ("", "+") else {"x": expected})


@given(
    st.fixed_dictionaries(
        {},
        optional={
            "a": TEXT,
            "b": st.lists(TEXT, min_size=1, max_size=3),
            "c": TEXT,
        },
    )
)
def test_round_trip_named_with_undefined_variables(values: dict[str, str | list[str]]) -> None:
    _round_trip("s:{?a,b*,c}", values)
    _round_trip("s:{;a,b*,c}", values)
    _round_trip("s:?x=1{&a,b*,c}", values)


@given(
    st.fixed_dictionaries(
        {"host": TEXT.filter(bool)},
        optional={
            "segments": st.lists(TEXT, min_size=1, max_size=4),
            "q": TEXT,
            "n": TEXT,
            "frag": RESERVED_TEXT,
        },
    )
)
def test_round_trip_composite_template(values: dict[str, str | list[str]]) -> None:
    _round_trip("https://{host}/api{/segments*}{?q,n}{#frag}", values)


# --- arbitrary URIs: never an exception, and matching is idempotent ------------------------

TEMPLATES = [
    "{x}",
    "s:{x}/{y}",
    "{a}{b}",
    "{x}{.ext}",
    "{x,y*}",
    "{/p*}{?q,r*}",
    "{.a,b}",
    "{;a,b*}",
    "t{&a}",
    "{x:2}/{x}",
    "pre/{a}-{b}.json",
    "{/x}/y{z}",
]
URI_TEXT = st.text(st.sampled_from("ab/?#&=;.,-%2CFé\ud800"), max_size=30)


@given(st.sampled_from(TEMPLATES), URI_TEXT)
def test_match_is_idempotent_on_arbitrary_uris(template: str, uri: str) -> None:
    parsed = UriTemplate(template)
    values = parsed.match(uri)
    if values is not None:
        canonical = parsed.expand(values)
        assert parsed.match(canonical) == values
        assert parsed.expand(values) == canonical


@given(st.sampled_from(["{+x}", "a{#x}b", "{+x,y}"]), URI_TEXT)
def test_reserved_match_never_raises(template: str, uri: str) -> None:
    values = UriTemplate(template).match(uri)
    assert values is None or all(isinstance(v, str) for v in values.values())
