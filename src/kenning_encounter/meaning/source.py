"""What a meaning is made from, and the fingerprint that tells when it is out of date."""

from __future__ import annotations

import hashlib

from kenning_encounter.store.records import NodeRecord

# Unit separator: cannot occur in text a person types, so "a|b" + "c" and
# "a" + "b|c" never hash alike.
_SEP = "\x1f"


def source_text(node: NodeRecord) -> str:
    """The node text a meaning compresses: its type, name and description."""
    return _SEP.join((node.type, node.name, node.description))


def source_hash(node: NodeRecord) -> str:
    """A short stable fingerprint of ``source_text``; a changed text gets a new meaning."""
    digest = hashlib.blake2b(source_text(node).encode("utf-8"), digest_size=12)
    return digest.hexdigest()
