"""UriTemplate.match does work linear in the URI (ROBUSTNESS 21), counted, not timed.

The matcher counts, in ``_Work.units``, every character it hands to a C-level scan
(``str.find``, a one-character-class regex search, ``split``, decoding) and every Python
loop step; none of those scans can backtrack. These tests bound that count by a small
multiple of ``len(uri) + len(template)`` on inputs built to make a backtracking matcher
explode. ``benchmarks/uri_template_micro.py`` times the same inputs.
"""

from __future__ import annotations

import string

import pytest
from hypothesis import given
from hypothesis import strategies as st

from trimcp.server.uri_template import UriTemplate, _Work

FACTOR = 6


def _cost(template: UriTemplate, uri: str) -> tuple[object, int]:
    work = _Work()
    result = template._match(uri, work)
    return result, work.units


def _assert_linear(template: UriTemplate, uri: str) -> object:
    result, units = _cost(template, uri)
    assert units <= FACTOR * (len(uri) + len(template.template)) + 16, units
    return result


ADJACENT = "".join("{" + op + name + "}" for op, name in zip("+.+.+.+.", "abcdefgh", strict=True))
MANY = "/".join(f"{{v{i}}}" for i in range(300))

ADVERSARIAL = [
    ("{x}", "a" * 65536, True),
    ("{/x*}", "/" * 50_000, True),
    ("{x}", "," * 50_000, True),
    ("{x,y,z}", "," * 50_000, True),
    ("{x*}", "," * 50_000, True),
    ("{.x*}", "." * 50_000, True),
    ("{;x*}", ";x" * 30_000, True),
    ("{?x*}", "?" + "x=1&" * 12_000 + "x=1", True),
    ("{?x}", "?" + "&" * 50_000, False),
    ("{?x,y}", "?" + "x=1&" * 12_000, False),
    ("{x}a{y}a{z}a{w}", "a" * 65536, True),
    ("{x}a{y}a{z}a{w}b", "a" * 65536, False),
    ("{a}-{b}-{c}-{d}-{e}-{f}", "-" * 65536, True),
    ("{a}-{b}-{c}-{d}-{e}-{f}/", "-" * 65536, False),
    ("".join("{" + c + "}" for c in string.ascii_lowercase), "x" * 65536, True),
    (ADJACENT, "." * 65536, True),
    ("{x}" + "a" * 99 + "b{y}", "a" * 65536, False),
    ("{x}" + "a" * 99 + "b{y}", "a" * 65000 + "b", True),
    ("{/a}{/b}{/c}{/d}{/e}", "/" * 50_000, True),
    ("{x:5}", "%41" * 20_000, False),
    ("{x}", "%" * 65536, True),
    ("{x}", "%C3%A9" * 10_000, True),
    (MANY, "/" * 50_000, False),
    (MANY, "a/" * 299 + "b" * 60_000, True),
    ("{+p}{?q}", "a" * 60_000 + "?q=" + "b" * 5000, True),
    ("{#f}", "#" * 65535, True),
]


@pytest.mark.parametrize(("template", "uri", "matches"), ADVERSARIAL)
def test_adversarial_inputs_cost_linear_work(template: str, uri: str, matches: bool) -> None:
    assert len(uri) <= 65536
    result = _assert_linear(UriTemplate(template), uri)
    assert (result is not None) == matches


def test_work_doubles_when_the_uri_doubles() -> None:
    # If matching were quadratic, doubling the URI would quadruple the work.
    template = UriTemplate("{a}-{b}-{c}/{x*}")
    _, small = _cost(template, "-" * 8000 + "/" + "," * 8000)
    _, large = _cost(template, "-" * 16000 + "/" + "," * 16000)
    assert large <= 2.2 * small


def test_counter_is_not_vacuous() -> None:
    _, units = _cost(UriTemplate("{/x*}"), "/a" * 1000)
    assert units >= 2000


TEMPLATES = st.sampled_from(
    ["{x}", "{a}{b}", "{x}-{y}.{z}", "{/p*}{?q,r*}", "{.a,b}{;c*}", "a{+x}b{#y}", "{x:3}/{x}"]
)


@given(TEMPLATES, st.text(st.sampled_from("ab-./?#&=;,%2C"), max_size=200))
def test_arbitrary_inputs_cost_linear_work(template: str, uri: str) -> None:
    _assert_linear(UriTemplate(template), uri)
