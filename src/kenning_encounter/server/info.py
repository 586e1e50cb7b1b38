"""The package version, for --version, /healthz and the MCP server info."""

from __future__ import annotations

import functools
from pathlib import Path

DIST = "kenning-encounter"


@functools.cache
def package_version() -> str:
    # importlib.metadata costs more to import than the quick start takes to answer
    # (server/front.py runs before this is first asked).
    from importlib import metadata

    try:
        return metadata.version(DIST)
    except metadata.PackageNotFoundError:
        pass
    # Run from a source checkout without installing: the version is in pyproject.
    import tomllib

    pyproject = Path(__file__).resolve().parents[3] / "pyproject.toml"
    try:
        data = tomllib.loads(pyproject.read_text(encoding="utf-8"))
        return str(data["project"]["version"])
    except (OSError, KeyError, tomllib.TOMLDecodeError):
        return "0+unknown"
