"""An erasure empties what a serving process cached of node text, on both backends.

The infusion path keeps tokens of node text and closed encounters' member lists and records in
process (infusion/select.py); on Neo4j the store keeps term counts too. Each erasure's
transaction moves the store's erasure count, and the next infusion that reads the count
moved drops them, so a server serving beside the operator's erasure holds nothing of
the erased nodes afterwards (tests/integration/test_neo4j_erasure_servers.py runs the
same across processes)."""

from __future__ import annotations

from kenning_encounter.infusion import select
from kenning_encounter.infusion.config import InfusionConfig
from kenning_encounter.memory import erasure, operator
from kenning_encounter.memory.service import Memory
from kenning_encounter.store.neo4j.text import DocFreqs
from kenning_encounter.store.port import GraphStore

SESSION = "caching-writer"
GONE = "zqxgone lantern"


def _written(store: GraphStore) -> dict[str, str]:
    memory = Memory(store)
    memory.advance_encounter(SESSION, "lanterns")
    made = memory.create_entities(
        SESSION,
        [
            {"type": "Note", "name": GONE, "description": "zqxgone words about the lantern"},
            {"type": "Note", "name": "plain lantern", "description": "a lantern at dusk"},
            {"type": "Note", "name": "kept lantern", "description": "the lantern stays"},
        ],
    ).created
    memory.close_encounter(SESSION, "lanterns seen")  # a closed encounter's list is cached
    return {m.name: m.id for m in made}


def _infuse(store: GraphStore, tokens: select.TokenCache, members: select.MemberCache) -> None:
    select.lexical(
        store, "the zqxgone lantern", (), InfusionConfig(), tokens=tokens, members=members
    )


def test_an_erasure_empties_the_infusion_caches_of_the_erased_text(store: GraphStore) -> None:
    ids = _written(store)
    tokens, members = select.TokenCache(), select.MemberCache()
    _infuse(store, tokens, members)
    assert ids[GONE] in tokens and members.holds(ids[GONE])  # cached before the erasure
    before = store.read(lambda tx: tx.erasures())
    erasure.erase(Memory(store).store, erasure.plan(store, [GONE]))
    assert store.read(lambda tx: tx.erasures()) == before + 1
    _infuse(store, tokens, members)
    assert ids[GONE] not in tokens and not members.holds(ids[GONE])
    assert ids["plain lantern"] in tokens  # what stays is cached again as it is read


def test_an_operator_s_forget_moves_the_count_too(store: GraphStore) -> None:
    _written(store)
    before = store.read(lambda tx: tx.erasures())
    operator.forget(store, [GONE])
    assert store.read(lambda tx: tx.erasures()) == before + 1


def test_term_counts_held_before_an_erasure_are_not_used_after_it() -> None:
    held = DocFreqs()
    held.keep({"zqxgone": 3, "lantern": 9}, docs=10)
    assert held.known(["zqxgone", "lantern"], docs=10) == {"zqxgone": 3, "lantern": 9}
    assert held.known(["zqxgone", "lantern"], docs=10, erasures=1) == {}


def test_a_closed_encounter_s_record_is_kept_until_an_erasure(store: GraphStore) -> None:
    """A warm prompt reads no closed encounter again; an open one is always read, and
    an erasure (which moves a record's tombstone count) drops what was kept."""
    ids = _written(store)
    memory = Memory(store)
    memory.advance_encounter("still-open", "lanterns again")
    lamp = {"type": "Note", "name": "open lantern", "description": "a zqxgone lamp"}
    ids["open lantern"] = memory.create_entities("still-open", [lamp]).created[0].id
    wanted = [ids["kept lantern"], ids["open lantern"]]
    nodes = store.read(lambda tx: tx.get_nodes(wanted))
    closed, still_open = (nodes[i].encounter for i in wanted)
    assert closed is not None and still_open is not None
    tokens, members = select.TokenCache(), select.MemberCache()
    _infuse(store, tokens, members)
    assert set(members.records([closed, still_open])) == {closed}
    erasure.erase(Memory(store).store, erasure.plan(store, [GONE]))
    _infuse(store, tokens, members)
    kept = members.records([closed])
    assert kept[closed].tombstones == 1  # read again after the erasure, not the old record
