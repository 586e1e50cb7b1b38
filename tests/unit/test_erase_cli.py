"""`kenning-encounter erase` as a real subprocess on the embedded store: a dry run writes
nothing, and after an erasure no file under the data directory holds the erased text."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import tantivy

from kenning_encounter.analytics.baseline import Baseline, BaselineEntry, BaselineStore
from kenning_encounter.meaning.sidecar import SidecarStore
from kenning_encounter.memory.service import Memory
from kenning_encounter.store.embedded.backend import EmbeddedStore
from tests.contract.test_erasure import MARKER, seed
from tests.support.cli import run_cli
from tests.support.snapshot import snapshot

ROOT = Path(__file__).resolve().parents[2]


def _seeded(data_dir: Path) -> dict[str, Any]:
    """A memory with the marker in the graph, the sidecar, the baselines, a read_cypher
    snapshot and a write-ahead log kept aside after a crash."""
    store = EmbeddedStore.open(data_dir)
    try:
        memory = Memory(store)
        seed(memory)
        nodes = store.read(lambda tx: tx.authored_graph().nodes)
    finally:
        store.close()
    jane = next(n for n in nodes if n.name == "Jane Doe")
    project = next(n for n in nodes if n.name == "project")
    with SidecarStore(data_dir / "sidecar") as sidecar:
        sidecar.put(jane.id, f"{MARKER} the person", "h1")
        sidecar.put(project.id, "the project", "h2")
    entries = (
        BaselineEntry(id=jane.id, name=jane.name + f" {MARKER}", type="Concept", rank=1, score=1),
        BaselineEntry(id=project.id, name=project.name, type="Concept", rank=2, score=0.5),
    )
    BaselineStore(data_dir / "analytics").save(
        Baseline(encounter="E1", saved_at="t", tick=4, node_count=7, entries=entries)
    )
    (data_dir / "cypher-snapshot").mkdir()
    shutil.copyfile(data_dir / "graph.lbdb", data_dir / "cypher-snapshot" / "graph.lbdb")
    shutil.copyfile(data_dir / "graph.lbdb", data_dir / "graph.lbdb.wal.damaged-1")
    return {"jane": jane.id, "project": project.id, "encounter": jane.encounter}


_cli = run_cli


def _holding(data_dir: Path, marker: str) -> list[str]:
    needle = marker.encode()
    return sorted(
        str(p.relative_to(data_dir))
        for p in data_dir.rglob("*")
        if p.is_file() and needle in p.read_bytes().lower()
    )


def _fingerprint(data_dir: Path) -> dict[str, Any]:
    store = EmbeddedStore.open(data_dir)
    try:
        graph = snapshot(store)
    finally:
        store.close()
    beside = ("sidecar/meanings.log", "analytics/mass-baselines.json")
    return {"graph": graph, **{name: (data_dir / name).read_bytes() for name in beside}}


def test_a_dry_run_shows_the_plan_and_writes_nothing(tmp_path: Path) -> None:
    data_dir = tmp_path / "m"
    ids = _seeded(data_dir)
    before = _fingerprint(data_dir)
    result = _cli("erase", "Jane Doe", "--data-dir", str(data_dir), "--json")
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["dry_run"] is True
    assert report["counts"] == {"Concept": 2, "Observation": 1, "Citation": 1}
    assert report["tombstones"] == {ids["encounter"]: 4}
    assert report["withdrawn"] == [ids["encounter"]]  # its words speak of her
    assert report["nodes"][0]["id"] == ids["jane"] and "referent" in report["nodes"][0]["why"]
    assert _fingerprint(data_dir) == before
    assert _holding(data_dir, MARKER)  # the marker is there to be found


def test_erase_leaves_no_trace_of_the_text_but_tombstones(tmp_path: Path) -> None:
    data_dir = tmp_path / "m"
    ids = _seeded(data_dir)
    result = _cli("erase", "Jane Doe", "--yes", "--data-dir", str(data_dir))
    assert result.returncode == 0, result.stderr
    assert f"tombstones: {ids['encounter']} +4" in result.stderr
    assert (
        f"purpose and summary withdrawn (the encounter drew on what was erased): {ids['encounter']}\n"
        in result.stderr
    )
    assert _holding(data_dir, MARKER) == []
    # The index keeps no term of the erased text, not even for deleted documents.
    index = tantivy.Index.open(str(data_dir / "textindex"))
    assert index.searcher().doc_freq("terms", MARKER) == 0
    store = EmbeddedStore.open(data_dir)
    try:
        sealed = store.read(lambda tx: tx.get_encounter(ids["encounter"]))
        assert sealed is not None and sealed.tombstones == 4
        names = sorted(n.name for n in store.read(lambda tx: tx.authored_graph().nodes))
        assert names == ["lonely", "project", "shared"]
        assert Memory(store).search("project").hits  # the rest is searchable again
    finally:
        store.close()
    with SidecarStore(data_dir / "sidecar") as sidecar:
        assert [e.id for e in sidecar.entries()] == [ids["project"]]
    readings = BaselineStore(data_dir / "analytics").all()
    assert [e.id for b in readings for e in b.entries] == [ids["project"]]


def test_erase_refuses_a_store_a_server_holds(tmp_path: Path) -> None:
    data_dir = tmp_path / "m"
    _seeded(data_dir)
    store = EmbeddedStore.open(data_dir)
    try:
        result = _cli("erase", "Jane Doe", "--yes", "--data-dir", str(data_dir))
        assert result.returncode == 1
        assert "stop the server first" in result.stderr
        assert Memory(store).find_by_name("Jane Doe").node.name == "Jane Doe"
    finally:
        store.close()


def test_an_unknown_referent_is_named_and_nothing_is_written(tmp_path: Path) -> None:
    data_dir = tmp_path / "m"
    _seeded(data_dir)
    before = _fingerprint(data_dir)
    result = _cli("erase", "nobody at all", "--yes", "--data-dir", str(data_dir))
    assert result.returncode == 1
    assert "refs[0]" in result.stderr and "nobody at all" in result.stderr
    assert _fingerprint(data_dir) == before


def test_purge_due_erases_what_ran_out(tmp_path: Path) -> None:
    data_dir = tmp_path / "m"
    store = EmbeddedStore.open(data_dir)
    try:
        memory = Memory(store)
        memory.advance_encounter("s", "short-lived")
        memory.create_entities(
            "s",
            [
                {
                    "type": "Note",
                    "name": "old phone",
                    "description": f"{MARKER} 555",
                    "retention": "2020-01-01",
                    "classification": "pii",
                },
                {"type": "Note", "name": "kept", "description": "y", "retention": "2999-01-01"},
            ],
        )
        encounter = memory.find_by_name("kept").node.encounter
    finally:
        store.close()
    dry = _cli("purge", "--due", "--data-dir", str(data_dir), "--json")
    assert dry.returncode == 0, dry.stderr
    planned = json.loads(dry.stdout)["nodes"]
    assert [(n["name"], n["classification"]) for n in planned] == [("old phone", "pii")]
    assert _holding(data_dir, MARKER)
    done = _cli("purge", "--due", "--yes", "--data-dir", str(data_dir))
    assert done.returncode == 0, done.stderr
    assert f"tombstones: {encounter} +1" in done.stderr
    assert _holding(data_dir, MARKER) == []
    again = _cli("purge", "--due", "--data-dir", str(data_dir))
    assert again.returncode == 0 and "nothing is due" in again.stderr
    missing = _cli("purge", "--data-dir", str(data_dir))
    assert missing.returncode == 2 and "--due" in missing.stderr


def test_erase_on_neo4j_through_the_cli(tmp_path: Path) -> None:
    from tests.contract.test_erasure import _found_on_neo4j
    from tests.support.backends import neo4j_unavailable, open_neo4j_store

    opened = open_neo4j_store()
    if isinstance(opened, str):
        neo4j_unavailable(opened)
    store: Any = opened
    try:
        seed(Memory(store))
        encounter = Memory(store).find_by_name("Jane Doe").node.encounter
        store.meanings.put_many(
            [(Memory(store).find_by_name("Jane Doe").node.id, f"{MARKER} m", "h", 1)]
        )
    finally:
        store.close()
    from tests.support.backends import neo4j_target

    target = neo4j_target()
    env = {k: v for k, v in os.environ.items() if not k.startswith("KENNING_ENCOUNTER_")}
    env |= target.server_env() | {"KENNING_ENCOUNTER_STORE": "neo4j"}
    run = subprocess.run(
        [sys.executable, "-m", "kenning_encounter", "erase", "Jane Doe", "--yes", "--json"],
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        env=env,
        cwd=ROOT,
        timeout=180,
        check=False,
    )
    assert run.returncode == 0, run.stderr
    report = json.loads(run.stdout)
    assert report["dry_run"] is False and report["tombstones"] == {encounter: 4}
    assert report["withdrawn"] == [encounter]
    assert any("meanings (in the store): 1 dropped" in line for line in report["scrubbed"])
    assert any("no restart needed" in line for line in report["scrubbed"])
    assert _found_on_neo4j(MARKER) == []


def test_a_terminal_confirms_by_typing_the_id(tmp_path: Path) -> None:
    import pty

    data_dir = tmp_path / "m"
    ids = _seeded(data_dir)
    for answer, erased in (("Jane Doe", False), (ids["jane"], True)):
        pid, fd = pty.fork()
        if pid == 0:  # the child: the CLI on a terminal
            env = {k: v for k, v in os.environ.items() if not k.startswith("KENNING_ENCOUNTER_")}
            os.chdir(ROOT)
            argv = [sys.executable, "-m", "kenning_encounter", "erase", "Jane Doe"]
            os.execve(sys.executable, [*argv, "--data-dir", str(data_dir)], env)
        seen = b""
        while b"type " not in seen:
            seen += os.read(fd, 1024)
        os.write(fd, answer.encode() + b"\n")
        while True:
            try:
                chunk = os.read(fd, 1024)
            except OSError:
                break
            if not chunk:
                break
            seen += chunk
        _, status = os.waitpid(pid, 0)
        assert (os.waitstatus_to_exitcode(status) == 0) is erased, seen.decode(errors="replace")
        assert (_holding(data_dir, MARKER) == []) is erased


def test_an_erasure_cut_short_is_finished_by_resume(tmp_path: Path) -> None:
    data_dir = tmp_path / "m"
    ids = _seeded(data_dir)
    # A file where the rewrite makes its fresh store: the scrubbing fails after the deletion.
    (data_dir / ".erasure-rewrite").write_text("in the way")
    cut = _cli("erase", "Jane Doe", "--yes", "--data-dir", str(data_dir))
    assert cut.returncode == 1
    assert "the nodes are deleted" in cut.stderr and "erase --resume" in cut.stderr
    assert _holding(data_dir, MARKER)  # the old file still holds the text
    refused = _cli("erase", "project", "--data-dir", str(data_dir))
    assert refused.returncode == 1 and "erase --resume" in refused.stderr
    (data_dir / ".erasure-rewrite").unlink()
    done = _cli("erase", "--resume", "--data-dir", str(data_dir))
    assert done.returncode == 0, done.stderr
    assert _holding(data_dir, MARKER) == []
    store = EmbeddedStore.open(data_dir)
    try:
        sealed = store.read(lambda tx: tx.get_encounter(ids["encounter"]))
        assert sealed is not None and sealed.tombstones == 4
    finally:
        store.close()
    again = _cli("erase", "--resume", "--data-dir", str(data_dir))
    assert again.returncode == 2 and "no unfinished erasure" in again.stderr
    none = _cli("erase", "--data-dir", str(data_dir))
    assert none.returncode == 2 and "REF" in none.stderr


def test_an_unfinished_erasure_is_said_by_serve_and_doctor(tmp_path: Path) -> None:
    from kenning_encounter.memory import scrub

    data_dir = tmp_path / "m"
    store = EmbeddedStore.open(data_dir)
    store.close()
    scrub.mark_pending(data_dir, ["not_000000000000"])  # as a kill after the mark leaves it
    resume = f"kenning-encounter erase --resume --data-dir {data_dir}"
    checked = _cli("doctor", "--data-dir", str(data_dir))
    assert checked.returncode == 0, checked.stdout
    line = next(x for x in checked.stdout.splitlines() if " erasure " in x)
    assert line.lstrip().startswith("WARN") and "may still be in the files on disk" in line
    assert resume in checked.stdout
    served = _cli("serve", "--transport", "stdio", "--data-dir", str(data_dir))
    assert "stopped before it finished" in served.stderr and resume in served.stderr
    scrub.clear_pending(data_dir)
    assert " erasure " not in _cli("doctor", "--data-dir", str(data_dir)).stdout
