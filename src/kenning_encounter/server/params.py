"""Parameter types shared by the tool groups, described for a model reader."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from kenning_encounter.server.holds import MAX_HANDLE

SessionId = Annotated[
    str,
    Field(
        min_length=1,
        max_length=MAX_HANDLE,
        description="Your session's handle as given at session start (or a new harness "
        "session id, to open a new session). The same session on every call chains your "
        "encounters together. Example: '5d1e7c0a-3f7b-4c8e-9a51-0c2f6b1d9e44~"
        "k3v7q2mxw5rj4nb6tyc2ha7dpe'.",
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
# Referent claims followed on request only (memory/identity.py): nothing merges by name.
SameAs = Annotated[
    bool,
    Field(
        description="Also follow confirmed referent claims (claim_referents): nodes "
        "claimed to be the same thing come with what reached them. Default false: "
        "nothing is ever merged by name.",
    ),
]
# Record time, exact: memory/asof.py reconstructs the memory right after that tick.
AsOf = Annotated[
    int | str | None,
    Field(
        description="Read the memory as it stood right after a past moment: a tick (a whole "
        "number; every write's answer names its tick) or an ISO-8601 time, read as the writes "
        "made by then ('2026-05-01T12:00:00Z'; no zone means UTC). Heads of chains, "
        "statuses and relations as they were then; what came later is absent. Omit for now. "
        "Examples: 42, '2026-05-01T12:00:00Z'.",
    ),
]

# A deliberate read renews what it reads (memory/activation.py): with your session, the
# read is recorded from your open encounter as a consultation of the node.
ConsultedBy = Annotated[
    str | None,
    Field(
        max_length=MAX_HANDLE,
        description="Your session's handle, to record this read as a use of the node (it then "
        "stays in default recall; a node you stop using fades). Omit to read without "
        "recording; a reader face never records. Example: the session_id of your writes.",
    ),
]

IncludeCold = Annotated[
    bool,
    Field(
        description="Also return cold nodes: unused for a long while (3 to 8 half-lives of "
        "the activation setting, 30 days of the memory's work by default), left out of "
        "default recall. Frozen "
        "ones (older still) wait in the operator's review; find_by_name reads any node. "
        "Default false.",
    ),
]
