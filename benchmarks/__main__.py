"""``python -m benchmarks``: the benchmark suite (see ``benchmarks/suite/runner.py``)."""

from benchmarks.suite.runner import main

if __name__ == "__main__":
    raise SystemExit(main())
