"""The LoCoMo evaluation: loading, evidence repair, metrics, baselines and the runner."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from bench.locomo import DEFAULT_DATA
from bench.locomo.bm25 import Bm25Index
from bench.locomo.data import load, normalize_evidence, parse_session_time
from bench.locomo.retrievers import Bm25Retriever, LexicalRetriever, RecencyRetriever
from bench.locomo.runner import evaluate, format_table
from bench.locomo.scoring import (
    Outcome,
    percentile,
    recall_all,
    recall_any,
    recall_fraction,
    summarize,
)

from kenning_encounter.textproc import tokenize

REPO = Path(__file__).resolve().parents[2]
REAL_DATA = (REPO / DEFAULT_DATA).resolve()

# --- evidence ids and times ------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "ids", "bad"),
    [
        (["D1:3"], ["D1:3"], []),
        (["D8:6; D9:17"], ["D8:6", "D9:17"], []),
        (["D:11:26"], ["D11:26"], []),
        (["D30:05"], ["D30:5"], []),
        (["D1:3", "D01:3"], ["D1:3"], []),
        (["D"], [], ["D"]),
        (["D4:8,D4:9"], ["D4:8", "D4:9"], []),
        ([], [], []),
    ],
)
def test_normalize_evidence_repairs_malformed_ids(
    raw: list[str], ids: list[str], bad: list[str]
) -> None:
    assert normalize_evidence(raw) == (ids, bad)


def test_parse_session_time_reads_twelve_hour_clock() -> None:
    assert parse_session_time("1:56 pm on 8 May, 2023") == datetime(2023, 5, 8, 13, 56, tzinfo=UTC)
    assert parse_session_time("12:09 am on 13 September, 2023") == datetime(
        2023, 9, 13, 0, 9, tzinfo=UTC
    )
    assert parse_session_time("12:30 pm on 1 January, 2024").hour == 12
    with pytest.raises(ValueError, match="unrecognized session time"):
        parse_session_time("yesterday")
    with pytest.raises(ValueError, match="unrecognized month"):
        parse_session_time("1:56 pm on 8 Maybe, 2023")


# --- loading ---------------------------------------------------------------


def _sample() -> dict[str, Any]:
    return {
        "sample_id": "conv-x",
        "conversation": {
            "speaker_a": "Ann",
            "speaker_b": "Bo",
            "session_1_date_time": "9:00 am on 2 March, 2024",
            "session_1": [
                {"speaker": "Ann", "dia_id": "D1:1", "text": "I adopted a cat named Miso."},
                {"speaker": "Bo", "dia_id": "D1:2", "text": "What colour is Miso?"},
                {
                    "speaker": "Ann",
                    "dia_id": "D1:3",
                    "text": "Orange, see?",
                    "blip_caption": "a photo of an orange cat",
                    "query": "orange cat",
                },
            ],
            # Session numbers sort numerically, not as text.
            "session_10_date_time": "6:00 pm on 20 April, 2024",
            "session_10": [
                {"speaker": "Bo", "dia_id": "D10:1", "text": "My bike got a flat tyre."},
                {"speaker": "Ann", "dia_id": "D10:2", "text": "Did you fix the tyre?"},
            ],
            "session_2_date_time": "10:00 am on 5 March, 2024",
            "session_2": [
                {"speaker": "Bo", "dia_id": "D2:1", "text": "I started pottery classes."},
                {"speaker": "Ann", "dia_id": "D2:2", "text": "Pottery sounds relaxing."},
            ],
            "session_3_date_time": "10:00 am on 6 March, 2024",
            "session_3": [],
        },
        "qa": [
            {
                "question": "What is the name of Ann's cat?",
                "answer": "Miso",
                "evidence": ["D1:1"],
                "category": 4,
            },
            {
                "question": "What did Bo start?",
                "answer": "pottery",
                "evidence": ["D2:01; D9:9"],
                "category": 1,
            },
            {"question": "Is Ann an artist?", "answer": "maybe", "evidence": [], "category": 3},
            {"question": "What broke?", "answer": "x", "evidence": ["D7:7"], "category": 2},
            {
                "question": "What colour is Bo's cat?",
                "adversarial_answer": "orange",
                "evidence": ["D1:3"],
                "category": 5,
            },
        ],
    }


@pytest.fixture
def sample_file(tmp_path: Path) -> Path:
    path = tmp_path / "locomo-sample.json"
    path.write_text(json.dumps([_sample(), {**_sample(), "sample_id": "conv-y"}]), encoding="utf-8")
    return path


def test_load_maps_sessions_to_encounters_and_turns_to_observations(sample_file: Path) -> None:
    conv = load(sample_file)[0]
    assert conv.sample_id == "conv-x"
    assert conv.speakers == ("Ann", "Bo")
    # Empty sessions are skipped; the rest are in numeric order.
    assert [e.name for e in conv.encounters] == [
        "conv-x/session_1",
        "conv-x/session_2",
        "conv-x/session_10",
    ]
    assert conv.encounters[0].opened_at == "2024-03-02T09:00:00+00:00"
    names = [o.name for o in conv.observations]
    assert names == ["D1:1", "D1:2", "D1:3", "D2:1", "D2:2", "D10:1", "D10:2"]
    ticks = [o.tick for o in conv.observations]
    assert ticks == sorted(ticks) and len(set(ticks)) == len(ticks)
    by_id = conv.by_dia_id()
    assert by_id["D1:1"].description == "Ann: I adopted a cat named Miso."
    assert by_id["D1:1"].type == "Observation"
    assert by_id["D1:1"].encounter == "conv-x/session_1"
    assert (
        by_id["D1:3"].description == "Ann: Orange, see? [shared an image: a photo of an orange cat]"
    )
    assert "orange cat]" in by_id["D1:3"].description and "query" not in by_id["D1:3"].description
    assert by_id["D10:1"].created_at == "2024-04-20T18:00:00+00:00"
    assert by_id["D10:1"].props == {"t_observed": "2024-04-20T18:00:00+00:00"}


def test_load_repairs_evidence_and_lists_dropped_questions(sample_file: Path) -> None:
    conv = load(sample_file)[0]
    kept = {q.index: q for q in conv.questions}
    assert kept[0].evidence == ("D1:1",)
    assert kept[1].evidence == ("D2:1",)
    assert kept[1].unresolved == ("D9:9",)
    assert kept[4].category == 5
    dropped = {d.index: d for d in conv.dropped}
    assert set(dropped) == {2, 3}
    assert dropped[2].reason == "no evidence listed"
    assert dropped[3].reason == "evidence ids do not resolve to a turn"
    assert dropped[3].evidence == ("D7:7",)


def test_load_limit_reads_only_the_first_conversations(sample_file: Path) -> None:
    assert [c.sample_id for c in load(sample_file, limit=1)] == ["conv-x"]
    assert [c.sample_id for c in load(sample_file)] == ["conv-x", "conv-y"]


# --- metrics ---------------------------------------------------------------


def test_recall_metrics_on_hand_made_selections() -> None:
    selected = ["a", "b", "c", "d", "e", "f"]
    assert recall_any(selected, ["e", "z"], 5) == 1.0
    assert recall_any(selected, ["f"], 5) == 0.0
    assert recall_any(selected, ["f"], 10) == 1.0
    assert recall_fraction(selected, ["a", "f", "z", "y"], 5) == 0.25
    assert recall_fraction(selected, ["a", "f", "z", "y"], 10) == 0.5
    assert recall_all(selected, ["a", "b"], 5) == 1.0
    assert recall_all(selected, ["a", "f"], 5) == 0.0
    assert recall_all(selected, ["a", "f"], 6) == 1.0
    with pytest.raises(ValueError, match="without evidence"):
        recall_fraction(selected, [], 5)


def test_percentile_is_nearest_rank() -> None:
    assert percentile([], 95) == 0.0
    assert percentile([5.0], 95) == 5.0
    values = [float(v) for v in range(1, 101)]
    assert percentile(values, 95) == 95.0
    assert percentile(values, 50) == 50.0
    assert percentile([3.0, 1.0, 2.0], 100) == 3.0


def test_summarize_averages_over_questions() -> None:
    outcomes = [
        Outcome("c", 0, 1, ("a", "b"), ("a",), {5: 100, 10: 200}),
        Outcome("c", 1, 1, ("x", "y"), ("b", "y"), {5: 300, 10: 400}),
    ]
    s = summarize(outcomes, (5,))
    assert s["questions"] == 2.0
    assert s["recall_any@5"] == 1.0
    assert s["recall@5"] == 0.75
    assert s["recall_all@5"] == 0.5
    assert s["payload_chars_mean@5"] == 200.0
    assert s["payload_chars_p95@5"] == 300.0
    assert summarize([], (5,))["recall_any@5"] == 0.0


# --- baselines and ours ----------------------------------------------------


def test_bm25_index_ranks_by_rarity_and_breaks_ties_by_position() -> None:
    docs = [tokenize(t) for t in ("cat cat dog", "dog bird", "cat", "dog fish")]
    index = Bm25Index(docs)
    ranked = index.search({"bird": 1.0, "dog": 1.0}, 10)
    assert ranked[0][0] == 1  # the only doc with the rare word
    assert {p for p, _ in ranked} == {0, 1, 3}
    tie = index.search({"fish": 0.0}, 10)
    assert [p for p, _ in tie] == [3]
    assert index.search({"zebra": 1.0}, 10) == []
    assert len(index.search({"dog": 1.0}, 2)) == 2


def test_retrievers_on_a_tiny_conversation(sample_file: Path) -> None:
    conv = load(sample_file, limit=1)[0]
    recency = RecencyRetriever().open(conv).select("anything", 3)
    assert [n.name for n in recency.ranked] == ["D10:2", "D10:1", "D2:2"]
    bm25 = Bm25Retriever().open(conv).select("What did Bo start, pottery?", 2)
    assert bm25.ranked[0].name in {"D2:1", "D2:2"}
    ours = LexicalRetriever().open(conv).select("What pottery did Bo start?", 3)
    # Bo's own turn wins over Ann's remark with the same word.
    assert ours.ranked[0].name == "D2:1"
    # The flat tyre is named only by Bo; Ann's follow-up is next to it.
    tyre = LexicalRetriever().open(conv).select("What happened to Bo's bike?", 3)
    assert [n.name for n in tyre.ranked][:2] == ["D10:1", "D10:2"]


def test_evaluate_reports_every_retriever_side_by_side(sample_file: Path) -> None:
    conversations = load(sample_file)
    report = evaluate(
        [LexicalRetriever(), Bm25Retriever(), RecencyRetriever()],
        conversations,
        {"dev": {"conv-x"}, "holdout": {"conv-y"}},
    )
    assert set(report["retrievers"]) == {"lexical", "bm25", "recency"}
    assert report["questions"] == 6
    assert len(report["dropped"]) == 4
    lexical = report["retrievers"]["lexical"]
    assert lexical["headline"]["questions"] == 4.0  # categories 1-4 only
    assert lexical["adversarial"]["questions"] == 2.0
    assert lexical["groups"]["dev"]["questions"] == 2.0
    assert lexical["headline"]["recall_any@10"] == 1.0
    table = format_table(report)
    assert "categories 1-4" in table and "adversarial (5)" in table
    assert "dropped conv-x#2 (cat 3): no evidence listed" in table
    assert "partly unresolved conv-x#1: ['D9:9']" in table


# --- the runner on the real development split ------------------------------


@pytest.mark.skipif(not REAL_DATA.is_file(), reason=f"LoCoMo dev data not found at {REAL_DATA}")
def test_runner_quick_on_the_real_dev_file(tmp_path: Path) -> None:
    out = tmp_path / "locomo.json"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO / "src"), str(REPO)])}
    done = subprocess.run(
        [sys.executable, "-m", "bench.locomo", "--quick", "--json", str(out)],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "categories 1-4" in done.stdout
    report = json.loads(out.read_text(encoding="utf-8"))
    assert report["conversations"] == ["conv-26"]
    assert [d["index"] for d in report["dropped"]] == [30, 46]
    ours = report["retrievers"]["lexical"]["headline"]
    bm25 = report["retrievers"]["bm25"]["headline"]
    recency = report["retrievers"]["recency"]["headline"]
    assert ours["questions"] == bm25["questions"] == 150.0
    for k in (5, 10):
        assert ours[f"recall_any@{k}"] > bm25[f"recall_any@{k}"] > recency[f"recall_any@{k}"]
    assert ours["payload_chars_mean@5"] > 0


def test_runner_refuses_a_missing_data_file(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO / "src"), str(REPO)])}
    done = subprocess.run(
        [sys.executable, "-m", "bench.locomo", "--data", str(tmp_path / "absent.json")],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2
    assert "LoCoMo data not found" in done.stderr


def test_misses_list_only_the_development_conversations(sample_file: Path) -> None:
    from bench.locomo.misses import find_misses, render

    conversations = load(sample_file)
    # Recency selects the last turns whatever is asked: it misses the cat and the pottery.
    development = [replace(c, sample_id="conv-26") for c in conversations[:1]]
    found = find_misses(RecencyRetriever(), [*development, *conversations[1:]], k=1)
    assert {(m.conversation, m.index) for m in found} == {("conv-26", 0), ("conv-26", 1)}
    cat = next(m for m in found if m.index == 0)
    # Read ten deep, the ranking says where the evidence stood: seventh of seven turns.
    assert cat.evidence == (("D1:1", "2024-03-02", 7, "Ann: I adopted a cat named Miso."),)
    assert cat.selected == (("D10:2", "2024-04-20", "Ann: Did you fix the tyre?"),)
    text = render(found)
    assert "=== conv-26#0 cat 4: What is the name of Ann's cat?" in text
    assert "evidence D1:1 [2024-03-02] rank 7: Ann: I adopted a cat named Miso." in text
    assert text.endswith("misses: 2")
    # A question whose evidence was selected is no miss.
    assert [m.index for m in find_misses(LexicalRetriever(), development, k=3)] == []
    # The holdout's misses are never listed, whatever is passed.
    assert find_misses(RecencyRetriever(), conversations, k=1) == []
