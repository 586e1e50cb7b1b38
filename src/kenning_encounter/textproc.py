"""The one tokenizer the lexical path uses, for queries and node text alike.

Lowercased word tokens, English function words dropped, and a light suffix
stemmer so that "researched", "researching" and "research" meet. The stemmer
is deliberately conservative: it only folds inflections (plural, past, gerund,
a final silent e), never derivations, because over-folding merges unrelated
words and a lexical fallback has nothing else to tell them apart.

Whatever indexes node text for the lexical path must tokenize with these same
functions, or query terms and document terms will not meet.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Iterator
from typing import Final

# Bump whenever ``tokenize`` can give different tokens for the same text: every
# index built from its output (embedded and Neo4j) is rebuilt when it changes.
TOKENIZER_VERSION: Final = 3  # 3: text read in NFKC first ("café" composed or not, "ﬁle")

# Words that carry grammar, not subject: dropped from queries and documents.
_STOPWORD_LIST: Final = """
    a about above after again against all am an and any are as at be because been
    before being below between both but by can could did do does doing done down
    during each few for from further had has have having he her here hers herself him
    himself his how i if in into is it its itself just me more most my myself no nor
    not now of off on once only or other our ours ourselves out over own same she
    should so some such than that the their theirs them themselves then there these
    they this those through to too under until up very was we were what when where
    which while who whom whose why will with would you your yours yourself yourselves
    also ever get got getting gets let lets may might must shall us oh yeah yes hey hi
    wow really ca wo sha
"""
STOPWORDS: Final = frozenset(_STOPWORD_LIST.split())

# Letters and digits (any script) plus inner apostrophes, so "don't" stays one token.
_TOKEN = re.compile(r"[^\W_]+(?:'[^\W_]+)*")
_CLITICS: Final = frozenset(("s", "ll", "re", "ve", "d", "m"))
_VOWEL = re.compile(r"[aeiouy]")
# Final consonant pairs that a dropped "-ing"/"-ed" doubled: "running" -> "run".
_DOUBLED = frozenset("bdfgkmnprtvz")


def _has_vowel(stem: str) -> bool:
    return _VOWEL.search(stem) is not None


def _undouble(stem: str) -> str:
    if len(stem) >= 3 and stem[-1] == stem[-2] and stem[-1] in _DOUBLED:
        return stem[:-1]
    return stem


@functools.lru_cache(maxsize=1 << 16)
def stem(word: str) -> str:
    """Fold inflected forms of a lowercase word onto one key (pure, so remembered)."""
    if len(word) <= 3 or not word.isalpha():
        return word
    if word.endswith("ies") and len(word) > 4:
        word = word[:-3] + "y"
    elif word.endswith("sses"):
        word = word[:-2]
    elif word.endswith("s") and not word.endswith(("ss", "us", "is")):
        word = word[:-1]
    if word.endswith("ied") and len(word) > 4:
        word = word[:-3] + "y"
    elif word.endswith("eed"):
        pass
    elif word.endswith("ed") and len(word) > 4 and _has_vowel(word[:-2]):
        word = _undouble(word[:-2])
    elif word.endswith("ing") and len(word) > 5 and _has_vowel(word[:-3]):
        word = _undouble(word[:-3])
    if word.endswith("y") and len(word) > 3 and word[-2] not in "aeiou":
        word = word[:-1] + "i"
    if word.endswith("e") and len(word) > 3 and not word.endswith("ee"):
        word = word[:-1]
    return word


def normalized(text: str) -> str:
    """``text`` in Unicode's compatibility composed form (NFKC), the form words are read
    in: "café" typed as e + U+0301 (a macOS file name, say) is the word "café", a ligature
    "ﬁ" is "fi", a full-width "ｃａｆé" is "café". A text in that form already is returned
    as it is (the quick check costs next to nothing)."""
    if text.isascii() or unicodedata.is_normalized("NFKC", text):
        return text
    return unicodedata.normalize("NFKC", text)


def surface_words(text: str) -> Iterator[tuple[str, str]]:
    """(as written, normalized) word pairs; contractions and possessives cut to their head.
    Read in NFKC (``normalized``): a caller that finds a surface in its own text passes
    that text normalized."""
    for match in _TOKEN.finditer(normalized(text).replace("’", "'")):
        surface = match.group()
        token = surface.lower()
        head, _, tail = token.partition("'")
        if not tail:
            yield surface, token
        elif tail == "t" and head.endswith("n"):
            yield surface, head[:-1]  # "didn't" -> "did"
        elif tail in _CLITICS:
            yield surface[: len(head)], head
        else:
            yield surface, head + tail.replace("'", "")


def words(text: str) -> Iterator[str]:
    """Normalized (lowercase) word tokens, nothing dropped."""
    for _, token in surface_words(text):
        yield token


# "Caroline: ..." or "Decision: ...": a short capitalized label before a colon.
_LABEL = re.compile(r"^\s*([A-Z][\w.'’-]*(?: [A-Z][\w.'’-]*){0,2}):\s+")


def split_label(text: str) -> tuple[str | None, str]:
    """Split a leading attribution label ("Speaker: ...") from the text it heads."""
    match = _LABEL.match(text)
    if match is None:
        return None, text
    return match.group(1), text[match.end() :]


def tokenize(text: str) -> list[str]:
    """Stemmed content tokens of a text, in order, stopwords removed."""
    return [stem(w) for w in words(text) if w not in STOPWORDS]


# Derivational endings as ``stem`` leaves them ("-ity" as "iti", "-ly" as "li"): a
# derived word and the word it comes from ("mentorship", "mentor"; "artist", "art")
# are related keys, never one key (``related_keys``).
_DERIVATIONS: Final = (
    "ation",
    "ion",
    "ship",
    "ment",
    "ness",
    "iti",
    "ist",
    "er",
    "or",
    "al",
    "iv",
    "li",
)


@functools.lru_cache(maxsize=1 << 14)
def related_keys(key: str) -> tuple[str, ...]:
    """Keys of the words a stemmed key derives from by one common ending:
    "mentorship" -> "mentor", "collaboration" -> "collaborat", "recentli" -> "recent".

    The tokenizer never folds these (over-folding merges unrelated words); a query may
    still reach them as weaker evidence. Some returned keys occur in no text at all."""
    if len(key) < 5 or not key.isalpha():
        return ()
    found: dict[str, None] = {}
    for ending in _DERIVATIONS:
        # A two-letter ending leaves four letters at least: "water" is not "wat" + "-er".
        if key.endswith(ending) and len(key) - len(ending) >= (4 if len(ending) == 2 else 3):
            base = _undouble(key[: -len(ending)])  # "runner" -> "run"
            found[stem(base)] = None
            found[stem(base + "e")] = None
    found.pop(key, None)
    return tuple(k for k in found if len(k) >= 3 and k not in STOPWORDS)


MONTH_NAMES: Final = (
    "january",
    "february",
    "march",
    "april",
    "may",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
)
