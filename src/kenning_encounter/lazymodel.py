"""The base of our pydantic models: each is made ready on its first use, not at import.

Pydantic builds a model's validator and serializer when its class is made. Ours
number a few dozen (tool arguments and results, panels, ledgers), and building them
all is a fifth of what our own modules add to a server's start-up, though a call
needs only its own few, and a stdio client starts the server for a handful of
calls. ``defer_build`` moves each build to the model's first validation,
serialization or schema (pydantic then builds the models it holds with it).
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class LazyModel(BaseModel):
    model_config = ConfigDict(defer_build=True)
