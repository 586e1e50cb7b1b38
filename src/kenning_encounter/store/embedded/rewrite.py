"""Write the embedded store's file again, holding only what is live in it now.

The engine deletes a row by marking it: the bytes of a deleted node, its text
included, stay in the file (overwriting the value first does not help either; the
new value goes to fresh pages). An erasure must leave nothing behind, so after one
the operator's command copies every table, row by row, into a new file made by the
same migrations, and puts it in the old one's place. The engine's own export cannot
do it (it refuses relationship tables with several endpoint pairs).

Run only while no store is open on the directory. The old file is replaced by a
rename, so a crash leaves either the old file or the whole new one; the new file's
write-ahead log is checkpointed before the rename.
"""

from __future__ import annotations

import contextlib
import re
import shutil
from collections.abc import Generator
from pathlib import Path
from typing import Any

import ladybug

from kenning_encounter.errors import StoreError
from kenning_encounter.store.embedded import engine

GRAPH = "graph.lbdb"
_PAGE = 5_000
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_TYPE = re.compile(r"[A-Z0-9_\[\]]+")


def _name(value: object) -> str:
    text = str(value)
    if not _NAME.fullmatch(text):
        raise StoreError(f"internal: unexpected name {text!r} in the store's catalog")
    return text


def _kind(value: object) -> str:
    text = str(value)
    if not _TYPE.fullmatch(text):
        raise StoreError(f"internal: unexpected column type {text!r} in the store's catalog")
    return text


@contextlib.contextmanager
def _connected(path: Path) -> Generator[ladybug.Connection]:
    db = ladybug.Database(str(path))
    conn = ladybug.Connection(db)
    try:
        yield conn
    finally:
        conn.close()
        db.close()


def _rows(conn: ladybug.Connection, statement: str, params: dict[str, Any] | None = None) -> Any:
    try:
        return engine.rows(conn, statement, params)
    except RuntimeError as exc:
        raise StoreError(f"writing the store's file again failed: {exc}") from exc


def _tables(conn: ladybug.Connection) -> tuple[list[str], list[str]]:
    nodes: list[str] = []
    rels: list[str] = []
    for row in _rows(conn, "CALL show_tables() RETURN name, type"):
        (nodes if str(row[1]) == "NODE" else rels).append(_name(row[0]))
    return sorted(nodes), sorted(rels)


def _columns(conn: ladybug.Connection, table: str) -> list[tuple[str, str]]:
    info = _rows(conn, f"CALL table_info('{table}') RETURN name, type")
    return [(_name(r[0]), _kind(r[1])) for r in info]


def _primary_key(conn: ladybug.Connection, table: str) -> str:
    for row in _rows(conn, f"CALL table_info('{table}') RETURN name, `primary key`"):
        if row[1] is True:
            return _name(row[0])
    raise StoreError(f"internal: table {table} has no primary key")


def _copy_nodes(old: ladybug.Connection, new: ladybug.Connection, table: str) -> int:
    cols = _columns(old, table)
    names = [c for c, _ in cols]
    key = _primary_key(old, table)
    back = f"RETURN {', '.join(f'n.{c}' for c in names)} ORDER BY n.{key} LIMIT {_PAGE}"
    first, more = f"MATCH (n:{table}) {back}", f"MATCH (n:{table}) WHERE n.{key} > $after {back}"
    put = ", ".join(f"{c}: CAST(r.{c} AS {t})" for c, t in cols)
    write = f"UNWIND $rows AS r CREATE (:{table} {{{put}}})"
    copied = 0
    after: Any = None
    at = names.index(key)
    while True:
        page = _rows(old, first) if after is None else _rows(old, more, {"after": after})
        if not page:
            return copied
        _rows(new, write, {"rows": [dict(zip(names, r, strict=True)) for r in page]})
        copied += len(page)
        after = page[-1][at]


def _copy_rels(old: ladybug.Connection, new: ladybug.Connection, table: str) -> int:
    cols = _columns(old, table)
    names = [c for c, _ in cols]
    copied = 0
    for pair in _rows(old, f"CALL show_connection('{table}') RETURN *"):
        src, dst, src_key, dst_key = (_name(v) for v in pair[:4])
        props = "".join(f", r.{c}" for c in names)
        read = f"MATCH (a:{src})-[r:{table}]->(b:{dst}) RETURN a.{src_key}, b.{dst_key}{props}"
        put = ", ".join(f"{c}: CAST(x.{c} AS {t})" for c, t in cols)
        write = (
            f"UNWIND $rows AS x MATCH (a:{src} {{{src_key}: x.s}}), (b:{dst} {{{dst_key}: x.t}}) "
            f"CREATE (a)-[:{table} {{{put}}}]->(b)"
        )
        found = _rows(old, read)
        for i in range(0, len(found), _PAGE):
            batch = [
                {"s": r[0], "t": r[1], **dict(zip(names, r[2:], strict=True))}
                for r in found[i : i + _PAGE]
            ]
            _rows(new, write, {"rows": batch})
        copied += len(found)
    return copied


def rewrite(data_dir: Path, fresh: Path) -> int:
    """Copy the store in ``data_dir`` into the empty store made at ``fresh`` (its schema
    already migrated), then put it in place. How many rows and relations were copied."""
    old_path, new_path = data_dir / GRAPH, fresh / GRAPH
    copied = 0
    with _connected(old_path) as old, _connected(new_path) as new:
        nodes, rels = _tables(old)
        if (nodes, rels) != _tables(new):
            raise StoreError("internal: the fresh store's tables differ from the old store's")
        _rows(new, "BEGIN TRANSACTION")
        try:
            for table in nodes:
                _rows(new, f"MATCH (n:{table}) DELETE n")  # a fresh store's own Meta rows
                copied += _copy_nodes(old, new, table)
            for table in rels:
                copied += _copy_rels(old, new, table)
            _rows(new, "COMMIT")
        except BaseException:
            with contextlib.suppress(RuntimeError):
                _rows(new, "ROLLBACK")
            raise
        _rows(new, "CHECKPOINT")
    for leftover in fresh.glob(GRAPH + ".*"):
        leftover.unlink()
    new_path.replace(old_path)
    for stale in data_dir.glob(GRAPH + ".wal*"):
        stale.unlink()
    shutil.rmtree(fresh, ignore_errors=True)
    return copied
