"""A conversation's life beyond one prompt: resume, continue, compaction, two at once.

The renewal economy: a body delivered earlier is only named ("standing") while
it is still in the model's context. Resuming keeps the context, so it stays
standing; compaction drops it, so the next prompt that touches it gets it again.
"""

from __future__ import annotations

from tests.harness.claude import (
    SESSION_LINE,
    Step,
    Workspace,
    call_memory,
    infusion_of,
    print_args,
    tool,
)
from tests.harness.test_sessions import FALCON, advance, observation, record, seed_falcon
from tests.support.fake_anthropic import Exchange, Turn
from tests.support.handles import handle

BODY = "390 km/h"


def ask(space: Workspace, prompt: str, *args: str) -> tuple[str, str]:
    """One prompt; (the session it ran in, what the hook infused)."""
    before = len(space.fake.agent_requests())
    run = space.print_run(prompt, *args)
    requests = space.fake.agent_requests()[before:]
    assert requests, run.explain()
    return run.session_id(), infusion_of(requests[0]) or ""


def test_resume_and_continue_keep_what_was_delivered(space: Workspace) -> None:
    seed_falcon(space)
    session, first = ask(space, "how fast does the peregrine falcon dive?")
    assert BODY in first, first
    resumed, second = ask(space, "the peregrine falcon dive again", "--resume", session)
    assert resumed == session
    assert "peregrine dive" in second and BODY not in second, second
    [request] = space.fake.agent_requests()[-1:]
    assert f"session_id is {session}" in request.text()
    continued, third = ask(space, "and the peregrine falcon hunting pigeons", "--continue")
    assert continued == session
    assert "peregrine dive" in third and BODY not in third, third


def test_after_compaction_the_body_is_delivered_again(space: Workspace) -> None:
    seed_falcon(space)
    session, first = ask(space, "how fast does the peregrine falcon dive?")
    assert BODY in first, first
    _, standing = ask(space, "the peregrine falcon dive again", "--resume", session)
    assert BODY not in standing, standing
    compact = space.run(*print_args("--resume", session), prompt="/compact")
    assert compact.returncode == 0, compact.explain()
    assert any(e.is_compaction for e in space.fake.exchanges), "no compaction request was made"
    assert "SessionStart:compact" in compact.debug, compact.explain()
    _, after = ask(space, "and the peregrine falcon dive once more", "--resume", session)
    assert BODY in after, f"after compaction the body was not delivered again:\n{after}"
    assert "the body is above in your context" not in after, after


class PerSession:
    """A model serving several conversations at once: each session runs its own steps."""

    def __init__(self) -> None:
        self.steps: dict[str, list[Step]] = {}

    def __call__(self, exchange: Exchange) -> Turn | None:
        found = set(SESSION_LINE.findall(exchange.text()))
        assert len(found) == 1, f"one conversation's request carried sessions {found}"
        held = found.pop()  # the handle the model was told; its id part names the session
        session = held.partition("~")[0]
        steps = self.steps.setdefault(
            session,
            [
                advance(f"parallel {session[:8]}"),
                record(observation(f"from {session}", f"Written by session {session} alone.")),
            ],
        )
        return steps.pop(0)(held) if steps else None


def test_two_sessions_at_once(space: Workspace) -> None:
    model = PerSession()
    space.fake.responder = model
    started = [space.start(*print_args(), prompt=f"parallel work {i}") for i in range(2)]
    runs = [space.finish(s) for s in started]
    for run in runs:
        assert run.returncode == 0, run.explain()
    sessions = {run.session_id() for run in runs}
    assert len(sessions) == 2 and set(model.steps) == sessions
    assert not [r for r in space.fake.tool_results() if r.is_error], space.fake.tool_results()
    assert space.server is not None
    for session in sessions:
        found = call_memory(space.server.url, "find_by_name", {"name": f"from {session}"})
        assert not found.is_error and f"Written by session {session} alone." in found.text, found
        late = call_memory(
            space.server.url,
            tool("create_entities").removeprefix("mcp__kenning-encounter__"),
            {"session_id": handle(session), "entities": [observation("late", FALCON)]},
        )
        assert late.is_error and "dissolved" in late.text, late.text
