import trimcp


def test_version_is_exposed() -> None:
    assert trimcp.__version__.count(".") == 2
