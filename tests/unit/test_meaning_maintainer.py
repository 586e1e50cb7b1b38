"""Keeping the sidecar current: creation, change, deletion, reconcile, rebuild."""

from __future__ import annotations

import dataclasses
import io
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from kenning_encounter.meaning.maintainer import MeaningMaintainer
from kenning_encounter.meaning.providers.gemini import GeminiProvider
from kenning_encounter.meaning.providers.openai_compat import OpenAICompatProvider
from kenning_encounter.meaning.rebuild import run_sidecar_rebuild
from kenning_encounter.meaning.sidecar import LOG_NAME, SidecarStore
from kenning_encounter.meaning.source import source_hash
from kenning_encounter.store.records import NodeRecord
from tests.support.fake_llm import FakeGemini, FakeOpenAI, Reply, Seen, echo_meaning


def node(n: int, description: str = "") -> NodeRecord:
    return NodeRecord(
        id=f"obs_{n:012x}",
        type="Observation",
        name=f"note {n}",
        description=description or f"what note {n} says",
        tick=10 * n,
        created_at="2025-01-01T00:00:00Z",
    )


@pytest.fixture
def fake() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as server:
        yield server


@pytest.fixture
def provider(fake: FakeOpenAI) -> Iterator[OpenAICompatProvider]:
    p = OpenAICompatProvider(
        base_url=fake.url + "/v1", model="m", timeout_s=2.0, max_attempts=1, backoff_s=0.01
    )
    yield p
    p.close()


@pytest.fixture
def sidecar(tmp_path: Path) -> Iterator[SidecarStore]:
    with SidecarStore(tmp_path / "sidecar") as store:
        yield store


@pytest.fixture
def maintainer(
    sidecar: SidecarStore, provider: OpenAICompatProvider
) -> Iterator[MeaningMaintainer]:
    m = MeaningMaintainer(sidecar, provider, backoff_s=0.02, max_backoff_s=0.1)
    m.start()
    yield m
    m.close()


def test_created_node_gets_a_meaning(
    maintainer: MeaningMaintainer, sidecar: SidecarStore, fake: FakeOpenAI
) -> None:
    n = node(1, "the harbour tide tables come a week late in winter")
    assert maintainer.enqueue(n)
    assert maintainer.wait_idle(5)
    entry = sidecar.get(n.id)
    assert entry is not None
    assert entry.meaning == "About note 1: the harbour tide tables come a week late in winter"
    assert (entry.source_hash, entry.order) == (source_hash(n), n.tick)
    assert "Type: Observation" in fake.requests[0].user
    assert maintainer.stats()["made"] == 1


def test_unchanged_node_costs_no_model_call(
    maintainer: MeaningMaintainer, fake: FakeOpenAI
) -> None:
    n = node(1)
    maintainer.enqueue(n)
    maintainer.wait_idle(5)
    maintainer.enqueue(n)
    maintainer.wait_idle(5)
    assert fake.hits == 1 and maintainer.stats()["unchanged"] == 1


def test_changed_text_is_remade_in_place_and_successor_gets_its_own(
    maintainer: MeaningMaintainer, sidecar: SidecarStore
) -> None:
    first, other = node(1, "tides lag a week"), node(2)
    maintainer.enqueue(first)
    maintainer.enqueue(other)
    maintainer.wait_idle(5)
    seq = sidecar.get(first.id).seq  # type: ignore[union-attr]
    changed = dataclasses.replace(first, description="tides lag two weeks")
    successor = dataclasses.replace(node(3, "tides lag a fortnight"), tick=99)
    maintainer.enqueue(changed)
    maintainer.enqueue(successor)
    maintainer.wait_idle(5)
    remade = sidecar.get(first.id)
    assert remade is not None and remade.meaning.endswith("tides lag two weeks")
    assert remade.seq == seq and remade.source_hash == source_hash(changed)
    assert [e.id for e in sidecar.entries()] == [first.id, other.id, successor.id]


def test_deleted_node_is_dropped(maintainer: MeaningMaintainer, sidecar: SidecarStore) -> None:
    n = node(1)
    maintainer.enqueue(n)
    maintainer.drop(n.id)  # queued behind its own creation
    maintainer.wait_idle(5)
    assert n.id not in sidecar and maintainer.stats()["dropped"] == 1


def test_removed_file_is_rebuilt_by_reconcile(
    tmp_path: Path, provider: OpenAICompatProvider, fake: FakeOpenAI
) -> None:
    nodes = [node(i) for i in range(1, 6)]
    directory = tmp_path / "sidecar"
    with SidecarStore(directory) as store:
        m = MeaningMaintainer(store, provider)
        m.start()
        for n in nodes:
            m.enqueue(n)
        assert m.wait_idle(5)
        m.close()
        before = {e.id: e.meaning for e in store.entries()}
    (directory / LOG_NAME).unlink()
    with SidecarStore(directory) as store:
        assert len(store) == 0
        m = MeaningMaintainer(store, provider)
        report = m.reconcile(nodes)
        assert (report.nodes, report.missing, report.stale, report.dropped) == (5, 5, 0, 0)
        m.start()
        assert m.wait_idle(5)
        m.close()
        assert {e.id: e.meaning for e in store.entries()} == before
        assert [e.order for e in store.entries()] == [n.tick for n in nodes]


def test_reconcile_fills_stale_and_drops_orphans(
    sidecar: SidecarStore, provider: OpenAICompatProvider, fake: FakeOpenAI
) -> None:
    a, b, c = node(1), node(2), node(3)
    sidecar.put(a.id, "current", source_hash(a), order=a.tick)
    sidecar.put(b.id, "made from older text", "old-hash", order=b.tick)
    sidecar.put("obs_deadbeef0000", "its node was deleted", "h", order=1)
    m = MeaningMaintainer(sidecar, provider)
    report = m.reconcile([a, b, c])
    assert (report.missing, report.stale, report.dropped) == (1, 1, 1)
    assert "obs_deadbeef0000" not in sidecar  # dropped at once, no model needed
    m.start()
    assert m.wait_idle(5)
    m.close()
    assert fake.hits == 2
    assert sidecar.get(a.id).meaning == "current"  # type: ignore[union-attr]
    assert sidecar.get(b.id).source_hash == source_hash(b)  # type: ignore[union-attr]
    assert c.id in sidecar


def test_enqueue_never_waits_for_the_model(
    sidecar: SidecarStore, provider: OpenAICompatProvider, fake: FakeOpenAI
) -> None:
    # The model holds its first answer until every enqueue has returned (or gives up after
    # a while and answers anyway): an enqueue that waited for the model puts an answer first.
    events: list[str] = []
    released = threading.Event()

    def held(seen: Seen) -> str:
        released.wait(10)
        events.append("answered")
        return echo_meaning(seen)

    fake.responder = held
    m = MeaningMaintainer(sidecar, provider)
    m.start()
    try:
        for i in range(3):
            assert m.enqueue(node(i))
            events.append(f"enqueued {i}")
        released.set()
        assert m.wait_idle(5)
        assert events == ["enqueued 0", "enqueued 1", "enqueued 2", *["answered"] * 3]
        assert len(sidecar) == 3
    finally:
        released.set()
        m.close()


def test_full_queue_drops_and_reconcile_catches_up(
    sidecar: SidecarStore, provider: OpenAICompatProvider
) -> None:
    m = MeaningMaintainer(sidecar, provider, queue_size=2)
    nodes = [node(i) for i in range(1, 4)]
    assert [m.enqueue(n) for n in nodes] == [True, True, False]
    assert m.stats()["queue_full_drops"] == 1
    m.reconcile(nodes)
    m.start()
    assert m.wait_idle(5)
    m.close()
    assert all(n.id in sidecar for n in nodes)


def test_failed_call_is_retried_later(
    maintainer: MeaningMaintainer, sidecar: SidecarStore, fake: FakeOpenAI
) -> None:
    fake.script(Reply(status=500), Reply(status=503))
    n = node(1)
    maintainer.enqueue(n)
    assert maintainer.wait_idle(5)
    assert n.id in sidecar
    stats = maintainer.stats()
    assert (stats["failed"], stats["made"], stats["abandoned"]) == (2, 1, 0)
    gaps = [b.at - a.at for a, b in zip(fake.requests, fake.requests[1:], strict=False)]
    assert gaps[0] >= 0.02 and gaps[1] >= 0.04  # backed off, doubling, between tries


def test_gives_up_after_max_attempts_until_next_reconcile(
    sidecar: SidecarStore, provider: OpenAICompatProvider, fake: FakeOpenAI
) -> None:
    fake.script(*[Reply(status=500)] * 3)
    m = MeaningMaintainer(sidecar, provider, max_attempts=3, backoff_s=0.01, max_backoff_s=0.02)
    m.start()
    n = node(1)
    m.enqueue(n)
    assert m.wait_idle(5)
    assert n.id not in sidecar and m.stats()["abandoned"] == 1 and fake.hits == 3
    m.reconcile([n])
    assert m.wait_idle(5)
    m.close()
    assert n.id in sidecar


def test_close_stops_the_worker(sidecar: SidecarStore, provider: OpenAICompatProvider) -> None:
    m = MeaningMaintainer(sidecar, provider)
    m.start()
    m.close()
    assert m.enqueue(node(1)) is False
    assert m._thread is not None and not m._thread.is_alive()  # pyright: ignore[reportPrivateUsage]


def test_gemini_makes_meanings_too(sidecar: SidecarStore) -> None:
    with FakeGemini() as gemini:
        provider = GeminiProvider(api_key="k", base_url=gemini.url, timeout_s=5)
        m = MeaningMaintainer(sidecar, provider)
        m.start()
        m.enqueue(node(7, "fog at dawn near the lighthouse"))
        assert m.wait_idle(10)
        m.close()
        provider.close()
    entry = sidecar.get(node(7).id)
    assert entry is not None and entry.meaning == "About note 7: fog at dawn near the lighthouse"


# -- rebuild --------------------------------------------------------------------------


def test_rebuild_command_estimates_and_remakes_everything(
    sidecar: SidecarStore, provider: OpenAICompatProvider, fake: FakeOpenAI
) -> None:
    nodes = [node(i) for i in range(1, 4)]
    for n in nodes:
        sidecar.put(n.id, "an old meaning from another model", source_hash(n), order=n.tick)
    sidecar.put("obs_000000000999", "orphan", "h", order=5)
    err = io.StringIO()
    status = run_sidecar_rebuild(iter(nodes), provider, sidecar, workers=2, stream=err)
    out = err.getvalue()
    assert status == 0, out
    assert "3 node(s), a full rebuild: about 3 model call(s) to openai/m" in out
    assert "3/3" in out and "made 3, failed 0, dropped 1 orphan(s)" in out
    assert fake.hits == 3
    assert all(e.meaning.startswith("About note") for e in sidecar.entries())


def test_rebuild_only_gaps_and_failures(
    sidecar: SidecarStore, provider: OpenAICompatProvider, fake: FakeOpenAI
) -> None:
    nodes = [node(i) for i in range(1, 4)]
    sidecar.put(nodes[0].id, "current", source_hash(nodes[0]), order=nodes[0].tick)
    fake.script(Reply(status=500))
    err = io.StringIO()
    status = run_sidecar_rebuild(nodes, provider, sidecar, only_gaps=True, workers=1, stream=err)
    out = err.getvalue()
    assert status == 1
    assert "about 2 model call(s)" in out and "made 1, failed 1" in out
    assert "http_error: 1" in out


def test_rebuild_without_a_usable_provider_says_so(sidecar: SidecarStore) -> None:
    err = io.StringIO()
    status = run_sidecar_rebuild([node(1)], GeminiProvider(api_key=None), sidecar, stream=err)
    assert status == 2 and "GEMINI_API_KEY" in err.getvalue()


def test_maintainer_rebuild_reports_progress(
    maintainer: MeaningMaintainer, sidecar: SidecarStore
) -> None:
    seen: list[tuple[int, int]] = []
    report = maintainer.rebuild(
        [node(i) for i in range(4)], progress=lambda d, t: seen.append((d, t))
    )
    assert (report.calls, report.made, report.failed) == (4, 4, 0)
    assert seen[0] == (0, 4) and sorted(seen)[-1] == (4, 4) and len(seen) == 5
    assert len(sidecar) == 4
