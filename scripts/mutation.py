"""Mutation testing of the load-bearing modules, one module at a time (``make mutation``).

Each module is mutated by mutmut in a scratch copy of the project under
build/mutation/<module>/, never in the work tree, with only the tests that guard it
selected, so one module's run fits in minutes. mutmut narrows further to the tests that
reach each mutated function. The summary says, per module, how many mutants the tests
killed and names the survivors; the score goes into release-notes/.

    python scripts/mutation.py                      # every module below
    python scripts/mutation.py memory/validate.py   # one or more of them
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = "src/kenning_encounter"
COPIED = ("src", "tests", "scripts", "pyproject.toml", "HOWTO.xml", "README.md")
SKIPPED = shutil.ignore_patterns("__pycache__", "harness", "node_modules", "*.pyc")

# module (under src/kenning_encounter) -> the tests that guard it. Embedded backend only:
# the Neo4j half of the contract suite runs the same checks and doubles the time.
MODULES: dict[str, list[str]] = {
    "memory/validate.py": [
        "tests/unit/test_validate_refusals.py",
        "tests/unit/test_validate_entity.py",
        "tests/contract/test_invariants.py",
        "tests/contract/test_mutants.py",
        "tests/contract/test_encounter_cycle.py",
    ],
    # test_forget.py left out: it reaches writes.py only to seed its CLI subprocess runs.
    "memory/writes.py": [
        "tests/contract/test_writes_edges.py",
        "tests/contract/test_invariants.py",
        "tests/contract/test_mutants.py",
        "tests/contract/test_encounter_cycle.py",
        "tests/contract/test_deletions.py",
    ],
    # The guards in process. The e2e tests start the server as a subprocess, out of reach:
    # there mutmut's trampoline looks for its config in the server's working directory and
    # stops with "Could not figure out where the code to mutate is".
    "server/security.py": [
        "tests/unit/test_security_parsing.py",
        "tests/unit/test_security_guards.py",
    ],
    # The gate's own tests, with no engine: the store-level corpus spawns a sandbox per
    # store and would take over an hour here; it runs in the suite.
    "store/cypher_guard.py": ["tests/unit/test_cypher_gate.py"],
    # The hook in process, main() included: its subprocess tests run outside mutmut's reach.
    "hooks/infuse_hook.py": [
        "tests/unit/test_hook_parts.py",
        "tests/unit/test_hook_edges.py",
        "tests/unit/test_hook_wire.py",
        "tests/unit/test_hook_main.py",
    ],
}


def _scratch(module: str, tests: list[str]) -> Path:
    work = ROOT / "build" / "mutation" / module.replace("/", "_").removesuffix(".py")
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    for name in COPIED:
        source = ROOT / name
        if source.is_dir():
            shutil.copytree(source, work / name, ignore=SKIPPED)
        elif source.exists():
            shutil.copy2(source, work / name)
    config = tomllib.loads((work / "pyproject.toml").read_text(encoding="utf-8"))
    if "mutmut" in config.get("tool", {}):
        raise SystemExit("pyproject.toml has a [tool.mutmut] section; this runner writes its own")
    setting = {
        "source_paths": ["src"],
        "only_mutate": [f"{PACKAGE}/{module}"],
        "also_copy": ["tests", "scripts", "HOWTO.xml", "README.md", "pyproject.toml"],
        "pytest_add_cli_args": ["-p", "no:cacheprovider", "-k", "not neo4j"],
        "pytest_add_cli_args_test_selection": tests,
    }
    lines = ["", "[tool.mutmut]", *(f"{k} = {json.dumps(v)}" for k, v in setting.items()), ""]
    with (work / "pyproject.toml").open("a", encoding="utf-8") as out:
        out.write("\n".join(lines))
    return work


def _results(work: Path) -> dict[str, list[str]]:
    done = subprocess.run(
        [str(Path(sys.executable).parent / "mutmut"), "results", "--all", "true"],
        cwd=work,
        capture_output=True,
        text=True,
        check=False,
    )
    by_status: dict[str, list[str]] = {}
    for line in done.stdout.splitlines():
        name, sep, status = line.strip().rpartition(": ")
        if sep:
            by_status.setdefault(status, []).append(name)
    return by_status


def run(module: str, children: int) -> dict[str, Any]:
    work = _scratch(module, MODULES[module])
    env = {
        k: v for k, v in os.environ.items() if not k.startswith(("KENNING_ENCOUNTER_", "NEO4J_"))
    }
    subprocess.run(
        [str(Path(sys.executable).parent / "mutmut"), "run", "--max-children", str(children)],
        cwd=work,
        env=env,
        check=False,
    )
    by_status = _results(work)
    killed = len(by_status.get("killed", [])) + len(by_status.get("timeout", []))
    survived = by_status.get("survived", []) + by_status.get("no tests", [])
    total = killed + len(survived)
    return {
        "module": module,
        "mutants": total,
        "killed": killed,
        "score_pct": round(100 * killed / total, 1) if total else None,
        "survivors": survived,
        "other": {
            k: len(v)
            for k, v in by_status.items()
            if k not in ("killed", "timeout", "survived", "no tests")
        },
    }


def main() -> None:
    parser = argparse.ArgumentParser(description="Mutation testing of the load-bearing modules.")
    parser.add_argument("modules", nargs="*", help=f"any of: {', '.join(MODULES)}")
    parser.add_argument("--children", type=int, default=2, help="parallel test processes")
    args = parser.parse_args()
    unknown = sorted(set(args.modules) - set(MODULES))
    if unknown:
        parser.error(f"unknown module {unknown[0]}; choose from: {', '.join(MODULES)}")
    report = [run(m, args.children) for m in (args.modules or list(MODULES))]
    out = ROOT / "build" / "mutation" / "summary.json"
    out.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    for r in report:
        print(f"{r['module']}: {r['killed']}/{r['mutants']} killed ({r['score_pct']}%)")
        for name in r["survivors"]:
            print(f"  survived: {name}")
    print(f"summary: {out.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
