"""The fuzz run of tests/e2e/test_fuzz.py on Neo4j, where the server, not the engine's
schema, holds the rules. Here, not beside it: the e2e tests clear our settings from the
environment (the test Neo4j's among them), which silently turned this test into a skip
in CI."""

from __future__ import annotations

import anyio
import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.e2e.test_fuzz import CALLS, EXAMPLES, _runs
from tests.support.backends import neo4j_unavailable, open_neo4j_store
from tests.support.fuzz import Tally, fuzz_session

pytestmark = pytest.mark.neo4j


@_runs(max(1, EXAMPLES // 2))
@given(st.data())
def test_tool_calls_fuzzed_keep_a_neo4j_memory_whole(data: st.DataObject) -> None:
    opened = open_neo4j_store()  # a fresh, emptied store per example; the server closes it
    if isinstance(opened, str):
        neo4j_unavailable(opened)
    tally = Tally()
    anyio.run(fuzz_session, data.draw, CALLS, tally, opened)
    assert tally.calls - tally.kinds["seed"] == CALLS
    assert not tally.findings, "\n".join(tally.findings)
