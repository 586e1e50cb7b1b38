"""The lexical gate in front of read_cypher, shared by every backend.

It looks at the query's keywords with string literals, comments and quoted
identifiers removed, so a keyword hidden in a comment cannot slip past and a
word inside a string value cannot cause a false refusal. The gate is one layer
only: each backend also runs the query in a read-only transaction (and Neo4j
classifies it with EXPLAIN), so nothing relies on this check alone.
"""

from __future__ import annotations

import re
from typing import Final

from kenning_encounter.errors import ReadOnlyViolation

# Clauses that write, administer or touch files, in either engine's dialect.
FORBIDDEN_KEYWORDS: Final = frozenset(
    {
        "CREATE", "MERGE", "SET", "DELETE", "DETACH", "REMOVE", "DROP", "ALTER",
        "COPY", "EXPORT", "IMPORT", "LOAD", "ATTACH", "INSTALL", "USE",
        "BEGIN", "COMMIT", "ROLLBACK", "CHECKPOINT", "FOREACH", "GRANT", "REVOKE",
        "DENY", "START", "STOP", "TERMINATE", "ENABLE", "DISABLE", "RENAME", "FINISH",
    }
)  # fmt: skip

# One pass, leftmost token first, as the engine's lexer reads it: a comment
# opener inside a string (or a quote inside a comment) is just text, so nothing
# the engine runs as code can be hidden from this check as a "comment".
_LITERAL = re.compile(
    r"//[^\n]*"  # line comment
    r"|/\*.*?\*/"  # block comment
    r"|'(?:[^'\\]|\\.)*'"  # single-quoted string
    r'|"(?:[^"\\]|\\.)*"'  # double-quoted string
    r"|`(?:[^`]|``)*`",  # quoted name (a doubled backtick escapes one)
    re.DOTALL,
)
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_PROPERTY = re.compile(r"\.\s*[A-Za-z_][A-Za-z0-9_]*")
_MAP_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\s*:(?!:)")
_CALL = re.compile(r"\bCALL\s+([A-Za-z_][A-Za-z0-9_.]*)", re.IGNORECASE)
MAX_QUERY_CHARS: Final = 20_000


def _blank(match: re.Match[str]) -> str:
    token = match.group(0)
    if token.startswith(("//", "/*")):
        return " "
    return " _q_ " if token.startswith("`") else " _s_ "


def strip_literals(query: str) -> str:
    """The query with comments, string literals and quoted names blanked out."""
    out = _LITERAL.sub(_blank, query)
    if "/*" in out or any(c in out for c in "'\"`"):
        raise ReadOnlyViolation("the query has an unterminated comment, string or quoted name")
    return out


def check_read_only(query: str, allowed_procedures: frozenset[str]) -> str:
    """Refuse anything not plainly a read; return the query with literals blanked."""
    if not query.strip():
        raise ReadOnlyViolation("the query is empty")
    if len(query) > MAX_QUERY_CHARS:
        raise ReadOnlyViolation(f"the query is longer than {MAX_QUERY_CHARS} characters")
    bare = strip_literals(query)
    if ";" in bare.rstrip().rstrip(";"):
        raise ReadOnlyViolation("only one statement is allowed (found ';')")
    # Property names and map keys may be any word (n.start, {set: 1}); drop them first.
    keywords_only = _MAP_KEY.sub(" ", _PROPERTY.sub(" ", bare))
    words = {w.upper() for w in _WORD.findall(keywords_only)}
    bad = sorted(words & FORBIDDEN_KEYWORDS)
    if bad:
        raise ReadOnlyViolation(f"{', '.join(bad)} is not allowed")
    for match in _CALL.finditer(bare):
        name = match.group(1).lower()
        if name not in allowed_procedures:
            raise ReadOnlyViolation(
                f"procedure {match.group(1)!r} is not on the read-only allow-list "
                f"({', '.join(sorted(allowed_procedures)) or 'none'})"
            )
    if re.search(r"\bCALL\s*\{", bare, re.IGNORECASE):
        raise ReadOnlyViolation("CALL subqueries are not allowed")
    return bare
