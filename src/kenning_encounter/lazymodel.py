"""The base of our pydantic models: each is made ready on its first use, not at import.

Pydantic builds a model's validator and serializer when its class is made. Ours
number a few dozen (tool arguments and results, panels, ledgers), and building them
all is about a seventh of what our own modules add to a start-up, though a call
needs only its own few, and a stdio client starts the server for a handful of
calls. ``defer_build`` moves each build to the model's first validation,
serialization or schema (pydantic then builds the models it holds with it). Tool calls
run on worker threads, so a first use may come from several at once: pydantic builds
under a lock from 2.14 (before it, a second thread could validate with the base class's
validator while the first built), hence the floor in pyproject.toml.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class LazyModel(BaseModel):
    model_config = ConfigDict(defer_build=True)
