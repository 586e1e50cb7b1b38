"""Child process for the crash test: records numbered batches, acknowledging each on stdout."""

from __future__ import annotations

import sys
from pathlib import Path

from kenning_encounter.memory.service import Memory
from kenning_encounter.store.embedded.backend import EmbeddedStore

BATCH = 25


def main() -> None:
    data_dir, round_no = Path(sys.argv[1]), int(sys.argv[2])
    store = EmbeddedStore.open(data_dir)
    memory = Memory(store)
    session = f"crash-{round_no}"
    memory.advance_encounter(session, "record until killed")
    n = 0
    while True:
        memory.create_entities(
            session,
            [
                {
                    "type": "Observation",
                    "name": f"r{round_no}-b{n}-{i}",
                    "description": f"batch{round_no}x{n} item {i}",
                }
                for i in range(BATCH)
            ],
        )
        print(f"ack {n}", flush=True)
        n += 1


if __name__ == "__main__":
    main()
