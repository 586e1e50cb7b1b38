"""Parameter types shared by the tool groups, described for a model reader."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

SessionId = Annotated[
    str,
    Field(
        min_length=1,
        max_length=200,
        description="Your harness session id (Claude Code's session_id, given to you at session "
        "start). The same id on every call chains your encounters together. "
        "Example: '5d1e7c0a-3f7b-4c8e-9a51-0c2f6b1d9e44'.",
    ),
]

NodeRef = Annotated[
    str,
    Field(
        min_length=1,
        max_length=200,
        description="A node's name or id. A name finds the live (newest) revision. "
        "Examples: 'retry storm on deploy', 'obs_4f2a9c1e'.",
    ),
]
