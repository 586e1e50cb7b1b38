"""ReadTx.encounters pages in the store (the inspector's spine): ``offset`` skips the
newest, ``limit`` bounds the rest, on both backends and with the other filters."""

from __future__ import annotations

from kenning_encounter.memory.service import Memory
from kenning_encounter.store.port import GraphStore


def test_offset_and_limit_walk_the_encounters_newest_first(
    memory: Memory, store: GraphStore
) -> None:
    for i in range(7):
        memory.advance_encounter("pager", f"step {i}", close_summary="on" if i else None)
    memory.advance_encounter("other", "the other's only one")

    def purposes(
        limit: int, offset: int = 0, unsealed_only: bool = False, exclude_locus: str | None = None
    ) -> list[str]:
        return store.read(
            lambda tx: [
                e.purpose
                for e in tx.encounters(
                    unsealed_only=unsealed_only,
                    limit=limit,
                    exclude_locus=exclude_locus,
                    offset=offset,
                )
            ]
        )

    everything = purposes(limit=100)
    assert everything[:2] == ["the other's only one", "step 6"]
    pages = [purposes(limit=3, offset=o) for o in (0, 3, 6, 9)]
    assert [p for page in pages for p in page] == everything
    assert [len(p) for p in pages] == [3, 3, 2, 0]
    # The filters apply before the skip: the open ones are the other's and step 6.
    assert purposes(unsealed_only=True, limit=5, offset=1) == ["step 6"]
    assert purposes(exclude_locus="other", limit=2, offset=1) == ["step 5", "step 4"]
