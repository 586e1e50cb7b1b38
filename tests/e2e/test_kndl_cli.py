"""``kenning-encounter kndl import|export`` as a user runs them: subprocesses, exit codes,
what is said on stderr, facts on files, in a directory or on standard output."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

from kenning_encounter.memory.service import Memory
from kenning_encounter.store.embedded.backend import EmbeddedStore
from kenning_encounter.store.port import bulk_read
from tests.e2e.conftest import ROOT, clean_environ

CI = ROOT / "tests" / "fixtures" / "kndl" / "ci-cache"


def _cli(*args: str, **env: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "kenning_encounter", "kndl", *args],
        capture_output=True,
        stdin=subprocess.DEVNULL,
        env=clean_environ(**env),
        cwd=ROOT,
        timeout=180,
        check=False,
    )


def _facts(folder: Path) -> list[dict[str, Any]]:
    return [json.loads(p.read_text()) for p in sorted(folder.glob("facts/*.fact.json"))]


def _shape(facts: list[dict[str, Any]]) -> set[tuple[Any, ...]]:
    label = {f["@id"]: f["label"] for f in facts}
    return {
        (
            f["label"],
            f["statement"],
            json.dumps(f.get("subject")),
            label.get(f.get("supersedes", "")),
            tuple(sorted(label[d] for d in f.get("derivedFrom", []))),
        )
        for f in facts
    }


def test_import_then_export_as_a_directory_a_file_and_standard_output(tmp_path: Path) -> None:
    data = tmp_path / "memory"
    imported = _cli("import", str(CI), "--data-dir", str(data))
    assert imported.returncode == 0, imported.stderr
    err = imported.stderr.decode()
    assert "checked, 6 facts" in err and "imported 6 facts in encounter E1" in err
    assert "read but not held by this memory" in err and "decay (" in err
    assert "confidence: 6 fact(s) carried one; not kept" in err

    out = tmp_path / "out"
    exported = _cli("export", "--out", str(out), "--data-dir", str(data))
    assert exported.returncode == 0, exported.stderr
    assert b"exported 6 facts" in exported.stderr
    assert "@context" in json.loads((out / "context" / "v1.jsonld").read_text())
    facts = _facts(out)
    assert len(facts) == 6 and all(f["@context"] == "../context/v1.jsonld" for f in facts)
    originals = {json.loads(p.read_text())["statement"] for p in CI.glob("facts/*.fact.json")}
    assert {f["statement"] for f in facts} == originals

    again = _cli("export", "--out", str(out), "--data-dir", str(data))
    assert again.returncode == 1 and b"never overwritten" in again.stderr

    one = tmp_path / "all.jsonld"
    assert _cli("export", "--out", str(one), "--data-dir", str(data)).returncode == 0
    assert len(json.loads(one.read_text())["@graph"]) == 6
    piped = _cli("export", "--data-dir", str(data))
    assert piped.returncode == 0, piped.stderr
    assert json.loads(piped.stdout)["@graph"] == json.loads(one.read_text())["@graph"]

    # The exported directory is itself a KNDL memory: a fresh memory takes it whole.
    copy = tmp_path / "copy"
    assert _cli("import", str(out), "--data-dir", str(copy)).returncode == 0
    out2 = tmp_path / "out2"
    assert _cli("export", "--out", str(out2), "--data-dir", str(copy)).returncode == 0
    assert _shape(_facts(out2)) == _shape(facts)


def test_a_second_import_and_a_bad_fact_are_refused_with_nothing_written(
    tmp_path: Path,
) -> None:
    data = tmp_path / "memory"
    assert _cli("import", str(CI), "--data-dir", str(data)).returncode == 0
    store = EmbeddedStore.open(data)
    try:
        before = bulk_read(store, lambda tx: (tx.clock(), tx.dump_counts()))
    finally:
        store.close()
    again = _cli("import", str(CI), "--data-dir", str(data))
    assert again.returncode == 1
    assert b"imported before" in again.stderr and b"nothing was written" in again.stderr

    bad = tmp_path / "bad.fact.json"
    bad.write_text(
        json.dumps(
            {
                "@context": "./context/v1.jsonld",
                "@id": "fact:odd",
                "@type": "Fact",
                "statement": "the cache warmed",
                "validFrom": "last Tuesday",
            }
        )
    )
    refused = _cli("import", str(bad), "--data-dir", str(data))
    assert refused.returncode == 1
    err = refused.stderr.decode()
    assert f"{bad} (fact:odd).validFrom" in err and "nothing was written" in err, err
    store = EmbeddedStore.open(data)
    try:
        assert bulk_read(store, lambda tx: (tx.clock(), tx.dump_counts())) == before
    finally:
        store.close()


def test_a_classified_fact_leaves_only_with_the_export_grant(tmp_path: Path) -> None:
    data = tmp_path / "memory"
    fact = tmp_path / "phone.fact.json"
    fact.write_text(
        json.dumps(
            {
                "@context": "./context/v1.jsonld",
                "@id": "fact:dana-phone",
                "@type": "Fact",
                "statement": "Dana's on-call phone number is in the rota sheet",
                "classification": "PII",
                "retention": "P30D",
            }
        )
    )
    assert _cli("import", str(fact), "--data-dir", str(data)).returncode == 0
    held_back = _cli("export", "--data-dir", str(data))
    assert held_back.returncode == 0, held_back.stderr
    assert json.loads(held_back.stdout)["@graph"] == []
    granted = _cli("export", "--export-grant", "pii", "--data-dir", str(data))
    assert granted.returncode == 0, granted.stderr
    [out] = json.loads(granted.stdout)["@graph"]
    assert (out["label"], out["classification"], out["retention"]) == (
        "fact:dana-phone",
        "PII",
        "P30D",
    )


def test_the_import_session_is_directed_by_the_configured_director(tmp_path: Path) -> None:
    data = tmp_path / "memory"
    done = _cli(
        "import",
        str(CI),
        "--data-dir",
        str(data),
        KENNING_ENCOUNTER_DIRECTOR="data steward",
        KENNING_ENCOUNTER_DIRECTOR_KEY="steward-1",
    )
    assert done.returncode == 0, done.stderr
    store = EmbeddedStore.open(data)
    try:
        node = Memory(store).find_by_name("fact:runner-r7-disk-full").node
    finally:
        store.close()
    assert node.director is not None
    assert (node.director.name, node.director.key) == ("data steward", "steward-1")


def test_classified_facts_import_with_the_facts_they_ground(tmp_path: Path) -> None:
    """The import writes the operator's own facts: a fact derived from a classified one
    is linked to it, though no server grant would show the classified one to a reader."""
    import shutil

    folder = tmp_path / "facts-in"
    shutil.copytree(CI, folder)
    for path in (folder / "facts").glob("*.fact.json"):
        fact = json.loads(path.read_text())
        fact["classification"] = "phi"
        path.write_text(json.dumps(fact))
    data = tmp_path / "memory"
    imported = _cli("import", str(folder), "--data-dir", str(data))
    assert imported.returncode == 0, imported.stderr
    linked = re.search(r", (\d+) relations", imported.stderr.decode())
    assert linked and int(linked.group(1)) > 0, imported.stderr
    store = EmbeddedStore.open(data)
    try:
        node = Memory(store, granted=("phi",)).find_by_name("fact:eviction-explains-dip").node
        assert "phi" in str(node.model_dump())
    finally:
        store.close()
