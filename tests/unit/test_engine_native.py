"""The embedded engine's native run (store/embedded/engine.py ``rows``): the store's own
statements skip the wrapper's per-call work, and keep what that work guarded."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import ladybug
import pytest
from hypothesis import given
from hypothesis import strategies as st
from ladybug import connection as wrapper

from kenning_encounter.store.embedded import engine

_SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**63), max_value=2**63 - 1),
    st.floats(allow_nan=False),
    st.text(max_size=5),
)
_VALUES = st.recursive(
    _SCALARS,
    lambda inner: st.one_of(
        st.lists(inner, max_size=6),
        st.dictionaries(st.sampled_from(["a", "b"]), inner, max_size=2),
    ),
    max_leaves=12,
)


@given(value=st.one_of(_VALUES, st.lists(_SCALARS, max_size=8)))
def test_a_parameter_is_typed_as_the_wrapper_types_it(value: Any) -> None:
    """The key a prepared statement is kept under: the same types as the wrapper's key,
    or a statement prepared for one width of number would be handed another."""
    try:
        theirs = wrapper._pybind_value_signature(value)  # pyright: ignore[reportPrivateUsage]
    except ValueError:  # the wrapper cannot type some lists of rows: neither can we
        with pytest.raises(ValueError):
            engine.value_signature(value)
        return
    assert engine.value_signature(value) == theirs


@pytest.fixture
def conn(tmp_path: Path) -> Iterator[ladybug.Connection]:
    db = ladybug.Database(str(tmp_path / "engine.lbdb"))
    c = ladybug.Connection(db)
    try:
        yield c
    finally:
        c.close()
        db.close()


def test_a_setting_left_pending_applies_before_the_next_statement(
    conn: ladybug.Connection,
) -> None:
    """read_cypher sets a timeout and sets it back to none; both are pending until the
    next statement, so the native run applies them first, as the wrapper does."""
    slow = "UNWIND range(1, $n) AS x RETURN count(x)"
    conn.set_query_timeout(1)
    with pytest.raises(RuntimeError, match=r"(?i)interrupt|timeout"):
        engine.rows(conn, slow, {"n": 200_000_000})
    conn.set_query_timeout(0)
    assert engine.rows(conn, slow, {"n": 2_000_000}) == [[2_000_000]]


def test_an_engine_refusal_arrives_as_the_wrappers_does(conn: ladybug.Connection) -> None:
    with pytest.raises(RuntimeError, match="Nope"):
        engine.rows(conn, "MATCH (n:Nope) RETURN n", {"x": 1})
    with pytest.raises(RuntimeError, match="Nope"):
        engine.rows(conn, "MATCH (n:Nope) RETURN n")
    # A refused text is not kept: the table made, the same text runs.
    engine.rows(conn, "CREATE NODE TABLE Nope(k STRING, PRIMARY KEY(k))")
    assert engine.rows(conn, "MATCH (n:Nope) RETURN n", {"x": 1}) == []
