"""A data directory that cannot be one is refused by every command, naming the setting
and the fix, before anything is made: a file where the folder (or a folder above it)
should be, a link to nothing, a loop of links, a name past the file system's limit.

Before, a name too long raised a traceback out of ``doctor`` and ``export`` (the check
for a memory stat'ed the path), serve said "[Errno 17] File exists: '/etc/passwd'", and
doctor called each of these places fine ("no store yet; serve creates it")."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest

from kenning_encounter import cli
from kenning_encounter.store.embedded import place
from kenning_encounter.store.embedded.backend import EmbeddedStore
from tests.support.cli import held_memory, run_cli

_OURS = ("KENNING_ENCOUNTER_", "NEO4J_", "GEMINI_", "OPENAI_")


def _a_file(tmp: Path) -> tuple[Path, str]:
    (tmp / "notes.txt").write_text("a file\n")
    return tmp / "notes.txt", "notes.txt is a file, not a folder"


def _below_a_file(tmp: Path) -> tuple[Path, str]:
    (tmp / "notes.txt").write_text("a file\n")
    return tmp / "notes.txt" / "memory", "notes.txt is a file, not a folder"


def _link_to_nothing(tmp: Path) -> tuple[Path, str]:
    (tmp / "gone").symlink_to(tmp / "nowhere")
    return tmp / "gone", "gone is a link to nothing"


def _loop_of_links(tmp: Path) -> tuple[Path, str]:
    (tmp / "loop").symlink_to(tmp / "loop")
    return tmp / "loop" / "memory", "its links lead round in a circle"


def _long_name(tmp: Path) -> tuple[Path, str]:
    return tmp / ("n" * 300), "longer than the file system allows"


def _long_name_below_a_missing_folder(tmp: Path) -> tuple[Path, str]:
    # The walk up meets the missing folder first; the long name is checked before it is made.
    return tmp / "missing" / ("n" * 300) / "memory", "a folder name in it is 300 bytes"


def _long_path(tmp: Path) -> tuple[Path, str]:
    return tmp.joinpath(*["d" * 200] * 21), "longer than the file system allows"


def _no_room_below(tmp: Path) -> tuple[Path, str]:
    # Short enough to name, too long for the store's own files below it.
    deep = tmp / "missing"
    while len(str(deep)) < 4040:
        deep /= "d" * min(200, 4060 - len(str(deep)))
    return deep, "would pass the 4096 the file system takes"


PLACES: dict[str, Callable[[Path], tuple[Path, str]]] = {
    "a file": _a_file,
    "below a file": _below_a_file,
    "a link to nothing": _link_to_nothing,
    "a loop of links": _loop_of_links,
    "a name too long": _long_name,
    "a long name below a missing folder": _long_name_below_a_missing_folder,
    "a path too long": _long_path,
    "no room below": _no_room_below,
}

COMMANDS = {
    "serve": ["serve", "--transport", "stdio"],
    "export": ["export", "-"],
    "forget": ["forget", "anything", "--yes"],
    "erase": ["erase", "anything"],
    "review": ["review"],
    "kndl export": ["kndl", "export", "--out", "{out}"],
}


def _listing(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*"))


@pytest.mark.parametrize("case", sorted(PLACES))
def test_the_place_says_what_is_wrong_with_it(tmp_path: Path, case: str) -> None:
    data_dir, said = PLACES[case](tmp_path)
    problem = place.problem(data_dir)
    assert problem is not None
    assert said in problem
    assert not EmbeddedStore.holds_memory(data_dir)  # and looking at it does not raise


def test_a_usable_place_has_no_problem(tmp_path: Path) -> None:
    assert place.problem(tmp_path) is None
    assert place.problem(tmp_path / "new" / "deeper") is None


@pytest.fixture
def in_process(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """``cli.main`` called here sees none of our settings, as ``run_cli``'s child does."""
    for key in list(os.environ):
        if key.startswith(_OURS):
            monkeypatch.delenv(key)
    monkeypatch.chdir(tmp_path)  # anything made in the working folder shows in the listing


def _main(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    """``kenning-encounter ARGV`` run in this process: its exit code, stdout and stderr.
    A traceback here is an exception out of ``main``, which fails the test."""
    try:
        code = cli.main(list(argv))
    except SystemExit as exc:  # argparse's usage errors
        code = exc.code if isinstance(exc.code, int) else 1
    out, err = capsys.readouterr()
    return code, out, err


def _refused(tmp_path: Path, case: str, command: str, run: Callable[..., tuple[int, str]]) -> None:
    data_dir, said = PLACES[case](tmp_path)
    before = _listing(tmp_path)
    args = [a.replace("{out}", str(tmp_path / "facts")) for a in COMMANDS[command]]
    code, stderr = run(*args, "--data-dir", str(data_dir))
    assert code == 2, stderr
    assert "Traceback" not in stderr
    assert "error: data_dir: " in stderr and said in stderr
    assert "--data-dir or KENNING_ENCOUNTER_DATA_DIR" in stderr
    assert _listing(tmp_path) == before  # nothing was made


@pytest.mark.usefixtures("in_process")
@pytest.mark.parametrize("command", sorted(COMMANDS))
@pytest.mark.parametrize("case", sorted(PLACES))
def test_a_command_refuses_a_place_that_cannot_be_a_memory(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], case: str, command: str
) -> None:
    def run(*argv: str) -> tuple[int, str]:
        code, _, err = _main(capsys, *argv)
        return code, err

    _refused(tmp_path, case, command, run)


# The same refusals as the operator meets them, from a real process (its exit status, no
# traceback on its stderr): every place once and every command once. The whole matrix
# runs in process above; a child costs a cold start (~0.5 s of CPU) each.
AS_A_PROCESS = [
    (case, sorted(COMMANDS)[i % len(COMMANDS)]) for i, case in enumerate(sorted(PLACES))
]


@pytest.mark.parametrize(("case", "command"), AS_A_PROCESS)
def test_a_command_run_as_a_process_refuses_the_place(
    tmp_path: Path, case: str, command: str
) -> None:
    def run(*argv: str) -> tuple[int, str]:
        done = run_cli(*argv)
        return done.returncode, done.stderr

    _refused(tmp_path, case, command, run)


def _doctor_failed(said: str, code: int, out: str, err: str) -> None:
    assert code == 1, out
    assert "Traceback" not in out + err
    line = next(x for x in out.splitlines() if " store " in x)
    assert line.lstrip().startswith("FAIL") and said in line
    assert "fix: choose a folder you can write with --data-dir" in out


@pytest.mark.usefixtures("in_process")
@pytest.mark.parametrize("case", sorted(PLACES))
def test_doctor_fails_the_place_and_says_the_fix(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], case: str
) -> None:
    data_dir, said = PLACES[case](tmp_path)
    _doctor_failed(said, *_main(capsys, "doctor", "--data-dir", str(data_dir)))


def test_doctor_run_as_a_process_fails_the_place(tmp_path: Path) -> None:
    data_dir, said = PLACES["below a file"](tmp_path)
    done = run_cli("doctor", "--data-dir", str(data_dir))
    _doctor_failed(said, done.returncode, done.stdout, done.stderr)


def test_an_import_refuses_the_place_and_writes_nothing(tmp_path: Path) -> None:
    held = held_memory(tmp_path / "held")
    dump = tmp_path / "held.jsonl"
    assert run_cli("export", str(dump), "--data-dir", str(held)).returncode == 0
    data_dir, said = _below_a_file(tmp_path)
    before = _listing(tmp_path)
    done = run_cli("import", str(dump), "--data-dir", str(data_dir))
    assert done.returncode == 2, done.stderr
    assert said in done.stderr and "Traceback" not in done.stderr
    assert _listing(tmp_path) == before


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_an_argument_that_is_not_utf8_is_refused_before_anything_is_made(
    tmp_path: Path, command: str
) -> None:
    # Python hands undecodable argument bytes over as lone surrogates ("\udce9" is 0xe9).
    data_dir = tmp_path / "caf\udce9"
    args = [a.replace("{out}", str(tmp_path / "facts")) for a in COMMANDS[command]]
    done = run_cli(*args, "--data-dir", str(data_dir))
    assert done.returncode == 2, done.stderr
    assert "is not UTF-8 text at character" in done.stderr and "(byte 0xe9)" in done.stderr
    assert "Traceback" not in done.stderr and _listing(tmp_path) == []


def test_a_setting_that_is_not_utf8_is_named_and_its_secret_not_shown(tmp_path: Path) -> None:
    data_dir = tmp_path / "m"
    for variable, setting in (
        ("KENNING_ENCOUNTER_DATA_DIR", "data_dir"),
        ("NEO4J_PASSWORD", "neo4j_password"),
        ("GEMINI_API_KEY", "gemini_api_key"),
    ):
        env = {"KENNING_ENCOUNTER_DATA_DIR": str(data_dir), variable: "s3cr\udce9t-value"}
        served = run_cli("serve", "--transport", "stdio", env=env)
        assert served.returncode == 2, served.stderr
        assert f"{setting} ({variable}): holds a byte that is not UTF-8" in served.stderr
        assert "s3cr" not in served.stderr and "Traceback" not in served.stderr
        checked = run_cli("doctor", env=env)
        assert (
            checked.returncode == 1 and f"FAIL  config   {setting} ({variable})" in checked.stdout
        )
    assert _listing(tmp_path) == []
