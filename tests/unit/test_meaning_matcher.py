"""The matcher end to end: sidecar -> prompt -> real client -> fake server -> result."""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Callable, Iterator, Sequence
from datetime import UTC, datetime
from pathlib import Path

import pytest

from kenning_encounter.meaning.diagnostics import infuse_meaning
from kenning_encounter.meaning.matcher import Matcher, MatcherOptions
from kenning_encounter.meaning.providers.base import Provider
from kenning_encounter.meaning.providers.gemini import GeminiProvider
from kenning_encounter.meaning.providers.openai_compat import OpenAICompatProvider
from kenning_encounter.meaning.sidecar import SidecarStore
from tests.support.fake_llm import FakeGemini, FakeOpenAI, Reply, Seen, handle_of, listed_handles

MEANINGS = {
    "obs_000000000001": "The harbour tide tables are published a week late every winter.",
    "con_000000000002": "Release trains slip when the signing key lives on one laptop.",
    "que_000000000003": "Why does the nightly export double-count refunded orders?",
    "hyp_000000000004": "Refund double-counting comes from a timezone cut at midnight UTC.",
    "not_000000000005": "The team prefers short written proposals over meetings.",
}

Fake = FakeGemini | FakeOpenAI


@pytest.fixture
def sidecar(tmp_path: Path) -> Iterator[SidecarStore]:
    with SidecarStore(tmp_path / "sidecar") as store:
        for order, (node_id, meaning) in enumerate(MEANINGS.items(), start=1):
            store.put(node_id, meaning, f"h{order}", order=order)
        yield store


@pytest.fixture(params=["gemini", "openai"])
def served(request: pytest.FixtureRequest) -> Iterator[tuple[Provider, Fake]]:
    if request.param == "gemini":
        fake: Fake = FakeGemini().start()
        provider: Provider = GeminiProvider(
            api_key="test-key", base_url=fake.url, timeout_s=0.8, backoff_s=0.01
        )
    else:
        fake = FakeOpenAI().start()
        provider = OpenAICompatProvider(
            base_url=fake.url + "/v1", model="local-model", timeout_s=0.8, backoff_s=0.01
        )
    provider.warm_up()
    yield provider, fake
    provider.close()
    fake.stop()


def pick(*needles: str) -> Callable[[Seen], str]:
    """A scripted model: choose the listed meanings containing these words."""

    def answer(seen: Seen) -> str:
        return json.dumps({"ids": [handle_of(seen.user, n) for n in needles]})

    return answer


def test_chooses_the_ids_the_model_names(
    sidecar: SidecarStore, served: tuple[Provider, Fake]
) -> None:
    provider, fake = served
    fake.responder = pick("nightly export", "timezone")
    matcher = Matcher(sidecar, provider)
    result = matcher.select(
        "the refund numbers in the export look off again",
        ["we shipped the export fix yesterday", "can you check the nightly job?"],
    )
    assert result.ok and result.channel == "meaning"
    assert result.ids == ("que_000000000003", "hyp_000000000004")
    assert (result.provider, result.model) == (provider.name, provider.model)
    assert re.fullmatch(r"[0-9a-f]{32}", result.match_id)
    assert result.unknown_ids_dropped == 0 and result.fallback_reason is None
    assert not result.window.used and result.window.size == result.window.pool_size == 5
    assert result.trajectory_turns == 2
    seen = fake.requests[0]
    assert result.prompt_chars == len(seen.system) + len(seen.user)
    assert "- can you check the nightly job?" in seen.user
    assert seen.user.rstrip().endswith("the refund numbers in the export look off again")
    t = result.timings
    assert t.total_ms >= t.model_ms > 0 and t.assemble_ms >= 0 and t.parse_ms >= 0


def test_listing_prefix_is_identical_across_prompts(
    sidecar: SidecarStore, served: tuple[Provider, Fake]
) -> None:
    provider, fake = served
    matcher = Matcher(sidecar, provider)
    matcher.select("first question about tides")
    matcher.select("a different question about releases", ["earlier turn"])
    first, second = (s.user for s in fake.requests)
    listing = first[: first.index("\nRECENT USER TURNS")]
    assert second.startswith(listing) and fake.requests[0].system == fake.requests[1].system
    handles = list(listed_handles(first))
    assert handles == sorted(handles) and len(handles) == 5  # creation order
    # a newly created node lands at the end: the old listing stays a prefix
    sidecar.put("obs_000000000077", "A meaning made just now about ferries.", "h7", order=77)
    matcher.select("third question")
    third = fake.requests[2].user
    assert third.startswith(listing) and "ferries" in third[len(listing) :]


def test_reasons_when_enabled(sidecar: SidecarStore, served: tuple[Provider, Fake]) -> None:
    provider, fake = served
    fake.responder = lambda seen: json.dumps(
        {"picks": [{"id": handle_of(seen.user, "tide tables"), "why": "harbour timing"}]}
    )
    result = Matcher(sidecar, provider, MatcherOptions(reasons=True)).select("when is high water?")
    assert result.ids == ("obs_000000000001",)
    assert result.reasons == {"obs_000000000001": "harbour timing"}
    assert '"why"' in fake.requests[0].system


def test_unknown_ids_are_dropped_and_counted(
    sidecar: SidecarStore, served: tuple[Provider, Fake]
) -> None:
    provider, fake = served
    fake.responder = lambda seen: json.dumps(
        {"ids": [handle_of(seen.user, "signing key"), 4242, "con_000000000002"]}
    )
    result = Matcher(sidecar, provider).select("why did the release slip?")
    assert result.ok and result.ids == ("con_000000000002",)
    assert result.unknown_ids_dropped == 2


@pytest.mark.parametrize(
    ("script", "reason"),
    [
        (["I think items 1 and 3 matter."], "malformed_output"),
        (['{"ids": "1,3"}'], "malformed_output"),
        ([Reply(status=500)] * 3, "http_error"),
        ([Reply(status=403)], "http_error"),
        ([Reply(raw=b"<html>proxy error</html>")], "malformed_output"),
    ],
)
def test_failures_fall_back_with_their_reason(
    sidecar: SidecarStore, served: tuple[Provider, Fake], script: list[Reply | str], reason: str
) -> None:
    provider, fake = served
    fake.script(*script)
    result = Matcher(sidecar, provider).select("anything")
    assert result.channel == "fallback" and not result.ok
    assert result.fallback_reason == reason and result.ids == ()
    assert fake.hits == len(script)  # 500s were retried, nothing else was
    assert result.provider == provider.name


def test_timeout_falls_back_on_time(sidecar: SidecarStore, served: tuple[Provider, Fake]) -> None:
    provider, fake = served
    fake.script(Reply(text='{"ids": []}', delay_s=5))
    # Only a late answer is scripted; an unscripted one would be answered at once, so a
    # matcher that retried past its deadline would come back with a selection, not a timeout.
    result = Matcher(sidecar, provider).select("anything")
    assert (result.channel, result.fallback_reason) == ("fallback", "timeout")


def test_missing_key_falls_back_without_a_call(sidecar: SidecarStore) -> None:
    with FakeGemini() as fake:
        result = Matcher(sidecar, GeminiProvider(api_key="", base_url=fake.url)).select("hi")
        assert (result.channel, result.fallback_reason) == ("fallback", "no_key")
        assert "GEMINI_API_KEY" in result.fallback_detail
        assert fake.hits == 0


def test_missing_package_falls_back(sidecar: SidecarStore, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "google.genai", None)
    result = Matcher(sidecar, GeminiProvider(api_key="k")).select("hi")
    assert result.fallback_reason == "provider_missing"
    assert "kenning-encounter[gemini]" in result.fallback_detail


def test_empty_sidecar_falls_back(tmp_path: Path, served: tuple[Provider, Fake]) -> None:
    provider, fake = served
    with SidecarStore(tmp_path / "empty") as empty:
        result = Matcher(empty, provider).select("hi")
    assert result.fallback_reason == "empty_pool" and fake.hits == 0


def test_excluded_ids_are_not_shown(sidecar: SidecarStore, served: tuple[Provider, Fake]) -> None:
    provider, fake = served
    fake.responder = lambda seen: json.dumps({"ids": sorted(listed_handles(seen.user))})
    result = Matcher(sidecar, provider).select("x", exclude={"obs_000000000001"})
    assert "tide tables" not in fake.requests[0].user
    assert result.ids == tuple(i for i in MEANINGS if i != "obs_000000000001")
    assert result.window.pool_size == 4


def test_cached_listing_follows_sidecar_changes(
    sidecar: SidecarStore, served: tuple[Provider, Fake]
) -> None:
    provider, fake = served
    matcher = Matcher(sidecar, provider)
    matcher.select("one")
    sidecar.put("obs_000000000009", "A brand new meaning about lighthouses.", "h9", order=9)
    sidecar.drop("not_000000000005")
    matcher.select("two")
    later = fake.requests[1].user
    assert "lighthouses" in later and "written proposals" not in later


# -- the candidate window ---------------------------------------------------------


class Candidates:
    """A plain implementation of the CandidateSource protocol over known ids."""

    def __init__(self, meanings: dict[str, str], recent_ids: list[str], near: list[str]) -> None:
        self.meanings = meanings
        self.recent_ids = recent_ids
        self.near = near
        self.asked: list[tuple[str, int]] = []

    def lexical_hits(self, text: str, limit: int) -> list[str]:
        self.asked.append(("lexical", limit))
        words = {w for w in re.findall(r"[a-z]{5,}", text.lower())}
        return [i for i, m in self.meanings.items() if words & set(m.lower().split())][:limit]

    def recent(self, limit: int) -> list[str]:
        self.asked.append(("recent", limit))
        return self.recent_ids[:limit]

    def neighbourhood(self, limit: int) -> list[str]:
        self.asked.append(("neighbourhood", limit))
        return self.near[:limit]


def big_sidecar(path: Path, n: int) -> tuple[SidecarStore, dict[str, str]]:
    store = SidecarStore(path, fsync=False)
    items = {
        f"obs_{i:012x}": f"Routine note number {i} about warehouse shelving." for i in range(n)
    }
    items["obs_00000000beef"] = "The lighthouse keeper logs fog at dawn."
    store.put_many([(k, v, "h", i) for i, (k, v) in enumerate(items.items())])
    return store, items


def test_window_used_when_meanings_exceed_budget(
    tmp_path: Path, served: tuple[Provider, Fake]
) -> None:
    provider, fake = served
    store, items = big_sidecar(tmp_path / "big", 600)
    try:
        fake.responder = pick("lighthouse keeper")
        near = ["obs_000000000005", "obs_000000000006"]
        source = Candidates(items, recent_ids=["obs_000000000257"], near=near)
        budget = 6_000
        matcher = Matcher(store, provider, MatcherOptions(prompt_budget_chars=budget))
        result = matcher.select("any fog expected near the lighthouse?", candidates=source)
        assert result.ok and result.ids == ("obs_00000000beef",)
        shown = listed_handles(fake.requests[0].user)
        assert result.window.used and result.window.pool_size == 601
        assert result.window.size == len(shown) < 601
        assert result.prompt_chars <= budget
        held = {e.seq: e for e in store.entries()}
        shown_ids = {held[h].id for h in shown}
        assert {"obs_00000000beef", "obs_000000000257", *near} <= shown_ids
        by = result.window.by_source
        assert by["lexical"] >= 1 and by["recent"] == 1 and by["neighbourhood"] == 2
        assert sum(by.values()) == result.window.size
        orders = [held[h].order for h in shown]
        assert orders == sorted(orders)  # still creation order
    finally:
        store.close()


def test_window_respects_exclusions(tmp_path: Path, served: tuple[Provider, Fake]) -> None:
    provider, fake = served
    store, items = big_sidecar(tmp_path / "big", 600)
    try:
        source = Candidates(items, recent_ids=["obs_00000000beef"], near=[])
        matcher = Matcher(store, provider, MatcherOptions(prompt_budget_chars=6_000))
        result = matcher.select("lighthouse fog", candidates=source, exclude={"obs_00000000beef"})
        assert result.window.used and result.window.pool_size == 600
        assert "lighthouse keeper" not in fake.requests[0].user
    finally:
        store.close()


def test_window_without_candidate_source_keeps_the_newest(
    tmp_path: Path, served: tuple[Provider, Fake]
) -> None:
    provider, fake = served
    store, _items = big_sidecar(tmp_path / "big", 600)
    try:
        matcher = Matcher(store, provider, MatcherOptions(prompt_budget_chars=5_000))
        result = matcher.select("anything")
        assert result.window.used and result.window.by_source["fill"] == result.window.size
        shown = listed_handles(fake.requests[0].user)
        newest = [e.seq for e in store.entries()][-len(shown) :]
        assert sorted(shown) == newest
    finally:
        store.close()


def test_a_failing_candidate_source_only_narrows_the_window(
    tmp_path: Path, served: tuple[Provider, Fake]
) -> None:
    provider, _fake = served

    class Broken(Candidates):
        def lexical_hits(self, text: str, limit: int) -> list[str]:
            raise RuntimeError("index offline")

    store, items = big_sidecar(tmp_path / "big", 600)
    try:
        matcher = Matcher(store, provider, MatcherOptions(prompt_budget_chars=5_000))
        result = matcher.select("x", candidates=Broken(items, ["obs_000000000001"], []))
        assert result.ok and result.window.used and result.window.by_source["lexical"] == 0
        assert result.window.by_source["recent"] == 1
    finally:
        store.close()


def test_infuse_meaning_reports_what_was_given_and_chosen(
    sidecar: SidecarStore, served: tuple[Provider, Fake]
) -> None:
    provider, fake = served
    fake.responder = pick("signing key")
    matcher = Matcher(sidecar, provider)
    report = infuse_meaning(matcher, "release blocked again", ["earlier"])
    assert report["channel"] == "meaning" and report["fallback_reason"] is None
    assert report["chose"] == [
        {"id": "con_000000000002", "meaning": MEANINGS["con_000000000002"], "why": None}
    ]
    given = report["given"]
    assert given["meanings_held"] == 5 and given["trajectory_turns"] == 1
    assert given["window"] == {"used": False, "size": 5, "pool_size": 5, "by_source": {}}
    assert given["prompt_chars"] == len(fake.requests[0].system) + len(fake.requests[0].user)
    assert set(report["timings_ms"]) == {"assemble", "model", "parse", "total"}
    json.dumps(report)  # plain data, ready for an MCP tool result


def _dated(ids: Sequence[str]) -> dict[str, str]:
    """Dates for the listed nodes: one a month, in the order the meanings were made."""
    order = list(MEANINGS)
    return {i: f"2026-0{order.index(i) + 1}-15" for i in ids if i in order}


def test_items_carry_their_dates_and_the_prompt_its_moment(
    sidecar: SidecarStore, served: tuple[Provider, Fake]
) -> None:
    """Times the prompt names ("last week", "in May") are read against NOW and the items'
    dates (issue #16 item 7: the matcher's prompt understands time)."""
    provider, fake = served
    asked: list[list[str]] = []

    def dates(ids: Sequence[str]) -> dict[str, str]:
        asked.append(list(ids))
        return _dated(ids)

    matcher = Matcher(sidecar, provider, dates=dates)
    now = datetime(2026, 6, 3, 14, 30, tzinfo=UTC)
    matcher.select("what did we find about refunds last month?", now=now)
    matcher.select("and in February?", now=now)
    first, second = (s.user for s in fake.requests)
    listed = listed_handles(first)
    assert listed[handle_of(first, "nightly export")].startswith("[2026-03-15] Why does")
    assert all(re.match(r"\[2026-0\d-15\] ", meaning) for meaning in listed.values())
    assert "\nNOW\n2026-06-03 14:30 UTC, a Wednesday\n" in first
    assert first.index("\nNOW\n") > first.index("\nRECENT USER TURNS")  # after the listing
    assert "NOW" in fake.requests[0].system
    # Dates are asked once a node; the listing stays a prefix from prompt to prompt.
    assert asked == [list(MEANINGS)]
    assert second.startswith(first[: first.index("\nRECENT USER TURNS")])


def test_a_dated_window_keeps_within_the_budget(
    tmp_path: Path, served: tuple[Provider, Fake]
) -> None:
    provider, fake = served
    store, items = big_sidecar(tmp_path / "big", 600)
    every = {e.id: "2026-01-02" for e in store.entries()}
    budget = 6_000
    with store:
        options = MatcherOptions(prompt_budget_chars=budget)
        matcher = Matcher(store, provider, options, dates=lambda ids: {i: every[i] for i in ids})
        ask = "any fog expected near the lighthouse?"
        result = matcher.select(ask, candidates=Candidates(items, [], []))
    assert result.window.used and 0 < result.window.size < 601
    assert result.prompt_chars <= budget
    listed = listed_handles(fake.requests[0].user).values()
    assert all(m.startswith("[2026-01-02] ") for m in listed)


def test_without_dates_or_a_moment_the_prompt_is_as_before(
    sidecar: SidecarStore, served: tuple[Provider, Fake]
) -> None:
    provider, fake = served
    Matcher(sidecar, provider).select("what about refunds?")
    user = fake.requests[0].user
    assert "\nNOW\n" not in user
    assert not any(m.startswith("[") for m in listed_handles(user).values())


def test_the_dates_kept_are_bounded(
    sidecar: SidecarStore, served: tuple[Provider, Fake], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Past the bound the kept dates are dropped and asked again as items are listed."""
    from kenning_encounter.meaning import matcher as module

    monkeypatch.setattr(module, "_MAX_DATED", 3)
    provider, fake = served
    asked: list[int] = []

    def dates(ids: Sequence[str]) -> dict[str, str]:
        asked.append(len(ids))
        return _dated(ids)

    matcher = Matcher(sidecar, provider, dates=dates)
    matcher.select("refunds?")
    sidecar.put("obs_000000000099", "A meaning made later about ferries.", "h9", order=99)
    matcher.select("ferries?")
    assert asked == [5, 6]  # the second listing asked for all six again, not for one
    items = listed_handles(fake.requests[1].user).values()
    assert len(items) == 6 and all(m.startswith("[2026-") for m in list(items)[:5])
