"""paginate(): pages cover the list exactly once, cursors are opaque and tamper-evident."""

from __future__ import annotations

import base64
import hashlib
import hmac
import string

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from trimcp.errors import INVALID_PARAMS, McpError
from trimcp.protocol.pagination import MAX_CURSOR_LENGTH, paginate

NAMES = st.lists(st.text(string.ascii_lowercase, min_size=1, max_size=6), unique=True, max_size=40)
SIZES = st.integers(min_value=1, max_value=12)


def _ident(name: str) -> str:
    return name


def _all_pages(items: list[str], size: int, *, keyed: bool, salt: str = "") -> list[list[str]]:
    pages: list[list[str]] = []
    cursor: str | None = None
    while True:
        page, cursor = paginate(items, cursor, size, salt=salt, key=_ident if keyed else None)
        pages.append(page)
        if cursor is None:
            return pages
        assert len(pages) <= len(items), "pagination does not terminate"


def _assert_invalid(
    items: list[str], cursor: str, *, keyed: bool = False, salt: str = "", size: int = 3
) -> None:
    with pytest.raises(McpError) as caught:
        paginate(items, cursor, size, salt=salt, key=_ident if keyed else None)
    assert caught.value.code == INVALID_PARAMS
    assert caught.value.message == "Invalid cursor"


# --- the basic contract --------------------------------------------------------------------


@given(NAMES, SIZES, st.booleans(), st.text(max_size=8))
def test_pages_concatenate_to_the_list_exactly_once(
    items: list[str], size: int, keyed: bool, salt: str
) -> None:
    pages = _all_pages(items, size, keyed=keyed, salt=salt)
    assert [item for page in pages for item in page] == items
    assert all(len(page) == size for page in pages[:-1])
    assert 1 <= len(pages[-1]) <= size or items == []
    assert len(pages) == max(1, -(-len(items) // size))


def test_page_size_none_returns_everything_without_a_cursor() -> None:
    items = list(range(10))
    assert paginate(items, None, None) == (items, None)
    page, cursor = paginate(items, None, 4)
    assert (page, cursor is not None) == ([0, 1, 2, 3], True)
    assert cursor is not None
    # A cursor issued earlier still resumes when the server stops paginating.
    assert paginate(items, cursor, None) == ([4, 5, 6, 7, 8, 9], None)


def test_empty_list_and_exact_fit() -> None:
    assert paginate([], None, 5) == ([], None)
    assert paginate([], None, None) == ([], None)
    assert paginate([1, 2], None, 2) == ([1, 2], None)


def test_works_on_any_sequence() -> None:
    page, cursor = paginate(("a", "b", "c"), None, 2)
    assert page == ["a", "b"]
    assert paginate("abc", cursor, 2) == (["c"], None)
    assert paginate(range(5), None, 10) == ([0, 1, 2, 3, 4], None)


@pytest.mark.parametrize("size", [0, -1, True, 2.0, "3"])
def test_bad_page_size_is_a_value_error(size: object) -> None:
    with pytest.raises(ValueError, match="page_size"):
        paginate([1], None, size)  # type: ignore[arg-type]


def test_cursors_are_stable_and_opaque() -> None:
    items = [f"tool{i}" for i in range(10)]
    for keyed in (False, True):
        key = _ident if keyed else None
        _, first = paginate(items, None, 3, salt="s", key=key)
        _, again = paginate(items, None, 3, salt="s", key=key)
        assert first == again
        assert first is not None
        assert set(first) <= set(string.ascii_letters + string.digits + "-_")
        assert "tool" not in first
        _, other_salt = paginate(items, None, 3, salt="t", key=key)
        assert other_salt != first


# --- rejected cursors ----------------------------------------------------------------------

ITEMS = [f"item{i:02d}" for i in range(20)]


@given(st.data(), st.booleans(), SIZES)
def test_any_single_character_change_is_rejected(
    data: st.DataObject, keyed: bool, size: int
) -> None:
    _, cursor = paginate(ITEMS, None, size, key=_ident if keyed else None)
    assert cursor is not None
    index = data.draw(st.integers(min_value=0, max_value=len(cursor) - 1))
    replacement = data.draw(st.sampled_from(string.ascii_letters + string.digits + "-_"))
    assume(replacement != cursor[index])
    tampered = cursor[:index] + replacement + cursor[index + 1 :]
    _assert_invalid(ITEMS, tampered, keyed=keyed)


@pytest.mark.parametrize("keyed", [False, True])
def test_every_other_last_character_is_rejected(keyed: bool) -> None:
    # The last base64 character may carry unused low bits; a decoder that ignores them would
    # accept several spellings of one cursor. Only the issued spelling is valid.
    alphabet = string.ascii_letters + string.digits + "-_"
    for size in range(1, 8):
        _, cursor = paginate(ITEMS, None, size, key=_ident if keyed else None)
        assert cursor is not None
        for replacement in alphabet.replace(cursor[-1], ""):
            _assert_invalid(ITEMS, cursor[:-1] + replacement, keyed=keyed)


@given(st.booleans(), SIZES, st.integers(min_value=1, max_value=40))
def test_truncated_or_extended_cursors_are_rejected(keyed: bool, size: int, cut: int) -> None:
    _, cursor = paginate(ITEMS, None, size, key=_ident if keyed else None)
    assert cursor is not None
    _assert_invalid(ITEMS, cursor[: max(0, len(cursor) - cut)], keyed=keyed)
    _assert_invalid(ITEMS, cursor + "A" * cut, keyed=keyed)


@given(st.text(max_size=60))
def test_arbitrary_strings_are_rejected(junk: str) -> None:
    _assert_invalid(ITEMS, junk)
    _assert_invalid(ITEMS, junk, keyed=True)


@pytest.mark.parametrize(
    "junk",
    ["", "=", "AAAA====", "A", "!!!!", "a b", "abc\n", "é", "\x00", "A" * (MAX_CURSOR_LENGTH + 1)],
)
def test_malformed_cursors_are_rejected(junk: str) -> None:
    _assert_invalid(ITEMS, junk)


def test_cursor_must_come_from_the_same_salt_and_mode() -> None:
    _, offset_cursor = paginate(ITEMS, None, 5, salt="tools/list")
    _, keyed_cursor = paginate(ITEMS, None, 5, salt="tools/list", key=_ident)
    assert offset_cursor is not None
    assert keyed_cursor is not None
    _assert_invalid(ITEMS, offset_cursor, salt="prompts/list")
    _assert_invalid(ITEMS, keyed_cursor, salt="prompts/list", keyed=True)
    _assert_invalid(ITEMS, offset_cursor, salt="tools/list", keyed=True)
    _assert_invalid(ITEMS, keyed_cursor, salt="tools/list")


def _forge(body: bytes, salt: str = "") -> str:
    """A correctly tagged cursor around ``body``: what only the salt's holder can make."""
    tag = hmac.new(salt.encode(), b"trimcp.cursor.v1\x00" + body, hashlib.sha256).digest()[:12]
    return base64.urlsafe_b64encode(tag + body).rstrip(b"=").decode()


def test_forger_helper_matches_issued_cursors() -> None:
    # Guards the tests below: a forged cursor for a real position must be accepted.
    assert paginate(ITEMS, _forge(b"o5"), 2) == (ITEMS[5:7], paginate(ITEMS, None, 7)[1])
    assert paginate(ITEMS, _forge(b"k2:item01"), 1, key=_ident)[0] == ["item02"]


@pytest.mark.parametrize(
    "body",
    [
        b"o21",
        b"o-1",
        b"o+1",
        b"o01",
        b"o 1",
        b"o1_0",
        b"o",
        b"x1",
        b"o1:k",
        b"k1",
        b"p1:x",
        b"o" + b"9" * 19,
        b"",
        b"k1:\xff",
    ],
)
def test_well_tagged_but_bad_bodies_are_rejected(body: bytes) -> None:
    keyed = body[:1] in (b"k", b"p")
    _assert_invalid(ITEMS, _forge(body), keyed=keyed)


def test_offset_past_the_end_is_rejected_but_the_end_itself_is_an_empty_page() -> None:
    _assert_invalid(ITEMS, _forge(b"o21"))
    assert paginate(ITEMS, _forge(b"o20"), 5) == ([], None)
    _, cursor = paginate(ITEMS, None, 15)
    assert cursor is not None
    _assert_invalid(ITEMS[:10], cursor)  # the list shrank below the cursor


# --- lists that change between pages -------------------------------------------------------


@given(
    st.lists(st.integers(0, 10_000), unique=True, min_size=1, max_size=40),
    SIZES,
    st.data(),
)
def test_keyed_mode_returns_every_surviving_item_exactly_once(
    numbers: list[int], size: int, data: st.DataObject
) -> None:
    items = [f"n{n}" for n in numbers]
    original = set(items)
    seen: list[str] = []
    cursor: str | None = None
    fresh = 0
    for _ in range(200):
        page, cursor = paginate(items, cursor, size, key=_ident)
        seen.extend(page)
        if cursor is None:
            break
        # Between pages: remove any item except the last one returned, insert new ones.
        removable = [i for i, item in enumerate(items) if item != page[-1]]
        doomed = data.draw(st.sets(st.sampled_from(removable))) if removable else set()
        for index in sorted(doomed, reverse=True):
            del items[index]
        for _ in range(data.draw(st.integers(0, 3))):
            fresh += 1
            items.insert(data.draw(st.integers(0, len(items))), f"new{fresh}")
    assert cursor is None
    survivors = [item for item in items if item in original]
    for item in survivors:
        assert seen.count(item) == 1, item
    assert len(seen) == len(set(seen))


def test_keyed_mode_resumes_after_the_last_item_wherever_it_moved() -> None:
    items = ["a", "b", "c", "d", "e", "f"]
    page, cursor = paginate(items, None, 2, key=_ident)
    assert page == ["a", "b"]
    assert paginate(["x", "y", "a", "b", "c", "d"], cursor, 2, key=_ident) == (
        ["c", "d"],
        None,
    )
    assert paginate(["b", "d", "e", "f"], cursor, 2, key=_ident)[0] == ["d", "e"]


def test_keyed_mode_when_the_last_item_is_gone() -> None:
    _, cursor = paginate(["a", "b", "c", "d", "e", "f"], None, 3, key=_ident)  # after "c"
    # Sorted by key: resume at the first key after "c".
    assert paginate(["a", "b", "d", "e", "f"], cursor, 3, key=_ident) == (["d", "e", "f"], None)
    assert paginate(["a", "b", "ca", "z"], cursor, 3, key=_ident) == (["ca", "z"], None)
    assert paginate(["a", "b"], cursor, 3, key=_ident) == ([], None)
    # Not sorted: resume at the recorded position, clamped to the end.
    assert paginate(["f", "e", "d", "b", "a"], cursor, 3, key=_ident) == (["b", "a"], None)
    assert paginate(["z", "a"], cursor, 3, key=_ident) == ([], None)


def test_keyed_mode_with_an_oversized_key_resumes_by_position() -> None:
    items = ["a", "x" * 2000, "c", "d"]
    page, cursor = paginate(items, None, 2, key=_ident)
    assert page == ["a", "x" * 2000]
    assert cursor is not None
    assert len(cursor) < 100
    assert paginate(items, cursor, 2, key=_ident) == (["c", "d"], None)
    assert paginate(items[:1], cursor, 2, key=_ident) == ([], None)


def test_offset_mode_shifts_when_items_are_inserted_before_the_cursor() -> None:
    # The documented trade-off of offset mode: an insertion before the cursor repeats one.
    items = ["a", "b", "c", "d"]
    _, cursor = paginate(items, None, 2)
    items.insert(0, "new")
    page, cursor = paginate(items, cursor, 2)
    assert page == ["b", "c"]
    assert paginate(items, cursor, 2) == (["d"], None)
