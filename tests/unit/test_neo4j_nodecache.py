"""The Neo4j node cache's own rules, without a server: what it takes, what it drops, and
how much it keeps (store/neo4j/nodecache.py; tests/integration/test_neo4j_node_cache.py
runs it against other writers)."""

from __future__ import annotations

from kenning_encounter.store.neo4j import nodecache
from kenning_encounter.store.neo4j.nodecache import NodeCache
from kenning_encounter.store.persons import PersonRecord
from kenning_encounter.store.records import NodeRecord, approx_bytes


def _record(i: str, status: str = "open") -> NodeRecord:
    return NodeRecord(i, "Question", i, "", 1, "2026-01-01T00:00:00Z", status)


def test_an_offer_from_before_a_drop_is_refused() -> None:
    cache = NodeCache()
    cache.offer(cache.generation, {"que_a": _record("que_a")})
    assert len(cache) == 0  # never synchronised: nothing is known to be current
    noted = cache.synchronise(5, (0, 0), [])
    cache.offer(noted, {"que_a": _record("que_a")})
    assert cache.get(["que_a"]) == {"que_a": _record("que_a")}
    stale = cache.generation
    cache.synchronise(6, (0, 0), ["que_a"])  # changed at tick 6
    assert cache.get(["que_a"]) == {}
    cache.offer(stale, {"que_a": _record("que_a")})  # read before the drop: refused
    assert cache.get(["que_a"]) == {}
    cache.offer(cache.generation, {"que_a": _record("que_a", "resolved")})
    assert cache.get(["que_a"])["que_a"].status == "resolved"


def test_a_moved_count_empties_the_cache_and_the_clock_never_goes_back() -> None:
    cache = NodeCache()
    cache.offer(cache.synchronise(5, (0, 0), []), {"que_a": _record("que_a")})
    cache.synchronise(4, (0, 0), [])  # an older answer, applied late
    assert cache.synced == 5 and cache.get(["que_a"])
    cache.synchronise(7, (0, 1), [])  # a deletion somewhere: nothing is trusted
    assert cache.get(["que_a"]) == {}
    cache.offer(cache.generation, {"que_a": _record("que_a")})
    cache.synchronise(8, (1, 1), [])  # an erasure
    assert cache.get(["que_a"]) == {}


def test_a_deletion_at_the_clock_read_is_not_trusted_until_a_clock_past_it_is_read() -> None:
    # Neo4j shows a committed write record by record: a read at the deleting write's
    # tick may have fetched a node that write deletes, before it was gone.
    cache = NodeCache()
    cache.synchronise(5, (0, 0), [])
    cache.offer(cache.synchronise(6, (0, 1), [], deleted_at=6), {"que_a": _record("que_a")})
    assert cache.get(["que_a"]), "a node offered after the synchronisation was refused"
    cache.offer(cache.synchronise(6, (0, 1), [], deleted_at=6), {"que_b": _record("que_b")})
    assert cache.get(["que_a"]) == {}, "kept what a read made while the deletion applied"
    cache.synchronise(7, (0, 1), [], deleted_at=6)  # the clock passed it: applied whole
    assert cache.get(["que_b"]) == {}, "kept what a read made before the clock passed it"
    cache.offer(cache.generation, {"que_c": _record("que_c")})
    cache.synchronise(8, (0, 1), [], deleted_at=6)
    assert cache.get(["que_c"]), "a settled deletion still empties the cache"


def test_an_older_answer_does_not_settle_a_deletion_a_newer_one_found() -> None:
    cache = NodeCache()
    cache.synchronise(9, (0, 1), [], deleted_at=9)
    cache.synchronise(8, (0, 1), [], deleted_at=5)  # read before it, applied late
    cache.offer(cache.generation, {"que_a": _record("que_a")})
    cache.synchronise(9, (0, 1), [], deleted_at=9)
    assert cache.get(["que_a"]) == {}


def test_the_cache_is_bounded_by_count_and_by_size() -> None:
    by_count = NodeCache(capacity=3)
    generation = by_count.synchronise(1, (0, 0), [])
    by_count.offer(generation, {f"que_{i}": _record(f"que_{i}") for i in range(5)})
    assert len(by_count) == 3 and set(by_count.get(["que_2", "que_3", "que_4"])) == {
        "que_2", "que_3", "que_4",
    }  # fmt: skip
    big = NodeRecord("que_big", "Question", "big", "x" * 10_000, 1, "2026-01-01T00:00:00Z")
    by_size = NodeCache(max_bytes=approx_bytes(big) + 2 * approx_bytes(_record("que_a")))
    generation = by_size.synchronise(1, (0, 0), [])
    by_size.offer(generation, {"que_a": _record("que_a"), "que_b": _record("que_b")})
    by_size.offer(generation, {"que_big": big})
    assert by_size.held_bytes <= approx_bytes(big) + 2 * approx_bytes(_record("que_a"))
    by_size.offer(generation, {"que_c": _record("que_c")})  # the oldest goes first
    assert set(by_size.get(["que_a", "que_b", "que_big", "que_c"])) == {"que_b", "que_big", "que_c"}
    by_size.synchronise(2, (0, 0), ["que_big"])
    assert by_size.held_bytes == 2 * approx_bytes(_record("que_a"))


def test_more_touched_than_the_drop_limit_empties_the_cache() -> None:
    cache = NodeCache(drop_limit=2)
    cache.offer(cache.synchronise(1, (0, 0), []), {"que_a": _record("que_a")})
    cache.synchronise(2, (0, 0), ["que_x", "que_y"])  # at the limit: dropped one by one
    assert cache.get(["que_a"])
    cache.synchronise(3, (0, 0), ["que_x", "que_y", "que_z"])  # past it: everything goes
    assert cache.get(["que_a"]) == {} and cache.synced == 3


def test_directors_are_kept_through_writes_until_a_count_moves_and_within_their_limit() -> None:
    ada = PersonRecord(id="per_ada", name="Ada", key="ada@example.org", tick=1, created_at="t")
    cache = NodeCache()
    cache.synchronise(4, (0, 0), [])
    cache.keep_directors({"s1": ada})
    cache.synchronise(5, (0, 0), ["que_a", "que_b"])  # writes elsewhere: a tie never moves
    assert cache.directors(["s1", "s2"]) == {"s1": ada}
    cache.synchronise(6, (0, 1), [])  # a deletion: the memory may have been emptied
    assert cache.directors(["s1"]) == {}
    many = {f"s{i}": ada for i in range(nodecache.DIRECTORS_LIMIT)}
    cache.keep_directors(many)
    cache.keep_directors({"one more": ada})  # past the limit: not kept
    assert cache.directors(["s0", "one more"]) == {"s0": ada}
