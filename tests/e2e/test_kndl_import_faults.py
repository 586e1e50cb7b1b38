"""``kenning-encounter kndl import`` fed what a careless user or an attacker would feed it,
as a real subprocess: every refusal names the file (and the fact and field where there
is one) with the fix, no traceback reaches the user, and nothing is written: a fresh
--data-dir stays absent, a memory that was there is the same afterwards (that second
import of each refused case runs the same command line in process)."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, Any

import pytest

from kenning_encounter import cli
from kenning_encounter.store.embedded.backend import EmbeddedStore
from kenning_encounter.store.port import bulk_read
from tests.e2e.conftest import ROOT, clean_environ

CI = ROOT / "tests" / "fixtures" / "kndl" / "ci-cache"


def _import(path: Path, data: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "kenning_encounter",
            "kndl",
            "import",
            str(path),
            "--data-dir",
            str(data),
        ],
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        env=clean_environ(),
        cwd=ROOT,
        timeout=180,
        check=False,
    )


def _fact(**fields: Any) -> dict[str, Any]:
    return {
        "@context": "../context/v1.jsonld",
        "@id": "fact:a",
        "@type": "Fact",
        "statement": "the runner rebooted",
        **fields,
    }


def _write(folder: Path, name: str, body: bytes | dict[str, Any]) -> Path:
    facts = folder / "facts"
    facts.mkdir(parents=True, exist_ok=True)
    path = facts / name
    path.write_bytes(body if isinstance(body, bytes) else json.dumps(body).encode())
    return path


def _missing(tmp: Path) -> Path:
    return tmp / "no-such-folder"


def _directory_named_like_a_fact(tmp: Path) -> Path:
    _write(tmp / "in", "a.fact.json", _fact())
    (tmp / "in" / "facts" / "b.fact.json").mkdir()
    return tmp / "in"


def _pipe(tmp: Path) -> Path:
    (tmp / "in" / "facts").mkdir(parents=True)
    os.mkfifo(tmp / "in" / "facts" / "a.fact.json")  # read, it would never end
    return tmp / "in"


def _symlink_loop(tmp: Path) -> Path:
    (tmp / "in" / "facts").mkdir(parents=True)
    (tmp / "in" / "facts" / "a.fact.json").symlink_to("b.fact.json")
    (tmp / "in" / "facts" / "b.fact.json").symlink_to("a.fact.json")
    return tmp / "in"


def _latin1(tmp: Path) -> Path:
    text = json.dumps(_fact(), ensure_ascii=False).replace("rebooted", "caf\xe9")
    return _write(tmp / "in", "a.fact.json", text.encode("latin-1"))


def _huge_integer(tmp: Path) -> Path:
    text = json.dumps(_fact(object=0)).replace('"object": 0', '"object": ' + "9" * 5000)
    return _write(tmp / "in", "a.fact.json", text.encode())


def _deep(tmp: Path) -> Path:
    text = json.dumps(_fact(decay=0)).replace(
        '"decay": 0', '"decay": ' + "[" * 100_000 + "]" * 100_000
    )
    return _write(tmp / "in", "a.fact.json", text.encode())


def _lone_surrogate(tmp: Path) -> Path:
    # In a revision: written after the fact it revises, it used to fail half way.
    _write(tmp / "in", "a.fact.json", _fact())
    text = json.dumps(_fact(**{"@id": "fact:b", "supersedes": "fact:a"}))
    return _write(
        tmp / "in", "b.fact.json", text.replace("rebooted", "rebooted \\ud800").encode()
    ).parent.parent


def _duplicate_key(tmp: Path) -> Path:
    text = json.dumps(_fact()).replace('"@id": "fact:a"', '"@id": "fact:a", "@id": "fact:b"')
    return _write(tmp / "in", "a.fact.json", text.encode())


def _decomposed_reference(tmp: Path) -> Path:
    _write(tmp / "in", "a.fact.json", _fact(**{"@id": "fact:caf\u00e9"}))
    return _write(
        tmp / "in", "b.fact.json", _fact(**{"@id": "fact:b", "supersedes": "fact:cafe\u0301"})
    ).parent.parent


def _dangling_reference(tmp: Path) -> Path:
    # Refused by the checks against the memory, not by reading the file.
    return _write(tmp / "in", "a.fact.json", _fact(derivedFrom="fact:nowhere"))


def _long_id(tmp: Path) -> Path:
    return _write(tmp / "in", "a.fact.json", _fact(**{"@id": "fact:" + "x" * 300}))


# case -> (what makes the input, what the refusal says)
CASES: dict[str, tuple[Callable[[Path], Path], str]] = {
    "a path that does not exist": (_missing, "no-such-folder: does not exist"),
    "a directory named like a fact file": (
        _directory_named_like_a_fact,
        "b.fact.json: is a directory",
    ),
    "a named pipe": (_pipe, "a.fact.json: is not a regular file"),
    "a symbolic link loop": (_symlink_loop, "a.fact.json: cannot be read (Too many levels"),
    "latin-1 bytes": (_latin1, "a.fact.json: is not UTF-8 text (byte 0xe9"),
    "an integer of 5000 digits": (_huge_integer, "holds an integer of 5,000 digits"),
    "nesting 100,000 deep": (_deep, "nests arrays or objects deeper"),
    "a lone surrogate in a revision": (
        _lone_surrogate,
        "b.fact.json statement: holds a lone surrogate",
    ),
    "a key given twice": (_duplicate_key, "holds the key '@id' twice"),
    "a decomposed reference": (
        _decomposed_reference,
        "(fact:b).supersedes: is not in Unicode's composed form",
    ),
    "a reference to no fact": (
        _dangling_reference,
        "(fact:a).derivedFrom: fact:nowhere is neither",
    ),
    "an @id too long for a name": (
        _long_id,
        ".@id: is 305 characters; the limit is 200 (a fact without a label",
    ),
}


def _state(data: Path) -> tuple[int, dict[str, int]]:
    store = EmbeddedStore.open(data)
    try:
        return bulk_read(store, lambda tx: (tx.clock(), tx.dump_counts()))
    finally:
        store.close()


@pytest.fixture(scope="module")
def held_once(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A memory holding the CI facts, imported once for the module (each case works on a
    copy of it)."""
    held = tmp_path_factory.mktemp("held") / "memory"
    done = _import(CI, held)
    assert done.returncode == 0, done.stderr
    return held


def _import_here(capsys: pytest.CaptureFixture[str], path: Path, data: Path) -> tuple[int, str]:
    """``_import`` run in this process (``cli.main``, under ``clean_env``): its exit code and
    stderr. A traceback here is an exception out of ``main``, which fails the test."""
    code = cli.main(["kndl", "import", str(path), "--data-dir", str(data)])
    return code, capsys.readouterr().err


@pytest.mark.usefixtures("clean_env")
@pytest.mark.parametrize("case", sorted(CASES))
def test_a_refused_import_writes_nothing_and_makes_no_memory(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], case: str, held_once: Path
) -> None:
    make, says = CASES[case]
    path = make(tmp_path)
    fresh = tmp_path / "fresh"
    done = _import(path, fresh)
    assert done.returncode == 1, done.stderr
    assert "Traceback" not in done.stderr, done.stderr
    assert says in done.stderr and "(nothing was written)" in done.stderr, done.stderr
    assert not fresh.exists()  # a mistyped --data-dir is not left holding an empty memory

    # Into a memory that was there: the same refusal, by the same code (one cold process
    # a case is enough to prove the operator's view above; each costs ~0.5 s of CPU).
    held = shutil.copytree(held_once, tmp_path / "held")
    before = _state(held)
    code, stderr = _import_here(capsys, path, held)
    assert code == 1 and says in stderr, stderr
    assert _state(held) == before


def test_a_byte_order_mark_is_not_part_of_the_text(tmp_path: Path) -> None:
    path = _write(tmp_path / "in", "a.fact.json", b"\xef\xbb\xbf" + json.dumps(_fact()).encode())
    done = _import(path, tmp_path / "memory")
    assert done.returncode == 0, done.stderr
    assert "imported 1 facts" in done.stderr


def test_an_escape_sequence_in_a_refused_id_does_not_reach_the_terminal(tmp_path: Path) -> None:
    # ESC ] 0 ; ... BEL sets a terminal's title; ESC [ 2 J clears its screen.
    path = _write(tmp_path / "in", "a.fact.json", _fact(**{"@id": "fact:\x1b]0;owned\x07\x1b[2J"}))
    done = _import(path, tmp_path / "memory")
    assert done.returncode == 1 and "nothing was written" in done.stderr, done.stderr
    assert "\x1b" not in done.stderr and "\x07" not in done.stderr
    assert "holds U+001B (ESCAPE" in done.stderr


def test_a_derived_fact_s_observation_time_is_announced_not_dropped_unseen(
    tmp_path: Path,
) -> None:
    path = _write(
        tmp_path / "in",
        "a.fact.json",
        _fact(**{"@type": ["Fact", "Concept"], "observedAt": "2026-05-01T00:00:00Z"}),
    )
    done = _import(path, tmp_path / "memory")
    assert done.returncode == 0, done.stderr
    assert "read but not held by this memory (see README, KNDL): observedAt (1)" in done.stderr


def _default_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@contextlib.contextmanager
def _writing(tmp_path: Path) -> Iterator[tuple[subprocess.Popen[str], Path, Path]]:
    """An import of 3,000 facts, yielded once it has written some (its progress line):
    the running process, the facts' file and the memory's folder."""
    facts = [
        {"@id": f"fact:{i}", "@type": "Fact", "statement": f"s{i}", "source": f"https://e.org/{i}"}
        for i in range(3_000)
    ]
    path = tmp_path / "all.json"
    path.write_text(json.dumps({"@context": {}, "@graph": facts}))
    data = tmp_path / "memory"
    command = [sys.executable, "-m", "kenning_encounter", "kndl", "import", str(path)]
    with subprocess.Popen(
        [*command, "--data-dir", str(data)],
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
        env=clean_environ(),
        cwd=ROOT,
        # A test run started in the background (CI's, a shell's '&') ignores SIGINT, and
        # a child inherits that: Python would then never raise KeyboardInterrupt.
        preexec_fn=_default_sigint,
    ) as running:
        assert running.stderr is not None
        _read_until(running.stderr, "checked, 3000 facts")  # the writes begin
        _read_until(running.stderr, " of 3,000 facts")  # some are written
        yield running, path, data


def _read_until(stream: IO[str], text: str, most: int = 50) -> None:
    """Read ``stream`` a line at a time until one holds ``text``: a warning (a statement
    slow on a loaded machine) may come between the lines an import prints."""
    read: list[str] = []
    while len(read) < most:
        line = stream.readline()
        if not line:
            break
        read.append(line)
        if text in line:
            return
    raise AssertionError(f"no line holding {text!r} in {read}")


def _authored(data: Path) -> int:
    store = EmbeddedStore.open(data)
    try:
        return len(store.read(lambda tx: tx.authored_graph()).nodes)
    finally:
        store.close()


def test_an_import_interrupted_half_way_is_undone_and_runs_again(tmp_path: Path) -> None:
    """Ctrl-C while the facts are written: before, the facts written so far stayed, and
    every later run was refused as a second import of them."""
    with _writing(tmp_path) as (running, path, data):
        assert running.stderr is not None
        running.send_signal(signal.SIGINT)
        err = running.stderr.read()
        assert running.wait(timeout=180) == 1, err
    assert "Traceback" not in err
    assert "error: interrupted (the import stopped and was undone" in err, err
    assert _authored(data) == 0
    again = _import(path, data)
    assert again.returncode == 0, again.stderr
    assert "imported 3000 facts" in again.stderr
    # Written a tenth at a time (500 a batch at the least), and told after each but the last.
    told = [line.split()[1] for line in again.stderr.splitlines() if line.startswith("wrote ")]
    assert told == ["500", "1,000", "1,500", "2,000", "2,500"], again.stderr


def test_an_import_killed_half_way_is_removed_by_the_next_run(tmp_path: Path) -> None:
    """kill -9 while the facts are written: nothing in that process can undo them, and
    before, every later run was refused as a second import of the same facts. The next
    run finds the earlier one's encounter still open, removes what it wrote, and
    imports."""
    with _writing(tmp_path) as (running, path, data):
        running.kill()
        running.wait(timeout=60)
    written = _authored(data)
    assert written > 0  # killed while it wrote
    again = _import(path, data)
    assert again.returncode == 0, again.stderr
    assert f"cut short; the {written} node(s) it wrote were removed first" in again.stderr
    assert "imported 3000 facts" in again.stderr
