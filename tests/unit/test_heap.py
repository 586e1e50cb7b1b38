"""What a large reading freed goes back to the operating system (kenning_encounter.heap)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from kenning_encounter import heap

# In a process of its own: the resident size of this one is the whole suite's.
_PROBE = """
import gc
from kenning_encounter import heap

def resident_mib():
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS"):
                return int(line.split()[1]) // 1024

# 200 MiB in pieces the C library allocates (over pymalloc's 512 bytes), every
# hundredth kept, so the freed space lies between live pieces and stays in the heap.
pieces = [bytes(1024) + bytes([i % 251]) for i in range(200_000)]
kept = pieces[::100]
del pieces
gc.collect()
before = resident_mib()
heap.give_back()
print(before, resident_mib(), len(kept))
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc; glibc's trim")
def test_what_a_reading_freed_is_given_back() -> None:
    if not heap.give_back():
        pytest.skip("this C library has no malloc_trim")
    out = subprocess.run(
        [sys.executable, "-c", _PROBE], capture_output=True, text=True, check=True, timeout=120
    )
    before, after, _ = (int(x) for x in out.stdout.split())
    assert before - after > 100, (before, after)  # most of the 200 MiB freed
