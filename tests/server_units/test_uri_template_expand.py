"""UriTemplate: parsing, template errors, the value types, and expansion (RFC 6570 examples)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.server_units import rfc6570_cases as rfc
from trimcp.server.uri_template import UriTemplate


@pytest.mark.parametrize(("template", "expected"), rfc.ALL)
def test_rfc_expansion_examples(template: str, expected: str) -> None:
    assert UriTemplate(template).expand(rfc.VALUES) == expected


def test_every_rfc_level_is_covered() -> None:
    assert len(rfc.LEVEL1) == 2
    assert len(rfc.LEVEL2) == 6
    assert len(rfc.LEVEL3) == 16
    operators = {t[t.index("{") + 1] for t, _ in rfc.SECTION3}
    assert set("+#./;?&") <= operators
    assert any(":" in t for t, _ in rfc.SECTION3)
    assert any("*" in t for t, _ in rfc.SECTION3)


def test_attributes() -> None:
    template = UriTemplate("res://{host}/{+path}{?q,host}{#frag}")
    assert template.template == "res://{host}/{+path}{?q,host}{#frag}"
    assert template.variables == ("host", "path", "q", "frag")
    assert template.is_template
    assert str(template) == template.template
    assert repr(template) == "UriTemplate('res://{host}/{+path}{?q,host}{#frag}')"


def test_plain_uri_is_not_a_template() -> None:
    plain = UriTemplate("file:///etc/hosts")
    assert not plain.is_template
    assert plain.variables == ()
    assert plain.expand({}) == "file:///etc/hosts"
    assert plain.match("file:///etc/hosts") == {}
    assert plain.match("file:///etc/hosts2") is None
    assert plain.match("file:///etc/host") is None
    assert not UriTemplate("").is_template
    assert UriTemplate("").match("") == {}
    assert UriTemplate("").match("x") is None


def test_equality_and_hash_follow_the_template_string() -> None:
    a, b, c = UriTemplate("x://{a}"), UriTemplate("x://{a}"), UriTemplate("x://{b}")
    assert a == b
    assert hash(a) == hash(b)
    assert a != c
    assert len({a, b, c}) == 2
    assert a != "x://{a}"


def test_missing_none_and_empty_list_are_undefined() -> None:
    template = UriTemplate("s:{a}{/b}{?c,d}")
    assert template.expand({}) == "s:"
    assert template.expand({"a": None, "b": [], "c": None}) == "s:"
    assert template.expand({"d": ""}) == "s:?d="
    assert template.expand({"a": "", "b": [""], "c": ("1", "2")}) == "s:/?c=1,2"


def test_explode_on_a_string_is_the_string() -> None:
    assert UriTemplate("{/x*}").expand({"x": "a b"}) == "/a%20b"
    assert UriTemplate("{?x*}").expand({"x": "v"}) == "?x=v"


def test_named_list_with_one_empty_member() -> None:
    assert UriTemplate("{;x}").expand({"x": [""]}) == ";x"
    assert UriTemplate("{?x}").expand({"x": [""]}) == "?x="
    assert UriTemplate("{;x*}").expand({"x": ["a", ""]}) == ";x=a;x"
    assert UriTemplate("{?x*}").expand({"x": ["a", ""]}) == "?x=a&x="


def test_values_are_percent_encoded_as_utf8() -> None:
    assert UriTemplate("{x}").expand({"x": "é/ü"}) == "%C3%A9%2F%C3%BC"
    assert UriTemplate("{+x}").expand({"x": "é/ü"}) == "%C3%A9/%C3%BC"
    assert UriTemplate("{x}").expand({"x": "-._~"}) == "-._~"
    assert UriTemplate("{x}").expand({"x": ":/?#[]@!$&'()*+,;="}) == (
        "%3A%2F%3F%23%5B%5D%40%21%24%26%27%28%29%2A%2B%2C%3B%3D"
    )


def test_reserved_expansion_passes_triplets_and_encodes_stray_percent() -> None:
    template = UriTemplate("{+x}")
    assert template.expand({"x": "a%20b"}) == "a%20b"
    assert template.expand({"x": "100%"}) == "100%25"
    assert template.expand({"x": "%zz%4"}) == "%25zz%254"


def test_prefix_counts_characters_not_octets() -> None:
    assert UriTemplate("{x:2}").expand({"x": "éüa"}) == "%C3%A9%C3%BC"
    assert UriTemplate("{x:9999}").expand({"x": "abc"}) == "abc"


def test_literals_outside_the_uri_alphabet_are_encoded() -> None:
    template = UriTemplate("notes://my notes/é{x}")
    assert template.expand({"x": "1"}) == "notes://my%20notes/%C3%A91"
    assert template.match("notes://my%20notes/%C3%A91") == {"x": "1"}
    assert UriTemplate("a%2Fb/{x}").expand({"x": "1"}) == "a%2Fb/1"


@pytest.mark.parametrize(
    "value", [1, 1.5, b"bytes", {"k": "v"}, ["a", 1], [None], {"a", "b"}, object()]
)
def test_bad_value_types_raise_type_error(value: Any) -> None:
    with pytest.raises(TypeError, match="'x'"):
        UriTemplate("{x}").expand({"x": value})


def test_prefix_on_a_list_is_an_error() -> None:
    with pytest.raises(ValueError, match="prefix"):
        UriTemplate("{x:2}").expand({"x": ["abc"]})


def test_lone_surrogate_value_is_a_value_error() -> None:
    with pytest.raises(ValueError, match="not valid Unicode"):
        UriTemplate("{x}").expand({"x": "\ud800"})


@pytest.mark.parametrize(
    ("template", "message"),
    [
        ("x://{a", "unclosed '{' at position 4"),
        ("{", "unclosed '{' at position 0"),
        ("x://{a}/{b", "unclosed '{' at position 8"),
        ("x://a}", "'}' without a matching '{' at position 5"),
        ("{a}}", "'}' without a matching '{' at position 3"),
        ("{a{b}}", "'{' inside an expression at position 2"),
        ("x{}", "empty expression at position 1"),
        ("{=a}", "operator '=' at position 1 is reserved"),
        ("{,a}", "operator ',' at position 1 is reserved"),
        ("{!a}", "operator '!' at position 1 is reserved"),
        ("{@a}", "operator '@' at position 1 is reserved"),
        ("{|a}", "operator '|' at position 1 is reserved"),
        ("{$a}", "bad variable '\\$a'"),
        ("{+}", "bad variable ''"),
        ("{a,}", "bad variable ''"),
        ("{a,,b}", "bad variable ''"),
        ("{a b}", "bad variable 'a b'"),
        ("{a-b}", "bad variable 'a-b'"),
        ("{.a.}", "bad variable 'a.'"),
        ("{a..b}", "bad variable 'a..b'"),
        ("{.a}{/.b}", "bad variable '.b'"),
        ("{a%2}", "bad variable 'a%2'"),
        ("{a:0}", "bad variable 'a:0'"),
        ("{a:10000}", "bad variable 'a:10000'"),
        ("{a:}", "bad variable 'a:'"),
        ("{a:3*}", "bad variable 'a:3\\*'"),
        ("{a*:3}", "bad variable 'a\\*:3'"),
        ("{a**}", "bad variable 'a\\*\\*'"),
        ("{x,y z}", "bad variable 'y z' at position 3"),
        ("100%/{x}", "'%' not followed by two hex digits at position 3"),
        ("a%G0{x}", "'%' not followed by two hex digits at position 1"),
        ("\ud800{x}", "not valid Unicode"),
    ],
)
def test_bad_templates_raise_value_error(template: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        UriTemplate(template)


def test_good_variable_names() -> None:
    template = UriTemplate("{a.b,_1,A%20z,x.y.z:5,l*}")
    assert template.variables == ("a.b", "_1", "A%20z", "x.y.z", "l")
    assert template.expand({"a.b": "1", "A%20z": "2"}) == "1,2"


def test_template_length_limit() -> None:
    long = "x" * 100 + "{a}"
    assert UriTemplate(long, max_length=len(long)).match("x" * 100 + "1") == {"a": "1"}
    with pytest.raises(ValueError, match="limit is 102"):
        UriTemplate(long, max_length=102)
    with pytest.raises(ValueError, match="limit is 8192"):
        UriTemplate("x" * 8193)


def test_template_must_be_a_string() -> None:
    with pytest.raises(TypeError):
        UriTemplate(b"{x}")  # type: ignore[arg-type]


def test_parsing_a_long_template_is_linear() -> None:
    # 2,000 expressions and literals: parsing walks the string once.
    template = UriTemplate("/".join(f"{{v{i}}}" for i in range(1500)), max_length=20_000)
    assert len(template.variables) == 1500
    assert template.match("/".join(str(i) for i in range(1500))) == {
        f"v{i}": str(i) for i in range(1500)
    }
