"""The tokenizer shared by the lexical index and the lexical ranking."""

from kenning_encounter.infusion.text import tokenize

__all__ = ["tokenize"]
