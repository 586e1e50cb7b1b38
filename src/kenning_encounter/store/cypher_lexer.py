"""A Cypher tokenizer that reads comments, strings and names as each engine's lexer does.

The read_cypher gate judges tokens, never substrings, so it must end every
comment and string exactly where the engine does. Where the two engines (or two
versions of one) could disagree, the text is refused instead of guessed at:

- a block comment ends at the first ``*/`` on Neo4j, but LadybugDB's grammar lets
  a ``*`` swallow the character after it (``/* **/`` is still open there); a
  comment whose two readings differ is refused;
- a line comment ends at a line feed on both and at a lone carriage return on
  Neo4j (LadybugDB rejects one); any other line or paragraph separator inside a
  line comment is refused rather than trusted to mean "still a comment";
- Neo4j turns ``\\uXXXX`` into its character before it lexes anything (so an
  escaped quote or line feed can end a string or comment early); a ``\\u`` is
  refused in that dialect.
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass
from typing import Final, Literal

from kenning_encounter.errors import ReadOnlyViolation

TokenKind = Literal["word", "name", "string", "number", "param", "punct"]


@dataclass(frozen=True, slots=True)
class Token:
    kind: TokenKind
    text: str  # a word's text is NFKC-normalized and upper-cased; a name's is its content
    pos: int


@dataclass(frozen=True, slots=True)
class Dialect:
    name: str
    # A lone CR ends a line comment (Neo4j) or is refused (LadybugDB rejects it).
    cr_ends_line_comment: bool
    # \\uXXXX is replaced by its character before lexing (Neo4j's parser does this).
    unicode_escapes_first: bool


LADYBUG: Final = Dialect("ladybug", cr_ends_line_comment=False, unicode_escapes_first=False)
NEO4J: Final = Dialect("neo4j", cr_ends_line_comment=True, unicode_escapes_first=True)

# Characters some lexer somewhere treats as ending a line (str.splitlines' set).
_LINE_BREAKS: Final = frozenset("\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029")
# Longest operators first, so '<>' is one token and not '<' then '>'.
_PUNCT: Final = (
    "<>", "<=", ">=", "=~", "+=", "->", "<-", "..", "::", "!=",
    "(", ")", "[", "]", "{", "}", ",", ".", ":", ";", "|", "+", "-", "*", "/", "%",
    "^", "=", "<", ">", "!", "&", "?",
)  # fmt: skip


def _refuse(reason: str, pos: int) -> ReadOnlyViolation:
    return ReadOnlyViolation(f"{reason} (at character {pos})", layer="gate")


def _block_comment_end(query: str, start: int) -> int:
    """Index just past the comment opened at ``start``; refuse when engines disagree."""
    naive = query.find("*/", start + 2)
    i = start + 2
    strict = -1
    while i < len(query):
        if query[i] == "*":
            if query.startswith("/", i + 1):
                strict = i
                break
            i += 2  # LadybugDB: a star and the character after it are one unit
        else:
            i += 1
    if naive < 0 or strict < 0:
        raise _refuse("an unterminated /* comment", start)
    if naive != strict:
        raise _refuse(
            "a block comment whose end the engines read differently (a '*/' preceded by "
            "more stars); remove the comment",
            start,
        )
    return naive + 2


def _line_comment_end(query: str, start: int, dialect: Dialect) -> int:
    i = start + 2
    while i < len(query):
        ch = query[i]
        if ch == "\n":
            return i
        if ch == "\r":
            if query.startswith("\n", i + 1):
                return i
            if dialect.cr_ends_line_comment:
                return i
            raise _refuse("a line comment ended by a lone carriage return", i)
        if ch in _LINE_BREAKS or ch == "\\":
            raise _refuse(
                f"a line comment holding {unicodedata.name(ch, repr(ch))}; end comments "
                "with a line feed and keep backslashes and separators out of them",
                i,
            )
        i += 1
    return i


def _string_end(query: str, start: int) -> int:
    quote = query[start]
    i = start + 1
    while i < len(query):
        ch = query[i]
        if ch == "\\":
            i += 2  # both engines read a backslash and the next character as one escape
            continue
        if ch == quote:
            return i + 1
        i += 1
    raise _refuse("an unterminated string", start)


def _name_end(query: str, start: int) -> tuple[int, str]:
    i = start + 1
    parts: list[str] = []
    while True:
        close = query.find("`", i)
        if close < 0:
            raise _refuse("an unterminated `quoted name`", start)
        parts.append(query[i:close])
        if query.startswith("`", close + 1):  # a doubled backtick is one backtick
            parts.append("`")
            i = close + 2
            continue
        return close + 1, "".join(parts)


def _is_word_start(ch: str) -> bool:
    return ch == "_" or ch.isidentifier()


def _is_word_part(ch: str) -> bool:
    return ch == "_" or ("a" + ch).isidentifier()


def _number_end(query: str, i: int) -> int:
    n = len(query)
    while i < n and (query[i].isalnum() or query[i] == "_"):
        i += 1  # digits, hex/octal prefixes, exponents and suffixes in one run
    if i < n and query[i] == "." and i + 1 < n and query[i + 1].isdigit():
        i += 1
        while i < n and (query[i].isalnum() or query[i] == "_"):
            i += 1
    if i < n and query[i - 1] in "eE" and query[i] in "+-":
        i += 1
        while i < n and query[i].isdigit():
            i += 1
    return i


def tokenize(query: str, dialect: Dialect) -> list[Token]:
    """The tokens of ``query`` with whitespace and comments dropped; refuses what cannot lex."""
    if dialect.unicode_escapes_first and ("\\u" in query or "\\U" in query):
        raise _refuse(
            "a \\u escape (this engine decodes them before reading the query, so they can "
            "end a string or comment early); write the character itself",
            query.find("\\u") if "\\u" in query else query.find("\\U"),
        )
    tokens: list[Token] = []
    i = 0
    n = len(query)
    while i < n:
        ch = query[i]
        if ch.isspace():
            i += 1
        elif query.startswith("/*", i):
            i = _block_comment_end(query, i)
        elif query.startswith("//", i):
            i = _line_comment_end(query, i, dialect)
        elif ch in "'\"":
            end = _string_end(query, i)
            tokens.append(Token("string", query[i + 1 : end - 1], i))
            i = end
        elif ch == "`":
            end, name = _name_end(query, i)
            tokens.append(Token("name", name, i))
            i = end
        elif ch == "$":
            j = i + 1
            if query.startswith("`", j):
                j, name = _name_end(query, j)
            else:
                while j < n and _is_word_part(query[j]):
                    j += 1
                name = query[i + 1 : j]
            if not name:
                raise _refuse("a '$' with no parameter name", i)
            tokens.append(Token("param", name, i))
            i = j
        elif ch.isdigit() and ch.isascii():
            end = _number_end(query, i)
            tokens.append(Token("number", query[i:end], i))
            i = end
        elif _is_word_start(ch):
            j = i + 1
            while j < n and _is_word_part(query[j]):
                j += 1
            word = unicodedata.normalize("NFKC", query[i:j]).upper()
            tokens.append(Token("word", word, i))
            i = j
        else:
            op = next((p for p in _PUNCT if query.startswith(p, i)), None)
            if op is None:
                raise _refuse(f"the character {unicodedata.name(ch, repr(ch))} is not Cypher", i)
            tokens.append(Token("punct", op, i))
            i += len(op)
    return tokens
