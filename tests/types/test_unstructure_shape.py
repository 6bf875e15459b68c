"""serde's generated unstructure functions write what cattrs' own functions wrote (the
same keys in the same order: the bytes on the wire), for every wire class: required
fields and discriminators always, optional fields only when not None."""

from __future__ import annotations

from typing import Any

import attrs
import pytest
from cattrs.gen import make_dict_unstructure_fn, override
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.types.strategies import instances, wire_classes
from trimcp import serde
from trimcp.protocol.jsonrpc import dump_json


def _cattrs_own(cls: type) -> Any:
    """The unstructure function cattrs generates with the rules serde used to give it."""
    overrides: dict[str, Any] = {
        field.name: override(
            rename=serde.wire_names(cls)[field.name], omit_if_default=field.default is None
        )
        for field in attrs.fields(cls)
    }
    return make_dict_unstructure_fn(
        cls, serde.converter, _cattrs_omit_if_default=False, _cattrs_use_alias=False, **overrides
    )


@pytest.mark.parametrize("cls", wire_classes(), ids=lambda c: c.__name__)
@settings(max_examples=20, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_the_same_bytes_as_cattrs_own_functions(cls: type, data: st.DataObject) -> None:
    value = data.draw(instances(cls))
    assert dump_json(serde.unstructure(value)) == dump_json(_cattrs_own(cls)(value))


def test_unstructure_hook_of_gives_what_unstructure_runs() -> None:
    # The table's own lookup: None until unstructure made the class's function, then
    # that function (encode_answer calls it directly).
    from trimcp.types import CallToolResult, TextContent

    result = CallToolResult(content=[TextContent(text="a")], is_error=False)
    made = serde.unstructure(result)
    hook = serde.unstructure_hook_of(CallToolResult)
    assert hook is not None
    assert hook(result) == made
    assert serde.unstructure_hook_of(list) is None  # not a wire class: unstructure's way
