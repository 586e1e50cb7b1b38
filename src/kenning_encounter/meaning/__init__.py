"""Meaning sidecar and matcher (DESIGN §7).

Offline, a model compresses each node into a one-sentence meaning kept in the
sidecar (``SidecarStore`` beside an embedded memory; ``StoredMeanings`` in a store
several servers share), kept current by ``MeaningMaintainer``. Per prompt,
``Matcher.select`` has the model read the meanings and the session's recent
turns and pick the nodes that bear on the moment; on any failure it returns a
fallback result with the reason, and the caller takes the lexical path.
"""

from __future__ import annotations

from kenning_encounter.meaning.compress import compress
from kenning_encounter.meaning.diagnostics import MeaningDiagnostic, describe_match, infuse_meaning
from kenning_encounter.meaning.maintainer import MeaningMaintainer, ReconcileReport
from kenning_encounter.meaning.matcher import (
    Matcher,
    MatcherOptions,
    MatchResult,
    MatchTimings,
    WindowInfo,
)
from kenning_encounter.meaning.providers import (
    ModelReply,
    ModelRequest,
    Provider,
    ProviderKind,
    make_provider,
)
from kenning_encounter.meaning.rebuild import RebuildReport, rebuild_meanings, run_sidecar_rebuild
from kenning_encounter.meaning.sidecar import MeaningEntry, SidecarCorrupt, SidecarStore
from kenning_encounter.meaning.source import source_hash, source_text
from kenning_encounter.meaning.stored import MeaningStore, StoredMeanings
from kenning_encounter.meaning.window import CandidateSource, WindowQuotas

__all__ = [
    "CandidateSource",
    "MatchResult",
    "MatchTimings",
    "Matcher",
    "MatcherOptions",
    "MeaningDiagnostic",
    "MeaningEntry",
    "MeaningMaintainer",
    "MeaningStore",
    "ModelReply",
    "ModelRequest",
    "Provider",
    "ProviderKind",
    "RebuildReport",
    "ReconcileReport",
    "SidecarCorrupt",
    "SidecarStore",
    "StoredMeanings",
    "WindowInfo",
    "WindowQuotas",
    "compress",
    "describe_match",
    "infuse_meaning",
    "make_provider",
    "rebuild_meanings",
    "run_sidecar_rebuild",
    "source_hash",
    "source_text",
]
