"""Reads and checks the write-path contract tests share: a refusal that leaves the
store as it was, and a node, its edges or the clock as the store holds them."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from kenning_encounter.errors import KenningError
from kenning_encounter.memory.service import Memory
from kenning_encounter.store.port import GraphStore, ReadTx
from kenning_encounter.store.records import EdgeRecord, NodeRecord
from tests.support.snapshot import snapshot


def refused(
    store: GraphStore,
    call: Callable[[], Any],
    error: type[KenningError],
    before: dict[str, Any] | None = None,
) -> KenningError:
    """``call`` refused with exactly ``error``, and the store unchanged: as ``before`` when
    given (one snapshot for a run of refusals, each of which must leave the store as it was),
    else as it was just before the call."""
    if before is None:
        before = snapshot(store)
    with pytest.raises(error) as info:
        call()
    assert type(info.value) is error, f"refused by {type(info.value).__name__}: {info.value}"
    assert snapshot(store) == before, "a refused call changed the store"
    return info.value


def node_by_id(store: GraphStore, node_id: str) -> NodeRecord:
    node = store.read(lambda tx: tx.get_node(node_id))
    assert node is not None, node_id
    return node


def id_by_name(memory: Memory, name: str) -> str:
    return memory.find_by_name(name).node.id


def edges_touching(store: GraphStore, node_id: str) -> list[EdgeRecord]:
    return store.read(lambda tx: tx.edges_of(node_id))


def clock_now(store: GraphStore) -> int:
    def work(tx: ReadTx) -> int:
        return tx.clock()

    return store.read(work)
