"""Benchmarks for trimcp: servers under test and load generators (not part of the package)."""
