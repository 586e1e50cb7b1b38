"""An infusion log entry and an erasure's scrub of the log take turns on Neo4j.

Servers keep serving a Neo4j memory through an erasure. An entry is appended after its
prompt's read, and it leaves out the ids of nodes gone by then; but an entry that looked
before the erasure committed, and committed after the scrub (LOG_FORGET) had looked,
kept the erased ids and the prompt that drew them. The scrub now waits for an entry
being written, and an entry for a scrub under way.
"""

from __future__ import annotations

import threading
from typing import Any

import pytest

from kenning_encounter.memory.service import Memory
from kenning_encounter.store.infusion_log import LogEntry, entry_params, session_tag
from kenning_encounter.store.neo4j.infusion_log import LOG_PUT

pytestmark = pytest.mark.neo4j

SESSION = "log-turns"


def _entry(node_id: str) -> LogEntry:
    return LogEntry(
        key="in-flight",
        session=SESSION,
        at=1.0,
        turn=1,
        channel="lexical",
        degraded=False,
        reason=None,
        bodies=(node_id,),
        standing=(),
        cut=(),
        silent=False,
        prompt_sha256="0" * 64,
        prompt_chars=12,
        prompt="where is it?",
    )


def test_a_scrub_waits_for_an_entry_being_written_and_then_scrubs_it(
    neo4j_store: Any, raw_driver: Any
) -> None:
    memory = Memory(neo4j_store)
    memory.advance_encounter(SESSION, "a node to deliver")
    (made,) = memory.create_entities(SESSION, [{"type": "Note", "name": "soon erased"}]).created
    statement = neo4j_store.ns.statement(LOG_PUT)
    params = neo4j_store.ns.params(statement, {**entry_params(_entry(made.id)), "keep": 10})
    scrubbed: list[int] = []
    with raw_driver.session(database=neo4j_store.database) as session:
        # The entry's statement has run, its transaction not yet committed: it looked
        # while the node was still held.
        held = session.begin_transaction()
        held.run(statement, params).consume()
        scrub = threading.Thread(
            target=lambda: scrubbed.append(neo4j_store.infusion_log.forget_nodes([made.id]))
        )
        scrub.start()
        scrub.join(1.0)
        still_waiting = scrub.is_alive()
        held.commit()
        scrub.join(30)
    assert still_waiting, "the scrub read the log while an entry was being written"
    assert scrubbed == [1]
    (entry,) = neo4j_store.infusion_log.entries(session_tag(SESSION), offset=0, limit=10)
    assert entry.bodies == () and entry.prompt is None
