"""The client's version: sent in its User-Agent, read by client/pyproject.toml."""

VERSION = "0.1.0"
