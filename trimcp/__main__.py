"""``python -m trimcp``: the ``trimcp`` command."""

from trimcp.cli import main

if __name__ == "__main__":
    raise SystemExit(main())
