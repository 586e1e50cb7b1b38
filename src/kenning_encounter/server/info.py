"""The package version, for --version, /healthz and the MCP server info."""

from __future__ import annotations

import kenning_encounter


def package_version() -> str:
    # Held in the package itself (the build reads it from there): asking the installed
    # metadata first scans every distribution on the path, about a hundredth of a start.
    return kenning_encounter.__version__
