"""LoCoMo retrieval evaluation of the infusion's lexical path (``python -m bench.locomo``).

The data (CC BY-NC 4.0) is read at run time from outside the repository; it is
never copied here.
"""

from __future__ import annotations

from pathlib import Path

# Relative to the repository root, where the runner is started from.
DEFAULT_DATA = Path("../shared/bench/locomo/locomo-dev.json")

# The conversations the method was developed on; the rest are a holdout check.
DEV_CONVERSATIONS = frozenset({"conv-26", "conv-30", "conv-41"})
