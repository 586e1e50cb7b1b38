"""``kenning-encounter kndl export|import``: files, standard streams and what is said on stderr.

An export writes whole files only: a directory export fills a fresh directory, a file
export appears once complete. An import reads and checks every fact first, so a
refusal means nothing was written.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path
from typing import Any

from kenning_encounter.config import Settings
from kenning_encounter.errors import InvalidInput, KenningError
from kenning_encounter.memory import kndl, kndl_import
from kenning_encounter.memory.directors import director_policy
from kenning_encounter.memory.kndl_facts import Fact, read_facts
from kenning_encounter.memory.service import Memory
from kenning_encounter.plaintext import json_shown, one_line
from kenning_encounter.store.embedded.backend import EmbeddedStore
from kenning_encounter.store.port import GraphStore

EXIT_OK, EXIT_FAILED = 0, 1


def _json(doc: dict[str, Any]) -> str:
    return json_shown(doc, indent=2) + "\n"  # read on a terminal too (no --out)


def _say(line: str) -> None:
    # A refusal quotes the files' own text (an @id, a file name): shown on one line, an
    # escape sequence in it cannot reach the operator's terminal.
    sys.stderr.write(one_line(line) + "\n")


def _gated(store: GraphStore, settings: Settings) -> kndl.Readable:
    """The store as an export may read it: classified nodes only where export_grant says."""
    from kenning_encounter.memory.gates import Gate, GatedStore

    return GatedStore(store, Gate(settings.export_grant))


def export(store: GraphStore, settings: Settings, out: str | None) -> int:
    facts = kndl.export_facts(_gated(store, settings), settings.memory)
    if out is None or out == "-":
        sys.stdout.write(_json(kndl.as_graph(facts)))
        sys.stdout.flush()
        _say(f"exported {len(facts)} facts")
        return EXIT_OK
    target = Path(out)
    if target.suffix in (".json", ".jsonld") and not target.is_dir():
        partial = target.with_name(target.name + ".partial")
        try:
            partial.write_text(_json(kndl.as_graph(facts)), encoding="utf-8")
            partial.replace(target)
        finally:
            partial.unlink(missing_ok=True)
        _say(f"exported {len(facts)} facts to {target}")
        return EXIT_OK
    if target.exists() and (not target.is_dir() or any(target.iterdir())):
        raise InvalidInput(
            "--out",
            f"{target} exists and is not an empty directory; KNDL fact files are never "
            "overwritten: name a new directory (or a .json file)",
        )
    partial = target.with_name(target.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    try:
        for rel, doc in kndl.as_files(facts).items():
            path = partial / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(_json(doc), encoding="utf-8")
        (partial / "facts").mkdir(exist_ok=True)
        if target.exists():
            target.rmdir()
        partial.rename(target)
    finally:
        shutil.rmtree(partial, ignore_errors=True)
    _say(f"exported {len(facts)} facts to {target}/facts")
    return EXIT_OK


def read(settings: Settings, path: str) -> list[Fact] | None:
    """The facts under ``path``, checked before a store is opened (None: refused, and said
    so). Where no memory is yet, they are checked against an empty one as well: opening
    the store would make one, and a refused import leaves nothing behind."""
    try:
        facts = read_facts(Path(path))
        if settings.store == "embedded" and not EmbeddedStore.holds_memory(
            settings.resolved_data_dir
        ):
            kndl_import.plan(None, facts, settings.memory)
    except KenningError as exc:
        _say(f"error: {exc} (nothing was written)")
        return None
    return facts


def import_(store: GraphStore, settings: Settings, path: str, facts: list[Fact]) -> int:
    source = Path(path)
    # The import session is directed like any session of this configuration.
    memory = Memory(store, directors=director_policy(settings))
    try:
        cut = kndl_import.clear_cut_short(memory, facts, source)
    except KenningError as exc:
        _say(f"error: {exc}")
        return EXIT_FAILED
    if cut is not None:
        _say(
            f"an earlier import of these facts was cut short; the {cut} node(s) it wrote "
            "were removed first"
        )
    try:
        plan = kndl_import.plan(store, facts, settings.memory)
    except KenningError as exc:
        _say(f"error: {exc} (nothing was written)")
        return EXIT_FAILED
    _say(f"{path}: checked, {len(facts)} facts")
    total, step = len(facts), max(1, len(facts) // 10)
    told = [0]

    def progress(written: int) -> None:  # about every tenth of a large import
        if total >= 1_000 and written - told[0] >= step and written < total:
            told[0] = written
            _say(f"wrote {written:,} of {total:,} facts")

    try:
        done = kndl_import.write(memory, plan, source, progress)
    except (KenningError, OSError, KeyboardInterrupt) as exc:
        # write() has undone what it wrote, or noted what it could not.
        notes: list[str] = getattr(exc, "__notes__", [])
        what = "interrupted" if isinstance(exc, KeyboardInterrupt) else str(exc)
        undone = "the import stopped and was undone: nothing of it is kept; run it again"
        _say(f"error: {what} ({'; '.join(notes) or undone})")
        return EXIT_FAILED
    _say(
        f"imported {done.facts} facts in encounter {done.encounter}: {done.citations} new "
        f"citations, {done.subjects} new subjects, {done.relations} relations"
    )
    rest = {k: n for k, n in done.not_held.items() if k != "confidence"}
    if rest:
        shown = ", ".join(f"{name} ({n})" for name, n in rest.items())
        _say(f"read but not held by this memory (see README, KNDL): {shown}")
    rated = done.not_held.get("confidence", 0)
    if rated:
        _say(
            f"confidence: {rated} fact(s) carried one; not kept, on purpose: this memory "
            "carries standing by its relations and time, never by an author's number"
        )
    return EXIT_OK
