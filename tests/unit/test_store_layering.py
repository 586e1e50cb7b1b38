"""The store is the bottom layer: nothing under store/ imports a layer built on it.

Analytics (and the memory, infusion and server layers) read the database through the
store's port; an import the other way would make the store load what it serves
(igraph, scipy) and let a change up there break every backend. Imports guarded by
TYPE_CHECKING, or made inside a function, count too: they are still a dependency.
"""

from __future__ import annotations

import ast
from pathlib import Path

import kenning_encounter.store as store_package

STORE = Path(store_package.__file__).parent
PACKAGE = "kenning_encounter"
ABOVE = ("analytics", "memory", "infusion", "meaning", "server", "cli")


def _dotted(path: Path) -> str:
    """``.../kenning_encounter/store/neo4j/gds.py`` -> ``kenning_encounter.store.neo4j.gds``."""
    return ".".join([PACKAGE, *path.relative_to(STORE.parent).with_suffix("").parts])


def imports_of(source: str, module: str) -> list[tuple[int, str]]:
    """(line, dotted name) of every import in ``source``, the text of ``module``."""
    package = module.split(".")[:-1]  # a module's relative imports start at its package
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - (node.level - 1)]
                target = ".".join([*base, node.module] if node.module else base)
            else:
                target = node.module or ""
            # ``from kenning_encounter import analytics`` names the layer in the alias.
            found += [(node.lineno, f"{target}.{alias.name}") for alias in node.names]
    return found


def _upward(name: str) -> bool:
    parts = name.split(".")
    return len(parts) > 1 and parts[0] == PACKAGE and parts[1] in ABOVE


def test_no_store_module_imports_a_layer_above_it() -> None:
    modules = sorted(STORE.rglob("*.py"))
    assert len(modules) > 10, f"expected the store's modules under {STORE}"
    offending = [
        f"{_dotted(m)}:{line} imports {name}"
        for m in modules
        for line, name in imports_of(m.read_text(), _dotted(m))
        if _upward(name)
    ]
    assert offending == []


def test_the_walk_sees_every_way_an_import_is_written() -> None:
    """The checker itself: plain, from, relative, aliased and nested imports all count."""
    source = "\n".join(
        [
            "import kenning_encounter.analytics.engine",
            "from kenning_encounter.memory import service",
            "from kenning_encounter import infusion",
            "from ...analytics import gds",
            "from .. import port",
            "from . import queries",
            "if True:",
            "    def f():",
            "        from kenning_encounter.server import app",
        ]
    )
    found = [name for _, name in imports_of(source, "kenning_encounter.store.neo4j.example")]
    assert found == [
        "kenning_encounter.analytics.engine",
        "kenning_encounter.memory.service",
        "kenning_encounter.infusion",
        "kenning_encounter.analytics.gds",
        "kenning_encounter.store.port",
        "kenning_encounter.store.neo4j.queries",
        "kenning_encounter.server.app",
    ]
    assert [n.split(".")[1] for n in found if _upward(n)] == [
        "analytics",
        "memory",
        "infusion",
        "analytics",
        "server",
    ]
