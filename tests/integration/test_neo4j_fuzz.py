"""The fuzz run of tests/e2e/test_fuzz.py on Neo4j, where the server, not the engine's
schema, holds the rules. Here, not beside it: the e2e tests clear NEO4J_* from the
environment, which silently turned this test into a skip in CI."""

from __future__ import annotations

import os

import anyio
import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.e2e.test_fuzz import CALLS, EXAMPLES, _runs
from tests.support.backends import open_neo4j_store
from tests.support.fuzz import Tally, fuzz_session

pytestmark = pytest.mark.neo4j


@_runs(max(1, EXAMPLES // 2))
@given(st.data())
def test_tool_calls_fuzzed_keep_a_neo4j_memory_whole(data: st.DataObject) -> None:
    opened = open_neo4j_store()  # a fresh, emptied store per example; the server closes it
    if isinstance(opened, str):
        if os.environ.get("KENNING_ENCOUNTER_REQUIRE_NEO4J") == "1":
            pytest.fail(f"Neo4j is required here: {opened}")
        pytest.skip(opened)
    tally = Tally()
    anyio.run(fuzz_session, data.draw, CALLS, tally, opened)
    assert tally.calls - tally.kinds["seed"] == CALLS
    assert not tally.findings, "\n".join(tally.findings)
