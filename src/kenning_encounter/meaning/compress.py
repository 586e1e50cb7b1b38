"""The offline job: compress one node into a one-sentence meaning."""

from __future__ import annotations

import re

from kenning_encounter.errors import MatcherError
from kenning_encounter.meaning.providers.base import ModelRequest, Provider
from kenning_encounter.store.records import NodeRecord

COMPRESS_SYSTEM = (
    "You index one item of an AI agent's long-term working memory so it can be found "
    "again later. Read the item and write ONE plain sentence of at most 30 words that "
    "says what it is about and what it holds: its subject, and the claim, question, "
    "idea or source it records. Prefer the everyday words a person would use when the "
    "topic comes up again over the item's own coined terms, and keep names of real "
    "things (files, systems, people) exactly. Answer with the sentence only: no "
    "preamble, no quotes, no list."
)

# A description is the agent's own prose and can run long; the head carries the
# meaning, and a bounded prompt keeps a compress call cheap and on time.
MAX_DESCRIPTION_CHARS = 4000
MAX_MEANING_CHARS = 320

_FENCE = re.compile(r"^```[a-zA-Z]*\s*\n?(.*?)\n?```\n?\Z", re.DOTALL)
_SPACE = re.compile(r"\s+")


def compress_request(node: NodeRecord) -> ModelRequest:
    description = node.description[:MAX_DESCRIPTION_CHARS]
    user = f"Type: {node.type}\nName: {node.name}\nDescription: {description or '(none)'}"
    return ModelRequest(
        system=COMPRESS_SYSTEM, user=user, purpose="compress", max_output_tokens=120
    )


def parse_meaning(text: str) -> str:
    """The sentence in a compress reply, tidied; ``malformed_output`` when there is none."""
    body = text.strip()
    fenced = _FENCE.match(body)
    if fenced:
        body = fenced.group(1).strip()
    lines = [line.strip() for line in body.splitlines() if line.strip()]
    sentence = _SPACE.sub(" ", lines[0]).strip().strip("\"'`“”").strip() if lines else ""
    if not sentence:
        raise MatcherError("malformed_output", "the compress reply held no sentence")
    if len(sentence) > MAX_MEANING_CHARS:
        cut = sentence[:MAX_MEANING_CHARS].rsplit(" ", 1)[0]
        sentence = cut.rstrip(",;: ") + "…"
    return sentence


def compress(provider: Provider, node: NodeRecord, *, timeout_s: float | None = None) -> str:
    """One model call: the node's one-sentence meaning. Raises ``MatcherError``."""
    reply = provider.complete(compress_request(node), timeout_s=timeout_s)
    return parse_meaning(reply.text)
