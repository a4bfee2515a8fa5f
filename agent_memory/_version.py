"""The package version (kept in sync with pyproject.toml)."""

__version__ = "0.1.0"
