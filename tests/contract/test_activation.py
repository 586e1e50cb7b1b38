"""Relevance over time on every backend (#16 items 5-6, memory/activation.py).

The store writes the time a controlled clock tells, and reads are asked at that same
time, so months pass in a line. The half-life is 30 days (MONTH; the default is longer): hot under 30,
warm under 90, cold under 240, frozen after. Standing ages in the memory's working time,
so while the clock moves on, a worker session keeps working every ten days (a pause in
MONTH ages the memory by up to fifteen), unless a test says the memory stands idle.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from kenning_encounter.infusion.config import preset
from kenning_encounter.infusion.pipeline import Infuser
from kenning_encounter.memory.activation import Activation, Present, WorkTime
from kenning_encounter.memory.service import Memory
from tests.support.backends import BACKENDS, opened_store

MONTH = Activation(30.0, pause_ages_days=15.0)
WORK_EVERY = 10  # days

T0 = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)


class Clock:
    def __init__(self) -> None:
        self.at = T0
        self.worker: Memory | None = None
        self.worked = 0  # the last day the worker worked

    def days(self, n: float) -> datetime:
        """Move to ``n`` days after T0, the worker working every WORK_EVERY days on the
        way (on day n too, before the reads); the instant, for the reads."""
        day = self.worked + WORK_EVERY
        while self.worker is not None and day <= n:
            self.at = T0 + timedelta(days=day)
            self.worker.advance_encounter("s-work", f"work on day {day}")
            self.worker.close_encounter("s-work", "worked")
            self.worked, day = day, day + WORK_EVERY
        return self.idle(n)

    def idle(self, n: float) -> datetime:
        """Move to ``n`` days after T0 with nobody working."""
        self.at = T0 + timedelta(days=n)
        self.worked = max(self.worked, int(n))
        return self.at

    def __call__(self) -> str:
        return self.at.isoformat(timespec="milliseconds").replace("+00:00", "Z")


@pytest.fixture(params=BACKENDS)
def timed(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[Memory, Clock]]:
    clock = Clock()
    with opened_store(request.param, tmp_path / "memory", clock) as store:
        memory = Memory(store, activation=MONTH)
        clock.worker = memory
        yield memory, clock


def _two_notes(memory: Memory) -> tuple[str, str]:
    memory.advance_encounter("s-1", "deploys")
    made = memory.create_entities(
        "s-1",
        [
            {
                "type": "Note",
                "name": "canary rollback",
                "description": "The canary rolled back after a latency spike.",
            },
            {"type": "Note", "name": "canary rollout", "description": "The canary rolled out."},
        ],
    )
    memory.close_encounter("s-1", "noted")
    return made.created[0].id, made.created[1].id


def _tiers(memory: Memory, at: datetime, *, include_cold: bool = False) -> dict[str, str]:
    found = memory.search("canary", now=at, include_cold=include_cold)
    return {h.name: h.tier for h in found.hits}


def test_standing_fades_by_half_lives_and_nothing_is_deleted(
    timed: tuple[Memory, Clock],
) -> None:
    memory, clock = timed
    _two_notes(memory)
    assert _tiers(memory, clock.days(10)) == {"canary rollback": "hot", "canary rollout": "hot"}
    assert _tiers(memory, clock.days(45)) == {"canary rollback": "warm", "canary rollout": "warm"}
    faded = memory.search("canary", now=clock.days(100))
    assert faded.hits == []
    assert "2 faded hit(s)" in faded.note and "include_cold=true" in faded.note
    cold = _tiers(memory, clock.days(100), include_cold=True)
    assert cold == {"canary rollback": "cold", "canary rollout": "cold"}
    # Frozen: not even include_cold lists it, but it is all still there to read by name.
    assert _tiers(memory, clock.days(300), include_cold=True) == {}
    found = memory.find_by_name("canary rollback", now=clock.days(300))
    assert found.node.tier == "frozen" and found.node.last_used_at == "2026-01-05T09:00:00.000Z"
    policy = MONTH
    assert (
        policy.level(_record(memory, found.node.id), Present.wall(T0 + timedelta(days=30))) == 0.5
    )


def _record(memory: Memory, node_id: str):
    node = memory.store.read(lambda tx: tx.get_node(node_id))
    assert node is not None
    return node


def test_a_link_a_consultation_and_a_confirmation_each_bring_a_faded_node_back(
    timed: tuple[Memory, Clock],
) -> None:
    memory, clock = timed
    back, out = _two_notes(memory)
    clock.days(200)  # both cold by now
    memory.advance_encounter("s-2", "later work")
    memory.create_entities(
        "s-2", [{"type": "Note", "name": "deploy log", "description": "The log."}]
    )
    memory.create_relations(
        "s-2", [{"source": "deploy log", "type": "INFORMS", "target": "canary rollback"}]
    )
    assert _tiers(memory, clock.days(200)) == {"canary rollback": "hot"}
    # A consultation: a deliberate read with the session, from its open encounter.
    memory.find_by_name("canary rollout", session_id="s-2", now=clock.days(300))
    assert _record(memory, out).used_at == "2026-11-01T09:00:00.000Z"
    assert _tiers(memory, clock.days(300)) == {"canary rollout": "hot"}
    # A confirmation renews standing too (#17's CONFIRMED edge).
    clock.days(500)
    memory.confirm_entities("s-2", ["canary rollback"], "still true")
    assert _tiers(memory, clock.days(510)) == {"canary rollback": "hot"}
    assert _record(memory, back).used_at == "2027-05-20T09:00:00.000Z"
    # Without a session (or with no encounter open in it) a read records nothing.
    tick = memory.store.read(lambda tx: tx.clock())
    memory.find_by_name("canary rollout", now=clock.days(511))
    memory.close_encounter("s-2", "done")
    closed = memory.store.read(lambda tx: tx.clock())
    memory.find_by_name("canary rollout", session_id="s-2", now=clock.days(512))
    assert memory.store.read(lambda tx: tx.clock()) == closed == tick + 1  # only the close


def test_a_reader_never_consults(timed: tuple[Memory, Clock]) -> None:
    memory, clock = timed
    _two_notes(memory)
    memory.advance_encounter("s-2", "reading")
    reader = Memory(memory.backend, consults=False)
    at = clock.days(200)  # the worker works up to here first
    before = memory.store.read(lambda tx: tx.clock())
    reader.find_by_name("canary rollback", session_id="s-2", now=at)
    reader.trace_provenance("canary rollback", session_id="s-2", now=at)
    reader.chain_history("canary rollback", session_id="s-2")
    assert memory.store.read(lambda tx: tx.clock()) == before
    assert _tiers(memory, at) == {}


def test_what_the_work_keeps_using_ranks_first_among_equals(timed: tuple[Memory, Clock]) -> None:
    memory, clock = timed
    back, out = _two_notes(memory)
    at_first = memory.search("canary rolled", now=clock.days(1))
    assert [h.id for h in at_first.hits] == [out, back]  # by words alone
    memory.advance_encounter("s-2", "reading")
    memory.trace_provenance("canary rollback", session_id="s-2", now=clock.days(50))
    later = memory.search("canary rolled", now=clock.days(55))
    assert [(h.id, h.tier) for h in later.hits] == [(back, "hot"), (out, "warm")]


def test_a_pin_holds_a_node_hot_until_it_is_lifted(timed: tuple[Memory, Clock]) -> None:
    memory, clock = timed
    _two_notes(memory)
    memory.advance_encounter("s-1", "pinning")
    pinned = memory.pin_entities("s-1", ["canary rollback"], why="the runbook")
    assert pinned.pinned and pinned.nodes[0]["name"] == "canary rollback"
    assert _tiers(memory, clock.days(400), include_cold=True) == {"canary rollback": "hot"}
    assert memory.find_by_name("canary rollback", now=clock.days(400)).node.pinned is True
    memory.pin_entities("s-1", ["canary rollback"], pinned=False)  # at day 400: a use
    assert _tiers(memory, clock.days(420)) == {"canary rollback": "hot"}
    assert _tiers(memory, clock.days(700), include_cold=True) == {}


def test_reads_of_the_past_show_every_tier_unweighed(timed: tuple[Memory, Clock]) -> None:
    memory, clock = timed
    _two_notes(memory)
    tick = memory.store.read(lambda tx: tx.clock())
    past = memory.search("canary", now=clock.days(400), as_of=tick)
    assert {h.name: h.tier for h in past.hits} == {"canary rollback": "", "canary rollout": ""}
    assert memory.find_by_name("canary rollback", as_of=tick).node.tier is None


def test_delivering_a_node_a_hundred_times_does_not_raise_its_rank(
    timed: tuple[Memory, Clock],
) -> None:
    """The rich-get-richer loop the design is built against: what the payload makes
    salient must not gain weight by being delivered."""
    memory, clock = timed
    ids: list[str] = []
    for session, name, text in (
        ("s-a", "canary rollback", "The canary rolled back after a latency spike."),
        ("s-b", "canary rollout", "The canary rolled out."),  # apart: not beside a match
    ):
        memory.advance_encounter(session, "deploys")
        made = memory.create_entities(
            session, [{"type": "Note", "name": name, "description": text}]
        )
        memory.close_encounter(session, "noted")
        ids.append(made.created[0].id)
    back, out = ids
    infuser = Infuser(memory.store, preset("balanced"), activation=MONTH)

    def scores(at: datetime) -> list[tuple[str, float]]:
        from kenning_encounter.infusion import rank as ranking
        from kenning_encounter.infusion.select import lexical

        chosen, _ = lexical(memory.store, "the canary rolled back", [], infuser.config, now=at)
        present = memory.store.read(lambda tx: WorkTime().present(tx, MONTH, at))
        standing = ranking.Standing(MONTH, present, frozenset({"hot", "warm"}))
        ranked = ranking.rank(memory.store, chosen.seeds, infuser.config, standing=standing)
        return [(r.node.id, round(r.score, 9)) for r in ranked.items]

    before = scores(clock.days(40))
    used_before = {i: _record(memory, i).used_at for i in (back, out)}
    assert {i for i, _ in before} == {back, out}
    for n in range(100):  # a fresh session each time: the body is delivered every time
        answer = infuser.infuse(f"s-deliver-{n}", "that latency spike again", now=clock.at)
        assert answer["meta"]["delivered"] == [back]  # only this one: a rise would show
    assert scores(clock.days(40)) == before
    assert {i: _record(memory, i).used_at for i in (back, out)} == used_before
    # and the delivered node fades on schedule, delivered or not
    late = infuser.infuse("s-late", "why did the canary roll back", now=clock.days(100))
    assert back in late["meta"]["suppressed"]["faded"]


def test_infusion_leaves_faded_nodes_out_unless_asked(timed: tuple[Memory, Clock]) -> None:
    memory, clock = timed
    back, _ = _two_notes(memory)
    infuser = Infuser(memory.store, preset("balanced"), activation=MONTH)
    prompt = "why did the canary roll back"
    assert back in infuser.infuse("s-a", prompt, now=clock.days(60))["meta"]["ranked"]
    faded = infuser.infuse("s-b", prompt, now=clock.days(100))
    assert faded["status"] == "silent" and back in faded["meta"]["suppressed"]["faded"]
    asked = infuser.infuse("s-c", prompt, now=clock.days(100), include_cold=True)
    assert back in asked["meta"]["ranked"]
    frozen = infuser.infuse("s-d", prompt, now=clock.days(300), include_cold=True)
    assert frozen["status"] == "silent"


def test_orient_shows_what_is_fading(timed: tuple[Memory, Clock]) -> None:
    from kenning_encounter.analytics.orient import build_panel

    memory, clock = timed
    _two_notes(memory)
    memory.advance_encounter("s-2", "linking")
    clock.days(100)
    memory.create_entities("s-2", [{"type": "Note", "name": "fresh", "description": "New."}])
    memory.create_relations(
        "s-2", [{"source": "fresh", "type": "INFORMS", "target": "canary rollback"}]
    )
    sub = memory.store.read(lambda tx: tx.authored_graph())
    at = clock.days(110)
    present = memory.store.read(lambda tx: memory.work_time.present(tx, MONTH, at))
    panel = build_panel(sub.nodes, sub.edges, standing=(MONTH, present))
    fading = panel.fading
    assert fading is not None
    assert fading.tiers == {"hot": 2, "warm": 0, "cold": 1, "frozen": 0}
    assert [(f.node.name, f.tier, f.idle_days) for f in fading.massive_fading.items] == [
        ("canary rollout", "cold", 110.0)
    ]
    assert "FADING" in panel.text and "1 cold" in panel.text


# --- working time: a memory nobody works in does not fade --------------------------------
def test_a_memory_nobody_works_in_does_not_fade(timed: tuple[Memory, Clock]) -> None:
    """Back after a long time away, the memory is as it was left: a pause ages it by at
    most ``pause_ages_days`` (a day by default). Its daily work is what ages it."""
    memory, clock = timed
    policy = Activation(30.0)  # the default pause: a day
    away = Memory(memory.backend, activation=policy)
    _two_notes(memory)
    back = away.search("canary", now=clock.idle(400))
    assert {h.name: h.tier for h in back.hits} == {
        "canary rollback": "hot",
        "canary rollout": "hot",
    }
    found = away.find_by_name("canary rollback", now=clock.idle(400))
    assert found.node.tier == "hot"
    # Then a month and a half of daily work that never touches them: now they fade.
    for day in range(401, 446):
        clock.idle(day)
        away.advance_encounter("s-daily", f"day {day}")
        away.close_encounter("s-daily", "worked")
    later = away.search("canary", now=clock.idle(446))
    assert {h.name: h.tier for h in later.hits} == {
        "canary rollback": "warm",
        "canary rollout": "warm",
    }
    node = _record(memory, found.node.id)
    # 45 days of work, and one day for the 395-day pause and one for the day just begun.
    present = memory.store.read(lambda tx: WorkTime().present(tx, policy, clock.at))
    assert round(policy.age_in_half_lives(node, present) * 30) == 46


def test_another_writer_s_work_reaches_a_reader_s_cached_work_time(
    timed: tuple[Memory, Clock],
) -> None:
    """Each reader keeps the work spans it read, keyed by the memory's clock: work
    another writer (a replica) does moves the clock, and the next read sees it."""
    memory, clock = timed
    reader = Memory(memory.backend, activation=MONTH)
    _two_notes(memory)
    assert _tiers(reader, clock.idle(200)) == {"canary rollback": "hot", "canary rollout": "hot"}
    clock.worked = 0
    clock.days(200)  # the writer works every ten days, back from day 10
    assert _tiers(reader, clock.at) == {}  # 200 working days: frozen, out of recall


def test_a_seal_made_when_the_next_session_begins_does_not_make_the_pause_work(
    timed: tuple[Memory, Clock],
) -> None:
    """advance_encounter may close the previous encounter as the next begins: the seal
    is work at that moment, and the pause before it stays a pause."""
    memory, clock = timed
    policy = Activation(30.0)  # the default pause: a day
    memory.advance_encounter("s-1", "deploys")
    memory.create_entities("s-1", [{"type": "Note", "name": "canary rollback", "description": "x"}])
    clock.idle(60)
    memory.advance_encounter("s-1", "two months on", close_summary="noted")
    node = memory.store.read(lambda tx: tx.get_node(memory.find_by_name("canary rollback").node.id))
    assert node is not None
    present = memory.store.read(lambda tx: WorkTime().present(tx, policy, clock.at))
    assert policy.age_in_half_lives(node, present) * 30 == pytest.approx(1.0)
    assert policy.tier(node, present) == "hot"
