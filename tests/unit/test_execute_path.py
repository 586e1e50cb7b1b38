"""Every statement a backend sends goes through its one execute path.

Each backend has one function that hands a statement to its engine
(``store/embedded/engine.py::execute``, ``store/neo4j/engine.py::execute``); the
tracer, and with it the query log and the slow-query log, sits there. A raw
``.execute(`` / ``.run(`` / ``.execute_query(`` anywhere else under store/ would
send a statement the log never sees, so this walk fails on one.
"""

from __future__ import annotations

import ast
from pathlib import Path

import kenning_encounter.store as store_package

STORE = Path(store_package.__file__).parent
RAW_CALLS = frozenset({"execute", "run", "execute_query"})
# (file under store/, enclosing function): the one execute method of each backend, and
# the embedded engine's native run, which only its traced ``rows`` calls.
EXECUTE_PATHS = frozenset(
    {
        ("embedded/engine.py", "execute"),
        ("embedded/engine.py", "_run"),
        ("neo4j/engine.py", "execute"),
    }
)
# ``engine.execute(...)`` is the execute path itself, reached through its module.
PATH_MODULES = frozenset({"engine"})
# Not statements: the sandbox is a process, whose worker sends its statements through
# ``cypher.run_read_cypher`` and so through the execute path.
NOT_STATEMENTS = frozenset({("embedded/backend.py", "read_cypher", "self._sandbox.run")})


def raw_calls(source: str, where: str) -> list[tuple[int, str, str]]:
    """(line, enclosing function, receiver.method) of each raw engine call in ``source``."""
    found: list[tuple[int, str, str]] = []

    def visit(node: ast.AST, function: str) -> None:
        for child in ast.iter_child_nodes(node):
            inner = function
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                inner = child.name
            if (
                isinstance(child, ast.Call)
                and isinstance(child.func, ast.Attribute)
                and child.func.attr in RAW_CALLS
            ):
                receiver = child.func.value
                through_path = isinstance(receiver, ast.Name) and receiver.id in PATH_MODULES
                call = f"{ast.unparse(receiver)}.{child.func.attr}"
                allowed = (where, function) in EXECUTE_PATHS or (where, function, call) in (
                    NOT_STATEMENTS
                )
                if not through_path and not allowed:
                    found.append((child.lineno, function, call))
            visit(child, inner)

    visit(ast.parse(source), "<module>")
    return found


def test_no_statement_bypasses_the_execute_path() -> None:
    modules = sorted(STORE.rglob("*.py"))
    assert len(modules) > 10, f"expected the store's modules under {STORE}"
    offending = [
        f"store/{where}:{line} in {function}() calls {call}(...)"
        for m in modules
        for where in [m.relative_to(STORE).as_posix()]
        for line, function, call in raw_calls(m.read_text(), where)
    ]
    assert offending == []


def test_each_backend_has_its_execute_path() -> None:
    for where, function in EXECUTE_PATHS:
        tree = ast.parse((STORE / where).read_text())
        defined = {n.name for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)}
        assert function in defined, f"store/{where} lost {function}()"


def test_the_walk_sees_raw_calls_wherever_they_hide() -> None:
    """The checker itself: a call in a method, a lambda, a nested function all count;
    the execute path and calls through its module do not."""
    source = "\n".join(
        [
            "class Store:",
            "    def migrate(self, conn):",
            "        conn.execute('CHECKPOINT')",
            "    def prepare(self, s):",
            "        s.execute_write(lambda tx: tx.run('RETURN 1'))",
            "        engine.execute(s, 'RETURN 2', None)",
            "def gds(driver):",
            "    def inner():",
            "        return driver.execute_query('RETURN 3')",
            "    return inner",
            "def execute(conn, statement):",
            "    return conn.execute(statement)",
        ]
    )
    found = raw_calls(source, "embedded/engine.py")
    assert found == [
        (3, "migrate", "conn.execute"),
        (5, "prepare", "tx.run"),
        (9, "inner", "driver.execute_query"),
    ]
    assert len(raw_calls(source, "embedded/other.py")) == 4  # there execute() is no path
