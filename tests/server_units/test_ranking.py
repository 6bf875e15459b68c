"""Tool search ranking: the words read from a tool, and BM25 over them."""

from __future__ import annotations

from typing import Any

import pytest

from trimcp.server.ranking import ToolIndex, rank, words
from trimcp.types import Tool


def tool(name: str, description: str = "", **arguments: str) -> Tool:
    properties: dict[str, Any] = {
        arg: {"type": "string", "description": text} for arg, text in arguments.items()
    }
    return Tool(
        name=name,
        description=description or None,
        input_schema={"type": "object", "properties": properties},
    )


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("findPetsByStatus", ["get", "pet", "status"]),
        ("list_all_books", ["list", "list", "book"]),
        ("HTTPServerError", ["http", "server", "error"]),
        ("getV2Items", ["get", "v", "2", "item"]),
        ("Remove the user's categories", ["delet", "user", "category"]),
        ("created, creating, creates", ["creat", "creat", "creat"]),
        ("Ünïcode wörds", ["ünïcod", "wörd"]),
        ("", []),
    ],
)
def test_words(text: str, expected: list[str]) -> None:
    assert words(text) == expected


def test_synonyms_meet_across_spellings() -> None:
    assert words("erase a booking") == words("deleteBooking")
    assert words("fetch an order") == words("getOrder")
    assert words("add a new pet") == ["creat", "creat", "pet"]
    assert words("createPet") == ["creat", "pet"]


def test_the_tool_whose_words_match_ranks_first() -> None:
    tools = [
        tool("listPets", "List every pet in the store", limit="how many"),
        tool("getPetById", "One pet by its id", petId="the pet's id"),
        tool("deleteOrder", "Cancel an order", orderId="the order"),
        tool("getInventory", "Stock counts by status"),
    ]
    assert rank(tools, "remove my order", 3)[0][0].name == "deleteOrder"
    assert rank(tools, "look up one pet by id", 3)[0][0].name == "getPetById"
    assert rank(tools, "inventory", 3)[0][0].name == "getInventory"


def test_a_rare_word_outweighs_a_common_one() -> None:
    tools = [
        tool("a", "pet pet shop"),
        tool("b", "pet grooming"),
        tool("c", "pet food"),
    ]
    # "pet" is everywhere (low IDF); "grooming" is only in b.
    assert rank(tools, "pet grooming", 3)[0][0].name == "b"


def test_the_name_weighs_more_than_the_description() -> None:
    tools = [tool("notes", "write the weather down"), tool("weather", "tomorrow")]
    assert [found.name for found, _ in rank(tools, "weather", 2)] == ["weather", "notes"]


def test_argument_names_count() -> None:
    tools = [tool("lookup", "find a thing", isbn="a book number"), tool("other", "x")]
    assert [found.name for found, _ in rank(tools, "isbn", 5)] == ["lookup"]


def test_no_shared_word_no_result_and_limit_and_ties_keep_order() -> None:
    tools = [tool("alpha", "same words"), tool("beta", "same words"), tool("gamma", "x")]
    assert rank(tools, "unrelated", 5) == []
    assert rank(tools, "the of a", 5) == []  # stop words only
    assert [found.name for found, _ in rank(tools, "same words", 5)] == ["alpha", "beta"]
    assert len(rank(tools, "same words", 1)) == 1


def test_an_empty_index_finds_nothing() -> None:
    assert ToolIndex([]).search("anything", 5) == []
