"""Every way the memory can fail under real Claude Code: the turn runs, and the model is told.

No failure of ours may block a prompt (a hook exiting 2 does that), and none may
pass for "nothing relevant": each reaches the model as one ``[kenning-encounter: …]`` line.
"""

from __future__ import annotations

import os
from pathlib import Path

from tests.e2e.conftest import SRC
from tests.harness.claude import (
    Agent,
    Workspace,
    infusion_of,
    notices,
    workspace,
)

# The index fails under the pipeline (tests/support/faults/sitecustomize.py), so /infuse
# answers "failed" for real; the source tree stays importable behind it.
FAULTS = Path(__file__).resolve().parents[1] / "support" / "faults"
INFUSE_FAULT = {
    "KENNING_ENCOUNTER_TEST_FAULT": "infuse",
    "PYTHONPATH": os.pathsep.join([str(FAULTS), str(SRC)]),
}


def only_request(space: Workspace, before: int = 0) -> str:
    requests = space.fake.agent_requests()[before:]
    assert len(requests) == 1, f"{len(requests)} requests reached the model"
    return requests[0].text()


def test_server_down_does_not_block_and_says_so(dead_space: Workspace) -> None:
    dead_space.fake.responder = Agent()
    run = dead_space.print_run("the estuary survey")
    assert "blocked" not in run.stdout + run.stderr, run.explain()
    text = only_request(dead_space)
    assert "the estuary survey" in text
    infusion = infusion_of(dead_space.fake.agent_requests()[0])
    assert infusion is not None, text[-3000:]
    [line] = notices(infusion)
    assert "unreachable" in line, line
    assert line == infusion.splitlines()[0]


def test_a_failure_inside_infuse_is_stated_in_one_line(tmp_path: Path, claude_binary: Path) -> None:
    with workspace(tmp_path, claude_binary, server_env=INFUSE_FAULT) as space:
        space.fake.responder = Agent()
        run = space.print_run("the estuary survey")
        assert "blocked" not in run.stdout + run.stderr, run.explain()
        text = only_request(space)
        assert "the estuary survey" in text
        infusion = infusion_of(space.fake.agent_requests()[0])
        assert infusion is not None, "the failed infusion reached the model as silence"
        lines = [n for n in notices(infusion) if "fail" in n]
        assert len(lines) == 1, infusion
        assert space.server is not None
        assert "infusion failed" in space.server.stderr


def test_a_missing_hook_script_does_not_block(space: Workspace) -> None:
    space.hook_copy.unlink()
    space.fake.responder = Agent()
    run = space.print_run("the estuary survey")
    assert "blocked" not in run.stdout + run.stderr, run.explain()
    text = only_request(space)
    assert "the estuary survey" in text
    said = [n for n in notices(text) if "missing" in n]
    assert said, f"nothing told the model the hook script is gone:\n{text[-3000:]}"
