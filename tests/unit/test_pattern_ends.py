"""A pattern that means "the whole value" is matched whole, with ``fullmatch``.

``$`` also matches before a final line break, so ``re.match(r"^[a-z]{3}_[0-9a-f]{12}$")``
took ``"ent_0123456789ab\\n"`` as a node id: a dump could bring a node in under an id no
tool could name, and a retention, a tick or a triple's number passed with a line break
after it. The fix is one for the class: no pattern in the source ends in a bare ``$``
(``re.MULTILINE`` patterns aside, where ``$`` is meant as a line's end), and the checks
that read a value whole use ``fullmatch``.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from kenning_encounter.memory import asof, dump_checks, validate, writes

SRC = Path(__file__).resolve().parents[2] / "src" / "kenning_encounter"
_CALLS = {"compile", "match", "search", "fullmatch"}


def _multiline(call: ast.Call) -> bool:
    return any("MULTILINE" in ast.unparse(a) or ".M" in ast.unparse(a) for a in call.args[1:]) or (
        any("MULTILINE" in ast.unparse(k.value) for k in call.keywords)
    )


def _ends_loose(pattern: str) -> bool:
    if not pattern.endswith("$"):
        return False
    slashes = len(pattern[:-1]) - len(pattern[:-1].rstrip("\\"))
    return slashes % 2 == 0  # "\$" is a dollar sign, "\\$" an end


def test_no_pattern_ends_in_a_bare_dollar() -> None:
    found: list[str] = []
    for path in sorted(SRC.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if not (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr in _CALLS
                and isinstance(node.func.value, ast.Name)
                and node.func.value.id == "re"
                and node.args
                and isinstance(node.args[0], ast.Constant)
                and isinstance(node.args[0].value, str)
            ):
                continue
            if _ends_loose(node.args[0].value) and not _multiline(node):
                found.append(f"{path.relative_to(SRC)}:{node.lineno}: {node.args[0].value!r}")
    assert not found, "use fullmatch without '$' (which also matches before a last '\\n'):\n" + (
        "\n".join(found)
    )


def test_the_scan_sees_a_loose_end() -> None:
    assert _ends_loose(r"^[a-z]+$")
    assert not _ends_loose(r"costs \$")
    assert _ends_loose("ends\\\\$")
    assert not _ends_loose(r"[a-z]+\Z")


ID = "ent_0123456789ab"


@pytest.mark.parametrize("tail", ["\n", "\r\n", " "])
def test_checks_that_read_a_value_whole_refuse_a_tail(tail: str) -> None:
    assert writes.is_node_id(ID)
    assert not writes.is_node_id(ID + tail)
    assert dump_checks._ID.fullmatch(ID + tail) is None  # pyright: ignore[reportPrivateUsage]
    assert asof._TICK.fullmatch("12" + tail) is None  # pyright: ignore[reportPrivateUsage]
    number = validate._OBJECT_FORMS["number"][0]  # pyright: ignore[reportPrivateUsage]
    assert number("720") and not number("720" + tail)


def test_pattern_module_is_the_one_in_use() -> None:
    # The scan reads the source the tests import, not an installed copy.
    assert Path(writes.__file__).resolve().is_relative_to(SRC)
    assert re.fullmatch(r"[a-z]{3}_[0-9a-f]{12}", ID)
