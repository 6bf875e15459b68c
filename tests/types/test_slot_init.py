"""Wire classes' ``__init__`` (made at first use, storing through the slots' setters)
behaves as attrs' own: the same signature, the same frozen objects, the same errors."""

from __future__ import annotations

import inspect
import subprocess
import sys
from typing import Any

import attrs
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import trimcp.types as t
from tests.types.strategies import instances, wire_classes


def _attrs_signature(cls: type) -> inspect.Signature:
    """The signature attrs gives ``cls``: keyword-only fields in order, with defaults."""
    params = [
        inspect.Parameter(
            f.name,
            inspect.Parameter.KEYWORD_ONLY,
            default=inspect.Parameter.empty if f.default is attrs.NOTHING else f.default,
            annotation=f.type,
        )
        for f in attrs.fields(cls)
    ]
    return inspect.Signature(params, return_annotation=None)


@pytest.mark.parametrize("cls", wire_classes(), ids=lambda c: c.__name__)
@settings(max_examples=10, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_made_objects_hold_every_field(cls: type, data: st.DataObject) -> None:
    value = data.draw(instances(cls))
    fields = {f.name: getattr(value, f.name) for f in attrs.fields(cls)}
    again = cls(**fields)
    assert type(again) is cls
    assert again == value
    assert all(getattr(again, name) is field for name, field in fields.items())
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        again.__setattr__(attrs.fields(cls)[0].name, None)
    assert inspect.signature(cls) == _attrs_signature(cls)


def test_defaults_and_errors_are_attrs_own() -> None:
    text = t.TextContent(text="a")
    assert (text.type, text.annotations, text.meta) == ("text", None, None)
    result: Any = t.CallToolResult  # (called wrongly on purpose)
    content: Any = t.TextContent
    with pytest.raises(TypeError, match=r"missing 1 required keyword-only argument: 'content'"):
        result()
    with pytest.raises(TypeError, match=r"unexpected keyword argument 'bogus'"):
        result(content=[], bogus=1)
    with pytest.raises(TypeError, match=r"takes 1 positional argument but 2 were given"):
        content("a")
    assert attrs.evolve(text, text="b") == t.TextContent(text="b")


def test_a_subclass_keeps_its_own_fields() -> None:
    @attrs.frozen(kw_only=True, repr=False, eq=False)
    class Tagged(t.TextContent):
        tag: str = "x"

    made = Tagged(text="a", tag="y")
    assert (made.type, made.text, made.tag) == ("text", "a", "y")
    assert inspect.signature(Tagged) == _attrs_signature(Tagged)
    assert t.TextContent(text="b").text == "b"


def test_the_first_call_and_later_ones_agree() -> None:
    # In a fresh process: the first instantiation goes through the stand-in.
    code = (
        "from trimcp.types import Implementation as I\n"
        "first = I.__init__\n"
        "a = I(name='n', version='1')\n"
        "b = I(name='n', version='1')\n"
        "print(a == b, I.__init__ is not first, I.__init__.__qualname__)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert out.stdout.split() == ["True", "True", "Implementation.__init__"]


def test_a_plain_subclass_is_made_as_itself() -> None:
    """A subclass attrs did not build shares its base's __init__, which stores the fields
    as the base's writable twin only for an instance of the base itself: the subclass's
    instances stay theirs (made as the base, one without a __dict__ would be a TextContent,
    one with a __dict__ refused for its layout)."""

    class Slotted(t.TextContent):
        __slots__ = ()

    class WithDict(t.TextContent):
        pass

    for cls in (Slotted, WithDict):
        made = cls(text="a")
        assert type(made) is cls
        assert (made.type, made.text, made.annotations, made.meta) == ("text", "a", None, None)
    assert type(t.TextContent(text="b")) is t.TextContent
