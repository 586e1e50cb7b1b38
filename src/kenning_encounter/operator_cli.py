"""The operator's erasure commands: ``erase REF...``, ``purge --due`` and ``review``
(the frozen nodes: unused for eight half-lives, memory/activation.py).

Both show a plan first (what goes, and why each node is included) and write nothing
until confirmed: ``--yes``, or on a terminal by typing what the prompt asks. Without
either the plan is all there is (a dry run). After the deletion, what lies beside the
graph is scrubbed (memory/scrub.py) and a report says what each step removed. The plan
and the report go to stderr, or as one JSON document to stdout with ``--json``.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from kenning_encounter.errors import KenningError
from kenning_encounter.memory import erasure
from kenning_encounter.plaintext import escaped, json_shown, one_line, quoted
from kenning_encounter.store.port import GraphStore

EXIT_OK, EXIT_FAILED, EXIT_CONFIG = 0, 1, 2
PROG = "kenning-encounter"


def _error(message: str) -> None:
    # One line, nothing a terminal acts on (as kenning_encounter.cli's errors).
    sys.stderr.write(f"{PROG}: error: {escaped(message)}\n")


def _plan_json(plan: erasure.Plan) -> dict[str, Any]:
    counts: dict[str, int] = {}
    for item in plan.items:
        counts[item.node.type] = counts.get(item.node.type, 0) + 1
    return {
        "refs": list(plan.refs),
        "nodes": [
            {
                "id": i.node.id,
                "type": i.node.type,
                "name": i.node.name,
                "encounter": i.node.encounter,
                "classification": i.node.props.get("classification"),
                "why": i.why,
            }
            for i in plan.items
        ],
        "counts": counts,
        "tombstones": plan.tombstones,
        "withdrawn": list(plan.withdrawn),
        "kept": [
            {"id": i.node.id, "type": i.node.type, "name": i.node.name, "why": i.why}
            for i in plan.kept
        ],
    }


def _show_plan(plan: erasure.Plan) -> None:
    out = sys.stderr
    out.write(f"erasure plan: {len(plan.items)} node(s)\n")
    for i in plan.items:
        classes = i.node.props.get("classification")
        marked = f" [{classes}]" if classes else ""
        out.write(
            f"  {i.node.type} {quoted(i.node.name)} {i.node.id}{marked} "
            f"(recorded in {i.node.encounter})\n"
        )
        out.write(f"      why: {one_line(i.why)}\n")
    tombs = ", ".join(f"{enc} +{n}" for enc, n in plan.tombstones.items())
    out.write(f"tombstones to leave: {tombs or 'none'}\n")
    drew = ", ".join(plan.withdrawn)
    out.write(f"purpose and summary to withdraw (they drew on what goes): {drew or 'none'}\n")
    if plan.kept:
        out.write("kept (linked to what goes, but also to what stays; name them to erase them):\n")
        for i in plan.kept:
            out.write(f"  {i.node.type} {quoted(i.node.name)} {i.node.id}: {one_line(i.why)}\n")


def _confirmed(plan: erasure.Plan, yes: bool, word: str) -> bool | None:
    """True to go ahead, False when the operator declined, None for a dry run."""
    if yes:
        return True
    if not sys.stdin.isatty():
        return None
    answer = input(f"permanently erase these {len(plan.items)} node(s)? type {word!r}: ")
    return answer.strip() == word


def _open(ns: argparse.Namespace, doing: str) -> tuple[Any, GraphStore] | int:
    from kenning_encounter.cli import open_alone  # the CLI imports this module

    return open_alone(ns, doing)


def run_erase(ns: argparse.Namespace) -> int:
    """Erase referents and what is only about them; tombstones stay on the spine."""
    if not ns.refs and not ns.resume:
        _error("REF: name at least one referent to erase (a name or an id), or pass --resume")
        return EXIT_CONFIG
    return _run(ns, "an erasure", lambda store: erasure.plan(store, ns.refs), _erase_word)


def run_purge(ns: argparse.Namespace) -> int:
    """Erase every node whose retention has run out, and what is only about it."""
    from datetime import UTC, datetime

    now = datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")

    def make(store: GraphStore) -> erasure.Plan:
        ids = erasure.due(store, now)
        return erasure.plan(store, ids) if ids else erasure.Plan((), ())

    return _run(ns, "a purge", make, lambda plan: f"purge {len(plan.items)}")


def run_review(ns: argparse.Namespace) -> int:
    """The review queue: frozen heads nobody pinned, as the operator's grant shows them,
    and the erasure plan they make. A dry run unless confirmed; fading never deletes."""
    from datetime import UTC, datetime

    from kenning_encounter.memory import activation, gates

    now = datetime.now(UTC)
    queue: dict[str, Any] = {}

    def make(store: GraphStore) -> erasure.Plan:
        settings = queue.pop("settings")
        policy = activation.Activation(settings.activation_half_life_days)
        seen = gates.gated(store, settings.granted)
        frozen = activation.frozen(seen, policy, now)
        queue["queue"] = [
            {
                "id": n.id,
                "type": n.type,
                "name": n.name,
                "last_used_at": activation.last_use(n),
                "idle_days": idle_days,
            }
            for n, idle_days in frozen
        ]
        if not ns.json:
            _show_queue(queue["queue"], policy)
        ids = [n.id for n, _ in frozen]
        return erasure.plan(seen, ids) if ids else erasure.Plan((), ())

    return _run(
        ns,
        "a review",
        make,
        lambda plan: f"erase {len(plan.items)}",
        extra=queue,
        nothing="the review queue is empty: no node has been unused long enough to freeze",
    )


def _show_queue(queue: list[dict[str, Any]], policy: Any) -> None:
    out = sys.stderr
    days = policy.thresholds()["frozen"]
    out.write(f"review queue: {len(queue)} frozen node(s), unused for {days:g} days or more\n")
    for item in queue:
        out.write(
            f"  {item['type']} {quoted(item['name'])} {item['id']}: "
            f"last used {item['last_used_at']} "
            f"({item['idle_days']:g} days)\n"
        )
    if queue:
        out.write("a use brings any of them back (find_by_name with a session, a link, a pin)\n")


def _erase_word(plan: erasure.Plan) -> str:
    # The operator types the referent's id: a name alone is too easy to confirm blindly.
    first = plan.items[0].node.id if plan.items else ""
    return first if len(plan.refs) == 1 else f"erase {len(plan.items)}"


RESUME = "kenning-encounter erase --resume"


def _run(
    ns: argparse.Namespace,
    doing: str,
    make_plan: Callable[[GraphStore], erasure.Plan],
    word: Callable[[erasure.Plan], str],
    *,
    extra: dict[str, Any] | None = None,
    nothing: str = "nothing is due: no node's retention has run out",
) -> int:
    """``extra``: filled by ``make_plan`` (it is handed the settings as ``settings``)
    and added to the report; ``nothing``: what an empty plan is said to mean."""
    from kenning_encounter.memory import scrub

    opened = _open(ns, doing)
    if isinstance(opened, int):
        return opened
    settings, store = opened
    data_dir: Path = settings.resolved_data_dir
    report: dict[str, Any] = {}
    holder = [store]
    try:
        left = scrub.pending(data_dir)
        if left and _cut_before_commit(store, left):
            scrub.clear_pending(data_dir)
            sys.stderr.write(
                "an earlier erasure was stopped before it deleted anything (its nodes are "
                "still here); its mark is cleared, and nothing of it is left to finish\n"
            )
            left = None
        resume = bool(getattr(ns, "resume", False))
        if resume and left is None:
            _error("--resume: no unfinished erasure here; name the referents to erase instead")
            return EXIT_CONFIG
        if left is not None and not resume:
            _error(
                f"an earlier erasure deleted {len(left)} node(s) but did not finish removing "
                f"them from what lies beside the graph: run `{RESUME}` first"
            )
            return EXIT_FAILED
        if resume and left is not None:
            report = {"dry_run": False, "resumed": len(left)}
            return _scrub(ns, settings, holder, left, report)
        if extra is not None:
            extra["settings"] = settings
        plan = make_plan(store)
        report = (extra or {}) | _plan_json(plan)
        if not ns.json:
            _show_plan(plan)
        decision = _confirmed(plan, ns.yes, word(plan)) if plan.items else None
        if decision is not True:
            report["dry_run"] = True
            if not ns.json and not plan.items:
                sys.stderr.write(f"{nothing}\n")
            elif not ns.json:
                sys.stderr.write(
                    "nothing erased: pass --yes to erase\n"
                    if decision is None
                    else "nothing erased: the confirmation did not match\n"
                )
            _emit(ns, report)
            return EXIT_FAILED if decision is False else EXIT_OK
        scrub.mark_pending(data_dir, plan.ids)
        try:
            done = erasure.erase(store, plan)
        except BaseException:
            scrub.clear_pending(data_dir)
            raise
        report |= {"dry_run": False, "tick": done.tick, "withdrawn": list(done.withdrawn)}
        if not ns.json:
            tombs = ", ".join(f"{enc} +{n}" for enc, n in done.tombstones.items())
            sys.stderr.write(f"erased {len(plan.items)} node(s) at tick {done.tick}\n")
            sys.stderr.write(f"tombstones: {tombs or 'none'}\n")
            sys.stderr.write(
                "purpose and summary withdrawn (the encounter drew on what was erased): "
                f"{', '.join(done.withdrawn) or 'none'}\n"
            )
        return _scrub(ns, settings, holder, plan.ids, report)
    except (KenningError, OSError) as exc:
        _error(str(exc))
        return EXIT_FAILED
    finally:
        for s in holder:
            s.close()


def _cut_before_commit(store: GraphStore, ids: list[str]) -> bool:
    """Whether the erasure marked pending with ``ids`` was stopped (a kill) between its
    mark and its commit: the deletion is one transaction, so a node of it still here
    means none went. Resuming it would scrub, report success and leave them all."""
    return bool(store.read(lambda tx: tx.get_nodes(ids)))


def _scrub(
    ns: argparse.Namespace,
    settings: Any,
    holder: list[GraphStore],
    ids: list[str],
    report: dict[str, Any],
) -> int:
    """Everything beside the graph; a failure leaves the pending mark for ``--resume``."""
    from kenning_encounter.memory import scrub

    data_dir: Path = settings.resolved_data_dir
    try:
        steps = scrub.beside_store(holder[0], data_dir, ids)
        holder.pop().close()
        if settings.store == "embedded":
            steps += scrub.embedded_files(data_dir)
    except (KenningError, OSError, ValueError) as exc:
        _error(
            f"{exc}; the nodes are deleted, but not yet removed from everything beside the "
            f"graph: fix that, then run `{RESUME}` (with the same settings) to finish"
        )
        return EXIT_FAILED
    scrub.clear_pending(data_dir)
    report["scrubbed"] = steps
    if not ns.json:
        for line in steps:
            sys.stderr.write(f"  {line}\n")
    _emit(ns, report)
    return EXIT_OK


def _emit(ns: argparse.Namespace, report: dict[str, Any]) -> None:
    if ns.json:
        sys.stdout.write(json_shown(report, indent=2) + "\n")
