"""Descriptions from docstrings in the Google, Sphinx and NumPy styles."""

from __future__ import annotations

from trimcp.server.docstrings import parse_docstring


def test_google_style() -> None:
    doc = parse_docstring(
        """Fetch the weather
        for a city.

        Second paragraph.

        Args:
            city (str): The city name,
                spelled out.
            days: How many days.

        Returns:
            days: not a parameter.
        """
    )
    assert doc.summary == "Fetch the weather for a city."
    assert doc.params == {"city": "The city name, spelled out.", "days": "How many days."}


def test_sphinx_style() -> None:
    doc = parse_docstring(
        """Add.

        :param int a: The first
            number.
        :param b: The second.
        :returns: the sum
        """
    )
    assert doc.summary == "Add."
    assert doc.params == {"a": "The first number.", "b": "The second."}


def test_numpy_style() -> None:
    doc = parse_docstring(
        """Scale a value.

        Parameters
        ----------
        value : float
            What to scale.
        factor : float
            By how much.

        Returns
        -------
        float
        """
    )
    assert doc.summary == "Scale a value."
    assert doc.params == {"value": "What to scale.", "factor": "By how much."}


def test_summary_stops_at_a_section_and_empty_docs() -> None:
    assert parse_docstring("Args:\n    x: y").summary is None
    assert parse_docstring("Do it.\nArgs:\n    x: the x").params == {"x": "the x"}
    assert parse_docstring(None).summary is None
    assert parse_docstring("   ").params == {}
