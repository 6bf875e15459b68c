"""trimcp.protocol.uris: the canonical form of a resource URI (RFC 3986 section 6.2.2)."""

from __future__ import annotations

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from trimcp.protocol.uris import AmbiguousUri, canonical_uri

UNRESERVED = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~"


@pytest.mark.parametrize(
    ("given_uri", "canonical"),
    [
        ("notes://private-plan", "notes://private-plan"),
        ("notes://%70rivate-plan", "notes://private-plan"),
        ("notes://pr%69vate%2dplan", "notes://private-plan"),
        ("NOTES://Private", "notes://Private"),  # the authority of a custom scheme is data
        ("HTTPS://User@EXAMPLE.com:8443/A%2f%7e", "https://User@example.com:8443/A%2F~"),
        ("files://secret%2fkey", "files://secret%2Fkey"),  # a reserved escape stays one
        ("notes://%2570", "notes://%2570"),  # %25 is '%': nothing is decoded twice
        ("notes://pr\u00edvate", "notes://pr%C3%ADvate"),  # an IRI, mapped to a URI
        ("notes://a b", "notes://a%20b"),
        ("notes://a/b?x=../y#..", "notes://a/b?x=../y#.."),  # only the path holds segments
        ("notes://a.b/.c/d.", "notes://a.b/.c/d."),
        ("urn:x:%41", "urn:x:A"),
        ("HTTP:Opaque/Path", "http:Opaque/Path"),  # no authority: no host to lower-case
        ("https:%2F%2FHost/A", "https:%2F%2FHost/A"),
        ("notes:?x=/../y", "notes:?x=/../y"),  # a query from the start: no path at all
        ("notes:#/./", "notes:#/./"),
    ],
)
def test_canonical_forms(given_uri: str, canonical: str) -> None:
    assert canonical_uri(given_uri) == canonical


@pytest.mark.parametrize(
    ("given_uri", "reason"),
    [
        ("notes://a/../private", "'..' path segment"),
        ("notes://../private", "'..' path segment"),
        ("notes://a/./b", "'.' path segment"),
        ("notes://a/%2E%2e/b", "'..' path segment"),
        ("notes://%7", "not followed by two hex digits"),
        ("notes://%zz", "not followed by two hex digits"),
        ("notes://a%", "not followed by two hex digits"),
        ("notes://\ud800", "not valid Unicode"),
        ("a/../private", "'..' path segment"),  # no scheme: still one reading only
        ("../private", "'..' path segment"),
        ("./x", "'.' path segment"),
        ("%2E%2E/private", "'..' path segment"),
    ],
)
def test_ambiguous_uris_are_refused_naming_the_uri(given_uri: str, reason: str) -> None:
    with pytest.raises(AmbiguousUri) as refused:
        canonical_uri(given_uri)
    assert reason in str(refused.value)
    assert repr(given_uri) in str(refused.value)
    assert refused.value.uri == given_uri


_PIECES = [*"aZ09-._~:/?#[]@!$&'()*+,;= %\"<>\\^`{|}\x00\x7f\u00e9\u2603\ud800"]
URI_TEXT = st.lists(
    st.sampled_from([*_PIECES, "%2", "%7e", "%2F", "%25", "%2e", "HTTP://", "notes://"]),
    max_size=30,
).map("".join)


@given(URI_TEXT)
@example("notes://%2570")
@example("HTTP://EX%41MPLE.com/%7e")
def test_canonicalization_is_idempotent(text: str) -> None:
    try:
        once = canonical_uri(text)
    except AmbiguousUri:
        return
    assert canonical_uri(once) == once
    # Nothing left to normalise: every escape is of a non-unreserved byte, in upper case.
    pieces = once.split("%")
    for piece in pieces[1:]:
        assert piece[:2] == piece[:2].upper()
        assert chr(int(piece[:2], 16)) not in UNRESERVED
    assert once.isascii()


@st.composite
def spellings(draw: st.DrawFn, uri: str) -> str:
    """``uri`` with its scheme in any case and any character as a %XX escape (any hex case)."""
    scheme, _, rest = uri.partition(":")
    out = [c.upper() if draw(st.booleans()) else c for c in scheme]
    out.append(":")
    for char in rest:
        if char not in ":/" and draw(st.booleans()):
            hexed = f"{ord(char):02x}"
            out.append("%" + (hexed.upper() if draw(st.booleans()) else hexed))
        else:
            out.append(char)
    return "".join(out)


@given(spellings("notes://private-plan/q_1~x"))
def test_every_spelling_of_a_uri_has_its_canonical_form(spelling: str) -> None:
    assert canonical_uri(spelling) == "notes://private-plan/q_1~x"
