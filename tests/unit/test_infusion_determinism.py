"""The same memory, recorded twice, infuses the same way.

Node ids are random, so two recordings of one history differ only in ids. An
infusion that broke ties by id (or by the order a store happens to list nodes)
would choose differently between them; ties go to the newer node instead.
"""

from __future__ import annotations

import re
from pathlib import Path

from bench.synth import generate, record

from kenning_encounter.infusion.config import InfusionConfig
from kenning_encounter.infusion.pipeline import Infuser
from kenning_encounter.store.embedded.backend import EmbeddedStore

_ID = re.compile(r"\b[a-z]{3}_[0-9a-f]{12}\b")
_TIME = re.compile(r"\d{4}-\d\d-\d\dT[\d:.]+Z?")


def _payloads(data_dir: Path, prompts: int) -> list[str]:
    synth = generate(600, seed=5)
    store = EmbeddedStore.open(data_dir)
    try:
        record(store, synth)
        infuser = Infuser(store, InfusionConfig())
        found: list[str] = []
        for i, prompt in enumerate(synth.queries[:prompts]):
            payload = infuser.infuse(f"s-{i}", f"what do we know about the {prompt}?")["payload"]
            found.append(_TIME.sub("T", _ID.sub("ID", payload)))
        return found
    finally:
        store.close()


def test_two_recordings_of_one_history_infuse_alike(tmp_path: Path) -> None:
    first = _payloads(tmp_path / "one", 60)
    second = _payloads(tmp_path / "two", 60)
    assert sum(bool(p) for p in first) > 40, "the prompts should mostly find something"
    differing = [i for i, (a, b) in enumerate(zip(first, second, strict=True)) if a != b]
    assert differing == []
