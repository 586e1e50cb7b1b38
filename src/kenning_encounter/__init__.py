"""kenning-encounter: persistent, encounter-ordered memory for LLM agents, served over MCP."""

# The package's version, read by the build (pyproject.toml) and by everything that says it.
__version__ = "0.1.0"
