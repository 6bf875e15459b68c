"""The package version, in a module of its own so that submodules can read it at import."""

__version__ = "0.1.0"
